package service

import (
	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/wire"
)

// The service holds the head's links to its workers (worker.Links, the engine's engine.Workers) and
// this machine's lending (worker.Lender): it starts them, keeps them in step with the
// configuration (Start, apply) and stops them; what they are is router/worker's.

// Workers is every configured worker: address, state, devices and memory, the model using it.
func (s *Service) Workers() []wire.WorkerStatus { return s.workers.Status(s.eng.Models()) }

// Lending says whether and where this machine is lent to other Llamatrays.
func (s *Service) Lending() wire.Lending { return s.lend.Status(s.config()) }

// SetLending turns lending on or off: saved in the configuration (lend) and applied.
func (s *Service) SetLending(on bool) error {
	return s.Edit(func(c *config.Config) error {
		c.Lend = on
		if on && c.LendListen == "" {
			c.LendListen = config.DefaultLendListen
		}
		return nil
	})
}

// LendConfigLines are the lines a head adds to its configuration to use this machine
// (worker.Lender.ConfigLines): only the app shows them; no API serves the token.
func (s *Service) LendConfigLines() (string, error) { return s.lend.ConfigLines(s.config()) }

// NewLendToken replaces the pairing token: heads given the old one are refused from now on.
func (s *Service) NewLendToken() error { return s.lend.ReplaceToken(s.config()) }
