package cli

import (
	"strings"
	"testing"
)

// Every command that takes a model name says an unknown one the same way, with the same "did you
// mean", with the app running or not; every command that needs the running instance says the same
// when none answers, with the same hint.
func TestHintsAlikeAcrossCommands(t *testing.T) {
	path, cfg := modelsConfig(t)
	const unknown = `model "smal" not found; did you mean small?`
	if code, o := runCLIEnv(t, "rm", "smal", "--config", path); code != 1 || !strings.Contains(o.stderr.String(), unknown) {
		t.Errorf("rm smal, no instance: %d %q; want %q", code, o.stderr.String(), unknown)
	}
	down := "no Llamatray answers at http://" + cfg.Listen + ": start the app, or `llamatray serve`"
	for _, args := range [][]string{{"load", "small"}, {"unload", "small"}, {"pin", "small"}, {"unpin", "small"}, {"ps"}, {"rm", "small"}} {
		if code, o := runCLIEnv(t, append(args, "--addr", cfg.Listen)...); code != 1 || !strings.Contains(o.stderr.String(), down) {
			t.Errorf("%s with no instance: %d %q; want %q", strings.Join(args, " "), code, o.stderr.String(), down)
		}
	}
	startService(t, cfg, path)
	for _, cmd := range []string{"load", "unload", "pin", "unpin", "rm"} {
		if code, o := runCLIEnv(t, cmd, "smal", "--addr", cfg.Listen); code != 1 || !strings.Contains(o.stderr.String(), unknown) {
			t.Errorf("%s smal through the instance: %d %q; want %q", cmd, code, o.stderr.String(), unknown)
		}
	}
	for _, args := range [][]string{{"load"}, {"unload"}, {"pin"}, {"rm"}, {"ps", "x"}} {
		if code, o := runCLIEnv(t, args...); code != 2 || !strings.HasPrefix(o.stderr.String(), "llamatray: usage: llamatray "+args[0]+" ") {
			t.Errorf("%s: %d %q; want the one usage line", strings.Join(args, " "), code, o.stderr.String())
		}
	}
}
