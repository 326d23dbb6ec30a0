package service

import (
	"io"
	"log/slog"
	"testing"
	"time"
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
