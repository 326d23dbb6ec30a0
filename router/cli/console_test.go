package cli

import "testing"

func TestConsoleCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, false},                      // the tray app
		{[]string{"--addr", ":1"}, false}, // the tray app with flags
		{[]string{"-log-level=debug"}, false},
		{[]string{"serve"}, true},
		{[]string{"ps", "--json"}, true},
		{[]string{"models"}, true},
		{[]string{"version"}, true},
		{[]string{"frobnicate"}, true}, // its error is printed
		{[]string{"-h"}, true},
		{[]string{"--help"}, true},
	} {
		if got := consoleCommand(tc.args); got != tc.want {
			t.Errorf("consoleCommand(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}
