package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/testbed/fakehub"
)

// Delete… of a model pulled from the Hub frees its blob, as `llamatray rm` does, instead of
// moving only the snapshot link to the trash.
func TestDeletePulledModelFreesBlob(t *testing.T) {
	const repo = "Org/Tiny-GGUF"
	fh := fakehub.New()
	t.Cleanup(fh.Close)
	if err := fh.AddModelRepo(t.TempDir(), repo, "Q4_K_M"); err != nil {
		t.Fatal(err)
	}
	cache := hub.Cache{Dir: filepath.Join(t.TempDir(), "hub")}
	cat := catalog.New(catalog.Options{Dirs: []string{cache.Dir}})
	m := hub.NewManager(&hub.Client{Endpoint: fh.URL()}, cache, func(string, []string) error { return cat.Scan(context.Background()) }, nil)
	ref, _ := hub.ParseRef(repo + ":Q4_K_M")
	st, err := m.Start(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if end, err := m.Wait(context.Background(), st.Model); err != nil || end.State != hub.StateDownloaded {
		t.Fatalf("pull: %+v %v", end, err)
	}
	cm, ok := cat.Lookup(st.Model)
	if !ok {
		t.Fatal("the pulled model is not in the catalog")
	}
	blobs, _ := filepath.Glob(filepath.Join(cache.RepoDir(repo), "blobs", "*"))
	if len(blobs) != 1 {
		t.Fatalf("blobs after the pull: %v", blobs)
	}
	hb := testManagerHub(m, cat.Lookup)
	empty := windowSnapshot()
	empty.Models = nil
	b := withHub(newFakeBackend(empty), hb)
	if name, ok := pulledName(b, cm.ID); !ok || name != st.Model {
		t.Fatalf("pulledName = %q %v", name, ok)
	}
	trash := func(string) error { return errors.New("a pulled model must not go to the trash") }
	if err := deleteModel(b, cm.ID, cm.Path, trash); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(blobs[0]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the blob is still in the cache: %v", err)
	}
	if _, err := os.Stat(cm.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the snapshot link is still there: %v", err)
	}
}
