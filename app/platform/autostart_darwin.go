//go:build darwin

package platform

import (
	"os"
	"path/filepath"
)

// autostartDir is ~/Library/LaunchAgents.
func autostartDir() string {
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.Getenv("HOME")
	}
	return filepath.Join(home, "Library", "LaunchAgents")
}

// AutostartEnabled reports whether Llamatray starts at login.
func AutostartEnabled() bool { return autostartFileEnabled(autostartDir(), plistFileName) }

// SetAutostart writes or removes ~/Library/LaunchAgents/io.github.llamatray.plist, which starts exe
// at login.
func SetAutostart(on bool, exe string) error {
	return autostartFile(autostartDir(), plistFileName, on, launchAgentPlist(exe))
}
