// Package clocale keeps Fyne from logging "Error parsing user locale C" at start-up on systems whose
// locale is "C.UTF-8" or "POSIX.UTF-8" (containers, CI, minimal installs): it sets LANGUAGE=en before
// Fyne's lang package reads the locale. Go initialises this package first: it depends only on the
// standard library, and among packages that are ready, initialisation follows import-path order,
// where github.com/llamatray/... comes before golang.org/x/text, which Fyne's lang package needs.
package clocale

import (
	"os"
	"strings"
)

func init() { fix(os.Getenv, os.Setenv) }

// fix sets LANGUAGE=en when the locale in effect is a C or POSIX locale with a codeset suffix and
// LANGUAGE is unset.
func fix(getenv func(string) string, setenv func(string, string) error) {
	if getenv("LANGUAGE") != "" {
		return
	}
	for _, k := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		v := getenv(k)
		if v == "" {
			continue
		}
		if strings.HasPrefix(v, "C.") || strings.HasPrefix(v, "POSIX.") {
			_ = setenv("LANGUAGE", "en")
		}
		return
	}
}
