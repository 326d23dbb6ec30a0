package service

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/adrg/xdg"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/ghreleases"
	"github.com/llamatray/llamatray/router/update"
	"github.com/llamatray/llamatray/router/wire"
)

// updateService is a service of version 0.3.0 whose releases list is gh's.
func updateService(t *testing.T, gh *ghreleases.Server, cfg func(*config.Config)) *Service {
	t.Helper()
	home := t.TempDir()
	t.Cleanup(xdg.Reload)
	for k, v := range map[string]string{"HOME": home, "XDG_DATA_HOME": filepath.Join(home, "data"), "XDG_STATE_HOME": filepath.Join(home, "state"),
		"XDG_CONFIG_HOME": filepath.Join(home, "config"), "LLAMA_SERVER": "", "PATH": t.TempDir(), update.URLEnv: gh.Base} {
		t.Setenv(k, v)
	}
	xdg.Reload()
	c := config.Default()
	c.Listen = fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	c.ModelDirs = []string{t.TempDir()}
	c.ScanDefaultDirs = false
	if cfg != nil {
		cfg(&c)
	}
	svc, err := New(c, Options{Version: "0.3.0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func llamatrayReleases(t *testing.T) *ghreleases.Server {
	gh := ghreleases.NewRepo(ghreleases.LlamatrayRepo)
	t.Cleanup(gh.Close)
	gh.Add("v0.3.0", nil)
	gh.Add("v0.4.0", nil)
	gh.Add("v0.5.0-rc.1", nil)
	gh.SetFlags("v0.5.0-rc.1", false, true)
	return gh
}

// The daily check (on by default) reads the list and /api/status says what it found; its
// failures keep the last result with the error; update_prerelease offers the pre-release.
func TestReleaseCheckInStatus(t *testing.T) {
	gh := llamatrayReleases(t)
	svc := updateService(t, gh, nil)
	if svc.Update() != nil {
		t.Fatal("a result before any check")
	}
	changed := svc.UpdateChanged()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { svc.checkReleasesDaily(ctx, 0, time.Hour); close(done) }()
	select {
	case <-gh.Listed():
	case <-time.After(30 * time.Second):
		t.Fatal("the daily check did not read the list")
	}
	select {
	case <-changed:
	case <-time.After(30 * time.Second):
		t.Fatal("UpdateChanged not closed by the check")
	}
	cancel()
	<-done // the loop ends with its context

	u := svc.Update()
	if !u.Available || u.Latest != "0.4.0" || !strings.HasSuffix(u.URL, "/llamatray/llamatray/releases/tag/v0.4.0") ||
		u.Current != "0.3.0" || u.Message != "Llamatray 0.4.0 is available: "+u.URL || u.Error != "" {
		t.Fatalf("update = %+v", u)
	}
	if ua := gh.LastUserAgent(); ua != "Llamatray/0.3.0" {
		t.Errorf("User-Agent %q", ua)
	}
	st := status(t, svc)
	if st.Update == nil || *st.Update != *u {
		t.Errorf("/api/status update = %+v, want %+v", st.Update, u)
	}

	garbage := []byte("[{")
	gh.ListBody.Store(&garbage)
	if !svc.CheckReleases(context.Background()) {
		t.Fatal("did not check")
	}
	if u := svc.Update(); !u.Available || u.Latest != "0.4.0" || !strings.Contains(u.Error, "not a list of releases") {
		t.Errorf("after a failed check: %+v", u)
	}
	gh.ListBody.Store(nil)

	c := svc.Config()
	c.UpdatePrerelease = true
	if err := svc.Edit(func(in *config.Config) error { *in = c.Clone(); return nil }); err != nil {
		t.Fatal(err)
	}
	svc.CheckReleases(context.Background())
	if u := svc.Update(); !u.Available || u.Latest != "0.5.0-rc.1" || u.Error != "" {
		t.Errorf("with update_prerelease: %+v", u)
	}

	// Turned off, the result is gone from the status, and a check reads nothing.
	c.UpdateCheck = false
	if err := svc.Edit(func(in *config.Config) error { *in = c.Clone(); return nil }); err != nil {
		t.Fatal(err)
	}
	n := gh.Lists()
	if svc.CheckReleases(context.Background()) || gh.Lists() != n || svc.Update() != nil || status(t, svc).Update != nil {
		t.Errorf("update_check off: checked %d times, update %+v", gh.Lists()-n, svc.Update())
	}
}

// status is GET /api/status (the service's setup is at its top level).
func status(t *testing.T, svc *Service) wire.Status {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/api/status", nil)
	req.Host = svc.Config().Listen
	svc.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("/api/status: %d %s", rec.Code, rec.Body)
	}
	var st wire.Status
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if st.Setup == nil {
		t.Fatalf("/api/status without the service's part: %s", rec.Body)
	}
	return st
}
