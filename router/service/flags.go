package service

import (
	"context"
	"errors"
	"slices"

	"github.com/llamatray/llamatray/router/locate"
)

// LlamaServerFlags lists the flags the llama-server in use knows (from its --help, read once per
// binary): what per-model extra arguments are checked against.
func (s *Service) LlamaServerFlags(ctx context.Context) ([]string, error) {
	path := s.LlamaServer().Path
	if path == "" {
		return nil, errors.New("no llama-server to ask for its flags")
	}
	return s.flagsOf(ctx, path)
}

// flagsOf lists the flags of the llama-server at path, read once from its --help.
func (s *Service) flagsOf(ctx context.Context, path string) ([]string, error) {
	if got, ok := s.flags.Load(path); ok {
		return got.([]string), nil
	}
	flags, err := locate.Flags(ctx, path)
	if err != nil {
		return nil, err
	}
	s.flags.Store(path, flags)
	return flags, nil
}

// takesFitTarget reports whether the llama-server at path lists --fit-target (llama.cpp's --fit,
// with a margin per device), so that the engine may pass each child its device share.
func (s *Service) takesFitTarget(ctx context.Context, path string) bool {
	if path == "" {
		return false
	}
	flags, err := s.flagsOf(ctx, path)
	if err != nil {
		s.log.Warn("reading llama-server's flags failed: children get no --fit-target", "path", path, "err", err)
		return false
	}
	return slices.Contains(flags, "--fit-target")
}
