package cli

import "strings"

// consoleCommand reports whether args run a command of the command line (serve, ps, models,
// help...) rather than start the tray app: only then does Main attach to the console it was typed
// in (attachConsole, Windows).
func consoleCommand(args []string) bool {
	if len(args) == 0 {
		return false
	}
	switch a := args[0]; a {
	case "-h", "-help", "--help":
		return true
	default:
		return !strings.HasPrefix(a, "-")
	}
}
