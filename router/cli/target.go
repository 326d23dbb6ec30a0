package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/llamatray/llamatray/router/client"
	"github.com/llamatray/llamatray/router/engine"
)

// pingWait bounds the check for a running instance on this machine.
const pingWait = time.Second

// running is the one choice every command that changes this machine's models or llama-server
// builds makes (pull, rm, llama-server): the running instance, when one answers — so the tray,
// the windows and the engine see the change at once — else nil, and the command changes the
// folders itself. via says which, for messages. An --addr given that does not answer is an
// error: the user named an instance, so nothing is changed behind its back.
func (f *clientFlags) running(ctx context.Context) (c *client.Client, via string, err error) {
	c = f.client()
	pctx, cancel := context.WithTimeout(ctx, pingWait)
	defer cancel()
	if err := c.Ping(pctx); err != nil {
		if f.addr != "" {
			return nil, "", notRunning(c, err)
		}
		return nil, "", nil
	}
	return c, " (in the running Llamatray at " + c.Base + ")", nil
}

// notRunning is how every command says that no instance answered at c, with the one hint; any other
// error is returned as it is.
func notRunning(c *client.Client, err error) error {
	var op *net.OpError
	if !errors.As(err, &op) {
		return err
	}
	return fmt.Errorf("no Llamatray answers at %s: start the app, or `llamatray serve` (%w)", c.Base, err)
}

// unknownModel is how every command says no model has this name, with the same "did you mean"
// suggestions as the running instance gives (engine.UnknownModelError).
func unknownModel(name string, cat interface{ Suggest(string, int) []string }) error {
	return &engine.UnknownModelError{Name: name, Suggestions: cat.Suggest(name, 3)}
}
