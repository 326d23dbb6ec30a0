package httpapi

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/fakehub"
	"github.com/llamatray/llamatray/router/wire"
)

func listDownloads(t *testing.T, base string) []wire.Download {
	t.Helper()
	resp, err := http.Get(base + "/api/downloads")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var l wire.DownloadList
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil || resp.StatusCode != 200 || l.Object != "list" {
		t.Fatalf("GET /api/downloads: %d %v %+v", resp.StatusCode, err, l)
	}
	return l.Data
}

// GET /api/downloads lists a pull with what can be done with it; pause keeps what came, resume
// goes on, cancel deletes what it left; names and states that do not fit are refused clearly.
func TestDownloadsPauseResumeCancel(t *testing.T) {
	srv, _, fh, _ := hubRouter(t, false)
	name := hubRepo + ":Q8_0"
	if got := listDownloads(t, srv.URL); len(got) != 0 {
		t.Fatalf("downloads before any pull: %+v", got)
	}
	started := fh.Stall(hubRepo, fakehub.FileName(hubRepo, "Q8_0"), 4096)
	if resp, doc := do(t, "POST", srv.URL+"/models", `{"model":"`+name+`"}`); resp.StatusCode != 202 {
		t.Fatalf("pull: %d %v", resp.StatusCode, doc)
	}
	<-started
	got := listDownloads(t, srv.URL)
	if len(got) != 1 || got[0].Kind != "model" || got[0].Name != name || got[0].Status != "downloading" || len(got[0].Actions) != 2 || got[0].Actions[0] != "pause" {
		t.Fatalf("a running pull: %+v", got)
	}
	if resp, doc := do(t, "POST", srv.URL+"/api/downloads/resume", `{"name":"`+name+`"}`); resp.StatusCode != 409 {
		t.Errorf("resume of a running pull: %d %v", resp.StatusCode, doc)
	}
	if resp, doc := do(t, "POST", srv.URL+"/api/downloads/pause", `{"name":"`+name+`"}`); resp.StatusCode != 200 || doc["status"] != "paused" {
		t.Fatalf("pause: %d %v", resp.StatusCode, doc)
	}
	if got := listDownloads(t, srv.URL); got[0].Status != "paused" || got[0].Actions[0] != "resume" {
		t.Fatalf("after the pause: %+v", got)
	}
	fh.Stall(hubRepo, fakehub.FileName(hubRepo, "Q8_0"), 1<<62)
	if resp, doc := do(t, "POST", srv.URL+"/api/downloads/resume", `{"name":"`+name+`"}`); resp.StatusCode != 200 {
		t.Fatalf("resume: %d %v", resp.StatusCode, doc)
	}
	testbed.WaitFor(t, 20*time.Second, "the resumed pull to finish", func() bool {
		d := listDownloads(t, srv.URL)
		return len(d) == 1 && d[0].Status == "downloaded"
	})
	for _, tc := range []struct {
		path, body string
		status     int
	}{
		{"/api/downloads/cancel", `{"name":"Org/Nothing-GGUF:Q8_0"}`, 404},
		{"/api/downloads/pause", `{"name":"` + name + `"}`, 409}, // done already
		{"/api/downloads/cancel", `{}`, 400},
		{"/api/downloads/cancel", `{"name":`, 400},
		{"/api/downloads/explode", `{"name":"` + name + `"}`, 404},
	} {
		if resp, doc := do(t, "POST", srv.URL+tc.path, tc.body); resp.StatusCode != tc.status {
			t.Errorf("%s %s: %d %v, want %d", tc.path, tc.body, resp.StatusCode, doc, tc.status)
		}
	}

	// Paused, then cancelled: the partial file goes too.
	other := hubRepo + ":Q4_K_M"
	started = fh.Stall(hubRepo, fakehub.FileName(hubRepo, "Q4_K_M"), 4096)
	do(t, "POST", srv.URL+"/models", `{"model":"`+other+`"}`)
	<-started
	do(t, "POST", srv.URL+"/api/downloads/pause", `{"name":"`+other+`"}`)
	if resp, doc := do(t, "POST", srv.URL+"/api/downloads/cancel", `{"name":"`+other+`"}`); resp.StatusCode != 200 || doc["status"] != "cancelled" {
		t.Fatalf("cancel of a paused pull: %d %v", resp.StatusCode, doc)
	}
	for _, d := range listDownloads(t, srv.URL) {
		if d.Name == other {
			t.Errorf("the cancelled pull is still listed: %+v", d)
		}
	}
}
