package cli

import (
	"io"
	"testing"

	"github.com/llamatray/llamatray/router/config"
)

// --no-models-autoload turns models_autoload off; without it the file's value stays.
func TestNoModelsAutoloadFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{{nil, true}, {[]string{"--no-models-autoload"}, false}} {
		f := newServeFlags("serve", io.Discard)
		if err := f.parse(c.args); err != nil {
			t.Fatal(err)
		}
		cfg := config.Default()
		f.apply(&cfg)
		if cfg.ModelsAutoload != c.want {
			t.Errorf("%v: models_autoload %v", c.args, cfg.ModelsAutoload)
		}
	}
}
