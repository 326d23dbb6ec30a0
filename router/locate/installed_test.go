package locate

import (
	"io/fs"
	"reflect"
	"testing"
)

// The build Llamatray installed comes right after the configured path and $LLAMA_SERVER, before a
// bundled one and PATH; an explicit path still wins.
func TestInstalledBuildOrder(t *testing.T) {
	installed := "/home/ann/.local/share/llamatray/llama-server/b7100/llama-b7100/llama-server"
	m := fakeMachine{goos: "linux", exe: "/opt/lt/llamatray", home: "/home/ann", path: []string{"/usr/bin"}, files: map[string]fs.FileMode{
		installed:                 exe,
		"/opt/lt/llama-server":    exe,
		"/usr/bin/llama-server":   exe,
		"/srv/llama/llama-server": exe,
	}}
	e := m.envFor()
	e.Installed = installed
	got, _, err := Candidates(e, "")
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, c := range got {
		order = append(order, c.Source+":"+c.Path)
	}
	want := []string{"installed:" + installed, "bundled:/opt/lt/llama-server", "PATH:/usr/bin/llama-server"}
	if !reflect.DeepEqual(order, want) {
		t.Errorf("candidates:\n got  %q\n want %q", order, want)
	}
	got, _, err = Candidates(e, "/srv/llama/llama-server")
	if err != nil || len(got) != 1 || got[0].Source != SourceConfig {
		t.Errorf("configured: %+v %v", got, err)
	}
	m.env = map[string]string{"LLAMA_SERVER": "/srv/llama/llama-server"}
	e2 := m.envFor()
	e2.Installed = installed
	if got, _, err := Candidates(e2, ""); err != nil || len(got) != 1 || got[0].Source != SourceEnv {
		t.Errorf("$LLAMA_SERVER: %+v %v", got, err)
	}
	// A removed build is skipped.
	e.Installed = "/gone/llama-server"
	if got, _, _ := Candidates(e, ""); len(got) == 0 || got[0].Source != SourceBundled {
		t.Errorf("missing installed build: %+v", got)
	}
}
