package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/llamatray/llamatray/router/config"
)

// runImport is `llamatray import llama-swap FILE`: llama-swap's config.yaml taken into the
// configuration file (config.Config.ImportLlamaSwap), written as every offline change is; what it
// could not carry over is printed with why. Nothing is written when the file does not read, nor
// while an instance runs (its next save would drop the import).
func runImport(args []string, env Env) error {
	f := newClientFlags("import", env, false)
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 2 || pos[0] != "llama-swap" {
		return usageError{errors.New("usage: llamatray import llama-swap FILE [--config FILE]")}
	}
	data, err := os.ReadFile(pos[1])
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := f.running(ctx)
	if err != nil {
		return fmt.Errorf("import: nothing was changed: %w", err)
	}
	if c != nil {
		return fmt.Errorf("import: Llamatray is running at %s; quit it first, then import (nothing was changed)", c.Base)
	}
	var skipped []string
	path, err := editConfigFile(f, func(cfg *config.Config) error {
		out, s, err := cfg.ImportLlamaSwap(pos[1], data)
		*cfg, skipped = out, s
		return err
	})
	if err != nil {
		return fmt.Errorf("import: nothing was changed: %w", err)
	}
	fmt.Fprintf(env.Stdout, "llama-swap's models imported into %s (read when Llamatray starts)\n", path)
	if len(skipped) > 0 {
		fmt.Fprintln(env.Stdout, "not carried over:")
		for _, s := range skipped {
			fmt.Fprintf(env.Stdout, "  %s\n", s)
		}
	}
	return nil
}
