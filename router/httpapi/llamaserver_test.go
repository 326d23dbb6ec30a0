package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/locate"
	"github.com/llamatray/llamatray/router/releases"
	"github.com/llamatray/llamatray/router/testbed/ghreleases"
	"github.com/llamatray/llamatray/router/wire"
)

// installerBuilds serves the LlamaServers interface with the real installer, as the service does
// (less the re-search of llama-server, which the service's own test covers).
type installerBuilds struct{ in *releases.Installer }

func (b installerBuilds) InstalledBuilds() ([]releases.Build, error) { return b.in.Store.Builds() }
func (b installerBuilds) PlanBuild(ctx context.Context, req releases.Request) (releases.Release, releases.Choice, error) {
	return b.in.Plan(ctx, req)
}
func (b installerBuilds) InstallBuild(ctx context.Context, req releases.Request, p func(releases.Progress)) (releases.Build, error) {
	return b.in.Install(ctx, req, p)
}
func (b installerBuilds) UseBuild(build string) (releases.Build, error) { return b.in.Use(build) }

// streamEvent is one event of a stream.
type streamEvent struct {
	name string
	data string
}

func readEvents(t *testing.T, r io.Reader) []streamEvent {
	t.Helper()
	var out []streamEvent
	var cur streamEvent
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		case line == "" && cur.name != "":
			out = append(out, cur)
			cur = streamEvent{}
		}
	}
	return out
}

func TestLlamaServerInstallAPI(t *testing.T) {
	tgz := ghreleases.FakeTarGz(t, "b7100")
	gh := ghreleases.New()
	t.Cleanup(gh.Close)
	gh.Add("b6000", map[string][]byte{ghreleases.AssetName("b6000", ".tar.gz"): tgz})
	gh.Add("b7100", map[string][]byte{ghreleases.AssetName("b7100", ".tar.gz"): tgz})
	in := &releases.Installer{
		Client: &releases.Client{Base: gh.Base},
		Store:  releases.Store{Root: t.TempDir()},
		System: func(context.Context) releases.System { return releases.System{OS: runtime.GOOS, Arch: runtime.GOARCH} },
		Verify: locate.Version,
	}
	srv, _, _ := testRouter(t, "", func(o *Options) {
		o.LlamaServers = installerBuilds{in}
		o.Setup = func() wire.Setup { return wire.Setup{LlamaServer: wire.LlamaServer{Build: "b7100"}} }
	})

	// What would be installed, and why.
	resp, err := http.Get(srv.URL + "/api/llama-server?build=latest")
	if err != nil {
		t.Fatal(err)
	}
	// The document is releases.Listing, which the client decodes: every field has its home there.
	var list releases.Listing
	dec := json.NewDecoder(resp.Body)
	dec.DisallowUnknownFields()
	err = dec.Decode(&list)
	resp.Body.Close()
	if err != nil || list.Available == nil || list.Available.Build != "b7100" || list.Available.Chosen.Asset != ghreleases.AssetName("b7100", ".tar.gz") ||
		list.Available.Chosen.Reason == "" || len(list.Builds) != 0 || list.InUse.Build != "b7100" {
		t.Errorf("GET /api/llama-server = %+v %v", list, err)
	}

	install := func(body string) *http.Response {
		t.Helper()
		resp, err := http.Post(srv.URL+"/api/llama-server/install", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp = install(`{"build": "b6000"}`)
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("install: %d %s", resp.StatusCode, ct)
	}
	evs := readEvents(t, resp.Body)
	resp.Body.Close()
	var phases []string
	for _, ev := range evs[:len(evs)-1] {
		var p releases.Progress
		if ev.name != "progress" || json.Unmarshal([]byte(ev.data), &p) != nil {
			t.Fatalf("event %+v", ev)
		}
		if len(phases) == 0 || phases[len(phases)-1] != p.Phase {
			phases = append(phases, p.Phase)
		}
		if p.Phase == releases.PhaseDownloading && (p.Total != int64(len(tgz)) || p.Done > p.Total) {
			t.Errorf("progress %+v, total %d", p, len(tgz))
		}
	}
	if got := strings.Join(phases, " "); got != "chosen downloading verified unpacking done" {
		t.Errorf("phases = %s", got)
	}
	last := evs[len(evs)-1]
	var done releases.Build
	if last.name != "done" || json.Unmarshal([]byte(last.data), &done) != nil || done.Build != "b6000" || !done.Current || done.Version == "" {
		t.Errorf("last event %+v", last)
	}

	// latest, by default; then roll back.
	evs = readEvents(t, install(`{}`).Body)
	if evs[len(evs)-1].name != "done" || !strings.Contains(evs[len(evs)-1].data, `"build":"b7100"`) {
		t.Errorf("install latest ended with %+v", evs[len(evs)-1])
	}
	resp, _ = http.Post(srv.URL+"/api/llama-server/use", "application/json", strings.NewReader(`{"build":"previous"}`))
	json.NewDecoder(resp.Body).Decode(&done)
	resp.Body.Close()
	if resp.StatusCode != 200 || done.Build != "b6000" {
		t.Errorf("use previous: %d %+v", resp.StatusCode, done)
	}

	// Errors before any progress are plain JSON errors with their status.
	for _, c := range []struct {
		path, body string
		status     int
		code       string
	}{
		{"/api/llama-server/install", `{"build": "b1"}`, 404, "build_not_found"},
		{"/api/llama-server/install", `{"backend": "cuda"}`, 404, "build_not_found"},
		{"/api/llama-server/install", `{"build": `, 400, "invalid_json"},
		{"/api/llama-server/use", `{"build": "b9"}`, 404, "build_not_found"},
		{"/api/llama-server/use", `{}`, 400, "build_required"},
	} {
		resp, err := http.Post(srv.URL+c.path, "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		_, code, msg := decodeError(t, resp)
		resp.Body.Close()
		if resp.StatusCode != c.status || code != c.code {
			t.Errorf("%s %s: %d %s %q, want %d %s", c.path, c.body, resp.StatusCode, code, msg, c.status, c.code)
		}
	}

	// A corrupt download fails after the progress began: an error event names the mismatch.
	gh.Corrupt.Store(true)
	gh.Add("b7200", map[string][]byte{ghreleases.AssetName("b7200", ".tar.gz"): tgz})
	evs = readEvents(t, install(`{"build": "latest"}`).Body)
	last = evs[len(evs)-1]
	if last.name != "error" || !strings.Contains(last.data, "sha256 mismatch") || !strings.Contains(last.data, "download_failed") {
		t.Errorf("corrupt install ended with %+v", last)
	}
	if builds, _ := in.Store.Builds(); len(builds) != 2 {
		t.Errorf("builds after a refused install: %+v", builds)
	}
}
