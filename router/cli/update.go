package cli

import (
	"cmp"
	"context"
	"flag"
	"fmt"

	"github.com/llamatray/llamatray/router/envconfig"
	"github.com/llamatray/llamatray/router/releases"
	"github.com/llamatray/llamatray/router/update"
)

const updateUsage = `Usage: llamatray update --check [--prerelease] [--json] [--config FILE]

Reads the list of Llamatray's releases (GitHub's releases API; $LLAMATRAY_UPDATE_URL replaces
` + update.DefaultURL + `) and prints one line:

  Llamatray X is available: URL      a newer release exists (its page has the installers)
  Llamatray V is the newest release  this version is up to date

Nothing is downloaded or installed. Drafts are never offered; pre-releases only with --prerelease
or update_prerelease = true in the configuration. A development build ("dev") or a snapshot build
says so: a development build is never told that a release is newer, a snapshot only of a release
with a greater MAJOR.MINOR.PATCH. update_check = false turns off the daily check of the tray
app and of serve, not this one.

Exit status: 0 when the check worked (whether or not a newer release exists: --json tells
scripts which), 1 when the list could not be read, 2 for a usage error.

Flags:
`

// runUpdate is `llamatray update --check`: it reads the releases list and says whether a newer
// Llamatray exists. It runs whatever update_check says: update_check turns off the daily check only.
func runUpdate(args []string, b Build, env Env) error {
	fs := flag.NewFlagSet("update", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	check := fs.Bool("check", false, "check for a newer release (required: nothing is ever installed)")
	pre := fs.Bool("prerelease", false, "also offer pre-releases (default: the config's update_prerelease)")
	asJSON := fs.Bool("json", false, "print the result as JSON: the object of GET /api/status \"update\"")
	configPath := fs.String("config", "", "configuration `file` (for update_prerelease)")
	fs.Usage = func() {
		fmt.Fprint(env.Stderr, updateUsage)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 || !*check {
		return usageError{fmt.Errorf("usage: llamatray update --check (Llamatray tells of new releases; it installs none itself)")}
	}
	prerelease := *pre || fileConfig(*configPath).UpdatePrerelease
	version := cmp.Or(b.Version, "dev")
	c := &update.Checker{Client: releases.Client{Base: envconfig.UpdateURL.From(env.Getenv), UserAgent: "Llamatray/" + version}}
	res, err := c.Check(context.Background(), version, prerelease)
	if err != nil {
		return fmt.Errorf("checking for a newer Llamatray: %w", err)
	}
	if *asJSON {
		return printJSON(env.Stdout, res.Wire())
	}
	_, err = fmt.Fprintln(env.Stdout, res.Message())
	return err
}
