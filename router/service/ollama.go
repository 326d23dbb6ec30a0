package service

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/llamatray/llamatray/router/front"
)

// OllamaAddr is Ollama's default address. With ollama_port on, Llamatray answers there too, so an
// app set up for Ollama works without a change.
const OllamaAddr = "127.0.0.1:11434"

// ollamaPort is the second listener's state; Service.mu guards it.
type ollamaPort struct {
	srv  *front.Server // nil when off or when binding failed
	addr string        // where it listens
	err  error         // why it does not listen although ollama_port is on
}

// syncOllamaPort starts or stops the listener on Ollama's port as ollama_port says. A port that is
// taken (by Ollama itself, usually) is reported, never fatal: the main listener serves on.
func (s *Service) syncOllamaPort() {
	want := s.config().OllamaPort
	s.mu.Lock()
	cur := s.ollama
	if !want {
		s.ollama = ollamaPort{}
	}
	s.mu.Unlock()
	if !want {
		if cur.srv != nil {
			cur.srv.Close()
			s.log.Info("stopped listening on Ollama's port", "addr", cur.addr)
		}
		return
	}
	if cur.srv != nil {
		return
	}
	addr := cmp.Or(s.o.OllamaAddr, OllamaAddr)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		err = fmt.Errorf("cannot also listen on Ollama's port %s (is Ollama itself running? quit it, or turn ollama_port off): %w", addr, err)
		s.log.Warn("ollama_port", "err", err)
		s.mu.Lock()
		s.ollama = ollamaPort{addr: addr, err: err}
		s.mu.Unlock()
		return
	}
	srv := s.newHTTPServer()
	s.mu.Lock()
	s.ollama = ollamaPort{srv: srv, addr: ln.Addr().String()}
	s.mu.Unlock()
	s.log.Info("also serving on Ollama's port", "addr", ln.Addr().String())
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("the listener on Ollama's port stopped", "err", err)
		}
	}()
}

// OllamaListen says where Llamatray also answers on Ollama's port ("" when off) and why it does
// not when ollama_port is on but the port was taken.
func (s *Service) OllamaListen() (addr string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ollama.srv == nil {
		return "", s.ollama.err
	}
	return s.ollama.addr, nil
}
