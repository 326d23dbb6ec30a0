package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/llamatray/llamatray/router/client"
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
			return nil, "", fmt.Errorf("is Llamatray running at %s? %w", f.addr, err)
		}
		return nil, "", nil
	}
	return c, " (in the running Llamatray at " + c.Base + ")", nil
}
