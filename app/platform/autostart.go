// Package platform is the desktop app's operating-system integration that needs no UI toolkit:
// start at login, the trash, and showing a file in the file manager. Each OS has its own files
// behind build tags; the file formats are written by pure functions tested on every OS.
package platform

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/llamatray/llamatray/router/atomicfile"
	"github.com/llamatray/llamatray/router/envconfig"
)

// autostartEnv (envconfig.Autostart) is set to "1" in the environment of a Llamatray started at
// login, so that it starts to the tray without opening its window.
const autostartEnv = string(envconfig.Autostart)

// AppID is the reverse-DNS identifier used for the Fyne app, the autostart entries and the icon.
const AppID = "io.github.llamatray"

// desktopEntry is the XDG autostart entry that starts exe at login.
func desktopEntry(exe string) string {
	return "[Desktop Entry]\n" +
		"Type=Application\n" +
		"Name=Llamatray\n" +
		"Comment=Serve local GGUF models through one OpenAI-compatible endpoint\n" +
		"Exec=env " + autostartEnv + "=1 " + desktopExecQuote(exe) + "\n" +
		"Icon=" + AppID + "\n" +
		"Terminal=false\n" +
		"Categories=Utility;\n" +
		"X-GNOME-Autostart-enabled=true\n"
}

// desktopExecQuote quotes one Exec argument as the Desktop Entry specification asks: inside double
// quotes, `"`, "`", `$` and `\` are backslash-escaped; then, as for every string value, each
// backslash is doubled; and `%` is written `%%` so it is not read as a field code.
func desktopExecQuote(arg string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range arg {
		switch r {
		case '"', '`', '$':
			b.WriteString(`\\`)
			b.WriteRune(r)
		case '\\':
			b.WriteString(`\\\\`)
		case '%':
			b.WriteString("%%")
		case '\n', '\r':
			// a newline would end the key; such a path cannot be started from a .desktop file
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// launchAgentPlist is the macOS LaunchAgent that starts exe at login.
func launchAgentPlist(exe string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>Label</key>
	<string>` + AppID + `</string>
	<key>ProgramArguments</key>
	<array>
		<string>` + xmlEscape(exe) + `</string>
	</array>
	<key>EnvironmentVariables</key>
	<dict>
		<key>` + autostartEnv + `</key>
		<string>1</string>
	</dict>
	<key>RunAtLoad</key>
	<true/>
	<key>ProcessType</key>
	<string>Interactive</string>
	<key>LimitLoadToSessionType</key>
	<string>Aqua</string>
</dict>
</plist>
`
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;").Replace(s)
}

// windowsRunValue is the command line stored in the Run registry key.
func windowsRunValue(exe string) string { return `"` + exe + `"` }

// autostartFile turns a file-based login item on (writing content to dir/name) or off (removing
// it). Turning off an entry that does not exist is not an error.
func autostartFile(dir, name string, on bool, content string) error {
	path := filepath.Join(dir, name)
	if !on {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove login item: %w", err)
		}
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := atomicfile.Write(path, []byte(content), 0o644); err != nil {
		return fmt.Errorf("write login item: %w", err)
	}
	return nil
}

// autostartFileEnabled reports whether dir/name exists. An XDG entry disabled by the desktop
// (Hidden=true or X-GNOME-Autostart-enabled=false) counts as off.
func autostartFileEnabled(dir, name string) bool {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		switch strings.TrimSpace(line) {
		case "Hidden=true", "X-GNOME-Autostart-enabled=false":
			return false
		}
	}
	return true
}

const (
	desktopFileName = AppID + ".desktop"
	plistFileName   = AppID + ".plist"
)

// AutostartExe is the program to start at login: the AppImage when running from one (its mount
// point changes every run), else this executable with symlinks resolved.
func AutostartExe() (string, error) {
	if p := os.Getenv("APPIMAGE"); p != "" {
		return p, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find this program: %w", err)
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	return exe, nil
}
