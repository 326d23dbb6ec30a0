package service

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/config"
)

// A timeout set in Options wins over its environment variable, which wins over the default; a
// variable that is not a positive duration is ignored.
func TestTimeoutOf(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	const env, def = "LLAMATRAY_TEST_TIMEOUT", 2 * time.Minute
	for _, c := range []struct {
		set  time.Duration
		env  string
		want time.Duration
	}{
		{0, "", def},
		{0, "750ms", 750 * time.Millisecond},
		{3 * time.Second, "750ms", 3 * time.Second},
		{0, "soon", def},
		{0, "-1s", def},
		{0, "0", def},
	} {
		t.Setenv(env, c.env)
		if got := timeoutOf(c.set, env, def, log); got != c.want {
			t.Errorf("set %s, $%s=%q: %s, want %s", c.set, env, c.env, got, c.want)
		}
	}
}

// fair_wait = "0" is off, as the configuration documents it: the engine is told never to drain a
// busy model for a queued load (a negative FairWait), not given a default or a long wait.
func TestFairWaitZeroIsOff(t *testing.T) {
	cfg := config.Default()
	cfg.FairWait = 0
	if got := limits(cfg, LlamaServer{}).FairWait; got >= 0 {
		t.Fatalf("fair_wait \"0\" gives the engine %s, want off (negative)", got)
	}
	cfg.FairWait = config.Duration(45 * time.Second)
	if got := limits(cfg, LlamaServer{}).FairWait; got != 45*time.Second {
		t.Fatalf("fair_wait \"45s\" gives the engine %s", got)
	}
}
