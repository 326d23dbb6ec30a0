package wintest

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/testbed"
)

// Registry keys the setup writes (packaging/windows/llamatray.nsi).
const (
	runKey    = `HKCU\Software\Microsoft\Windows\CurrentVersion\Run`
	uninstKey = `HKCU\Software\Microsoft\Windows\CurrentVersion\Uninstall\Llamatray`
	appKey    = `HKCU\Software\Llamatray`
)

// TestSetup installs Llamatray with the silent setup into the user's profile, runs the
// installed llamatray.exe, installs again over a running Llamatray (which the setup closes,
// with its children), and uninstalls silently while Llamatray runs: the uninstaller stops it
// and its children and removes the program, the Start menu entry and the registry keys, and
// keeps the user's settings.
func TestSetup(t *testing.T) {
	w := needWine(t)
	setup := needFile(t, setupEnv)
	local := w.getenv(t, "LOCALAPPDATA")
	instDir := local + `\Programs\Llamatray`
	exe := instDir + `\llamatray.exe`
	lnk := w.getenv(t, "APPDATA") + `\Microsoft\Windows\Start Menu\Programs\Llamatray.lnk`

	w.timed(t, "silent install", func() { w.mustRun(t, 3*time.Minute, setup, "/S") })
	for _, p := range []string{exe, instDir + `\uninstall.exe`, lnk} {
		if !fileExists(w.unixPath(t, p)) {
			t.Fatalf("the setup did not install %s", p)
		}
	}
	r := w.mustRun(t, time.Minute, exe, "version")
	if !strings.HasPrefix(r.stdout, "llamatray ") || !strings.Contains(r.stdout, "windows/amd64") {
		t.Fatalf("installed llamatray.exe version: %s", r)
	}
	if v := w.regValue(t, runKey, "Llamatray"); v != `"`+exe+`"` {
		t.Fatalf("Run key value Llamatray = %q, want %q", v, `"`+exe+`"`)
	}
	if v := w.regValue(t, uninstKey, "UninstallString"); v != `"`+instDir+`\uninstall.exe"` {
		t.Fatalf("UninstallString = %q", v)
	}
	if v := w.regValue(t, appKey, "InstallDir"); v != instDir {
		t.Fatalf("InstallDir = %q, want %q", v, instDir)
	}

	b := newBed(t)
	cfgPath := w.unixPath(t, local+`\llamatray\config.toml`)
	t.Run("install over a running Llamatray", func(t *testing.T) {
		s := w.runInstalled(t, exe, b, cfgPath)
		w.timed(t, "silent install over a running Llamatray", func() {
			w.mustRun(t, 3*time.Minute, setup, "/S")
			w.wantStopped(t, s)
		})
		if r := w.mustRun(t, time.Minute, exe, "version"); !strings.HasPrefix(r.stdout, "llamatray ") {
			t.Fatalf("llamatray.exe version after the update: %s", r)
		}
	})
	t.Run("uninstall", func(t *testing.T) {
		s := w.runInstalled(t, exe, b, cfgPath)
		w.timed(t, "silent uninstall of a running Llamatray", func() {
			w.uninstall(t, instDir)
			w.wantStopped(t, s)
		})
		for _, p := range []string{exe, lnk, instDir} {
			if fileExists(w.unixPath(t, p)) {
				t.Errorf("the uninstaller left %s", p)
			}
		}
		for _, k := range []string{uninstKey, appKey} {
			if r := w.run(t, time.Minute, "reg.exe", "query", k); r.code == 0 {
				t.Errorf("the uninstaller left %s: %s", k, r)
			}
		}
		if r := w.run(t, time.Minute, "reg.exe", "query", runKey, "/v", "Llamatray"); r.code == 0 {
			t.Errorf("the uninstaller left the Run value: %s", r)
		}
		if !fileExists(cfgPath) {
			t.Errorf("the uninstaller removed the user's settings %s", cfgPath)
		}
	})
	t.Run("install without start at login", func(t *testing.T) {
		w.mustRun(t, 3*time.Minute, setup, "/S", "/NOAUTOSTART")
		if !fileExists(w.unixPath(t, exe)) {
			t.Fatalf("the setup did not install %s", exe)
		}
		if r := w.run(t, time.Minute, "reg.exe", "query", runKey, "/v", "Llamatray"); r.code == 0 {
			t.Errorf("/NOAUTOSTART wrote the Run value: %s", r)
		}
		w.uninstall(t, instDir)
	})
}

// uninstall runs the silent uninstaller and waits for it to finish: it runs on from a copy of
// itself in %TEMP%\~nsu*.tmp and returns at once.
func (w *wine) uninstall(t *testing.T, instDir string) {
	t.Helper()
	uninst := w.unixPath(t, instDir+`\uninstall.exe`)
	w.mustRun(t, 3*time.Minute, instDir+`\uninstall.exe`, "/S")
	testbed.WaitFor(t, 2*time.Minute, "the uninstaller to finish", func() bool {
		return !fileExists(uninst) && len(w.processes(t, `\~nsu`)) == 0
	})
}

// runInstalled writes a config for the bed, starts the installed llamatray.exe serve and
// loads the fast model, so that a child runs.
func (w *wine) runInstalled(t *testing.T, exe string, b *bed, cfgPath string) *serve {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	cfg := fmt.Sprintf("listen = %q\nmodel_dirs = ['%s']\nscan_default_dirs = false\nllama_server = '%s'\n",
		addr, winPath(b.models), winPath(b.fake))
	if err := os.MkdirAll(filepath.Dir(cfgPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	s := w.startServe(t, exe)
	testbed.WaitFor(t, time.Minute, "the installed llamatray.exe to answer on "+addr, func() bool {
		if s.exited() {
			t.Fatalf("the installed llamatray.exe serve exited:\n%s", s.log(t))
		}
		resp, err := httpClient.Get("http://" + addr + "/v1/models")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	w.mustRun(t, time.Minute, exe, "load", "wintest-fast")
	if ps := w.processes(t, "llama-server.exe"); len(ps) != 1 {
		t.Fatalf("want one llama-server.exe child, have %v", ps)
	}
	return s
}

// wantStopped fails the test unless s and every llama-server.exe have ended.
func (w *wine) wantStopped(t *testing.T, s *serve) {
	t.Helper()
	testbed.WaitFor(t, 30*time.Second, "the setup to stop llamatray.exe", s.exited)
	testbed.WaitFor(t, 15*time.Second, "the children of llamatray.exe to end", func() bool {
		return len(w.processes(t, "llama-server.exe")) == 0
	})
}

// timed runs step and logs how long it took.
func (w *wine) timed(t *testing.T, step string, f func()) {
	t.Helper()
	start := time.Now()
	f()
	t.Logf("%s: %v", step, time.Since(start).Round(time.Millisecond))
}

// regValue is one string value of a registry key, read with reg.exe.
func (w *wine) regValue(t *testing.T, key, name string) string {
	t.Helper()
	r := w.run(t, time.Minute, "reg.exe", "query", key, "/v", name)
	if r.code != 0 {
		t.Fatalf("reg query %s /v %s: %s", key, name, r)
	}
	for _, line := range strings.Split(r.stdout, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == name && strings.HasPrefix(f[1], "REG_") {
			_, v, _ := strings.Cut(strings.TrimSpace(line), f[1])
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("reg query %s /v %s printed no value: %s", key, name, r)
	return ""
}
