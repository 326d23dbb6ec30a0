package platform

import (
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDesktopEntry(t *testing.T) {
	got := desktopEntry("/opt/Llama Tray/llamatray")
	want := "[Desktop Entry]\n" +
		"Type=Application\n" +
		"Name=Llamatray\n" +
		"Comment=Serve local GGUF models through one OpenAI-compatible endpoint\n" +
		"Exec=env LLAMATRAY_AUTOSTART=1 \"/opt/Llama Tray/llamatray\"\n" +
		"Icon=io.github.llamatray\n" +
		"Terminal=false\n" +
		"Categories=Utility;\n" +
		"X-GNOME-Autostart-enabled=true\n"
	if got != want {
		t.Fatalf("desktop entry:\n%s\nwant:\n%s", got, want)
	}
}

func TestDesktopExecQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/usr/bin/llamatray", `"/usr/bin/llamatray"`},
		{`/home/a$b/x`, `"/home/a\\$b/x"`},
		{`/tmp/"q"/x`, `"/tmp/\\"q\\"/x"`},
		{"/tmp/`cmd`", "\"/tmp/\\\\`cmd\\\\`\""},
		{`/tmp/back\slash`, `"/tmp/back\\\\slash"`},
		{`/tmp/100%/x`, `"/tmp/100%%/x"`},
	}
	for _, tt := range tests {
		got := desktopExecQuote(tt.in)
		if got != tt.want {
			t.Errorf("quote(%q) = %s, want %s", tt.in, got, tt.want)
		}
		if back := desktopExecUnquote(t, got); back != tt.in {
			t.Errorf("unquote(quote(%q)) = %q", tt.in, back)
		}
	}
}

// desktopExecUnquote reads one quoted Exec argument back as a desktop environment would: string
// escapes first (\\ → \), then the quoting rule, then %% → %.
func desktopExecUnquote(t *testing.T, s string) string {
	t.Helper()
	s = strings.ReplaceAll(s, `\\`, `\`)
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		t.Fatalf("not quoted: %s", s)
	}
	s = s[1 : len(s)-1]
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		} else if s[i] == '"' {
			t.Fatalf("unescaped quote in %s", s)
		}
		b.WriteByte(s[i])
	}
	return strings.ReplaceAll(b.String(), "%%", "%")
}

func TestLaunchAgentPlist(t *testing.T) {
	exe := "/Applications/Llama & Tray.app/Contents/MacOS/llamatray<1>"
	doc := launchAgentPlist(exe)
	if !strings.HasPrefix(doc, `<?xml version="1.0" encoding="UTF-8"?>`) || !strings.Contains(doc, "<!DOCTYPE plist") {
		t.Fatalf("missing XML header or plist doctype:\n%s", doc)
	}
	// Walk the dict: keys and the values after them.
	dec := xml.NewDecoder(strings.NewReader(doc))
	dec.Strict = true
	var path []string
	values := map[string][]string{}
	key := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("plist is not well-formed XML: %v\n%s", err, doc)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			path = append(path, tok.Name.Local)
			if strings.Join(path, "/") == "plist/dict/true" {
				values[key] = append(values[key], "true")
			}
		case xml.EndElement:
			path = path[:len(path)-1]
		case xml.CharData:
			text := strings.TrimSpace(string(tok))
			if text == "" || len(path) == 0 {
				continue
			}
			top := strings.Join(path, "/")
			switch top {
			case "plist/dict/key":
				key = text
			case "plist/dict/string", "plist/dict/array/string", "plist/dict/dict/key", "plist/dict/dict/string":
				values[key] = append(values[key], text)
			}
		}
	}
	want := map[string][]string{
		"Label":                  {"io.github.llamatray"},
		"ProgramArguments":       {exe},
		"EnvironmentVariables":   {"LLAMATRAY_AUTOSTART", "1"},
		"RunAtLoad":              {"true"},
		"ProcessType":            {"Interactive"},
		"LimitLoadToSessionType": {"Aqua"},
	}
	for k, v := range want {
		if strings.Join(values[k], "|") != strings.Join(v, "|") {
			t.Errorf("%s = %q, want %q", k, values[k], v)
		}
	}
	if len(values) != len(want) {
		t.Errorf("plist keys = %v, want %v", values, want)
	}
}

func TestWindowsRunValue(t *testing.T) {
	if got := windowsRunValue(`C:\Program Files\Llamatray\llamatray.exe`); got != `"C:\Program Files\Llamatray\llamatray.exe"` {
		t.Errorf("run value = %s", got)
	}
}

func TestAutostartFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "config", "autostart") // does not exist yet
	if autostartFileEnabled(dir, desktopFileName) {
		t.Fatal("enabled before anything was written")
	}
	if err := autostartFile(dir, desktopFileName, false, ""); err != nil {
		t.Fatalf("turning off a missing entry: %v", err)
	}
	content := desktopEntry("/usr/bin/llamatray")
	if err := autostartFile(dir, desktopFileName, true, content); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "io.github.llamatray.desktop"))
	if err != nil || string(b) != content {
		t.Fatalf("written %q, %v; want the desktop entry", b, err)
	}
	if !autostartFileEnabled(dir, desktopFileName) {
		t.Fatal("not enabled after writing")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("left behind %d files, want only the entry", len(entries))
	}
	// A desktop that disables the entry rather than deleting it.
	if err := os.WriteFile(filepath.Join(dir, desktopFileName), []byte(content+"Hidden=true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if autostartFileEnabled(dir, desktopFileName) {
		t.Error("Hidden=true entry reported as enabled")
	}
	if err := autostartFile(dir, desktopFileName, false, ""); err != nil {
		t.Fatal(err)
	}
	if autostartFileEnabled(dir, desktopFileName) {
		t.Error("still enabled after removal")
	}
	if _, err := os.Stat(filepath.Join(dir, desktopFileName)); !os.IsNotExist(err) {
		t.Errorf("entry still on disk: %v", err)
	}
}
