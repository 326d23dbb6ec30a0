//go:build !windows && !darwin

package platform

import (
	"path/filepath"

	"github.com/adrg/xdg"
)

// autostartDir is $XDG_CONFIG_HOME/autostart.
func autostartDir() string { return filepath.Join(xdg.ConfigHome, "autostart") }

// AutostartEnabled reports whether Llamatray starts at login.
func AutostartEnabled() bool { return autostartFileEnabled(autostartDir(), desktopFileName) }

// SetAutostart writes or removes ~/.config/autostart/io.github.llamatray.desktop, which starts exe at
// login.
func SetAutostart(on bool, exe string) error {
	return autostartFile(autostartDir(), desktopFileName, on, desktopEntry(exe))
}
