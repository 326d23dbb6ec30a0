package harness

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/adrg/xdg"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/mem"
	"github.com/llamatray/llamatray/router/service"
)

// IsolateXDG points the XDG base directories at folders under dir and reloads them, so learned
// footprints and logs of a harness run never touch the user's own state.
func IsolateXDG(dir string) error {
	for _, v := range []string{"XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"} {
		p := filepath.Join(dir, "xdg", v)
		if err := os.MkdirAll(p, 0o700); err != nil {
			return fmt.Errorf("isolating %s: %w", v, err)
		}
		if err := os.Setenv(v, p); err != nil {
			return fmt.Errorf("isolating %s: %w", v, err)
		}
	}
	xdg.Reload()
	return nil
}

// Config is the configuration the harnesses start Llamatray with: a free loopback port, only
// modelDir, llama-server bin, context 2048, one thread per child (`-t 1`: the fastest on a small
// shared machine), no idle sleep and no idle unload.
func Config(modelDir, bin string) (config.Config, error) {
	port, err := FreePort()
	if err != nil {
		return config.Config{}, err
	}
	cfg := config.Default()
	cfg.Listen = fmt.Sprintf("127.0.0.1:%d", port)
	cfg.ModelDirs = []string{modelDir}
	cfg.ScanDefaultDirs = false
	cfg.LlamaServer = bin
	cfg.IdleSleep = 0
	cfg.IdleUnload = 0
	cfg.Defaults.CtxSize = 2048
	cfg.Defaults.Args = []string{"-t", "1"}
	return cfg, nil
}

// Service is an in-process Llamatray.
type Service struct {
	*service.Service
	Base string // http://ADDR
}

// StartService builds and starts Llamatray from cfg. probe may be nil (the machine).
func StartService(ctx context.Context, cfg config.Config, log *slog.Logger, probe mem.Probe) (*Service, error) {
	svc, err := service.New(cfg, service.Options{Version: "harness", Logger: log, Memory: probe})
	if err != nil {
		return nil, fmt.Errorf("llamatray: %w", err)
	}
	if err := svc.Start(ctx); err != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = svc.Stop(sctx)
		return nil, fmt.Errorf("llamatray start: %w", err)
	}
	if ls := svc.LlamaServer(); ls.Path == "" {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = svc.Stop(sctx)
		return nil, fmt.Errorf("llamatray found no llama-server: %s", ls.Err)
	}
	return &Service{Service: svc, Base: "http://" + svc.ListenAddr()}, nil
}

// ChatURL is the router's /v1/chat/completions.
func (s *Service) ChatURL() string { return s.Base + "/v1/chat/completions" }

// ModelID is the catalog ID of the model file at path.
func (s *Service) ModelID(path string) (string, error) {
	for _, m := range s.Engine().Models() {
		if m.Path == path {
			return m.ID, nil
		}
	}
	return "", fmt.Errorf("no model for %s in the catalog", path)
}

// Status is one model's snapshot, or the zero value when it is unknown.
func (s *Service) Status(id string) engine.ModelStatus {
	st, _ := s.Engine().Model(id)
	return st
}
