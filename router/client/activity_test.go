package client

import (
	"context"
	"testing"

	"github.com/llamatray/llamatray/router/wire"
)

// The activity document decodes field by field into wire.Activity, by the client as by a strict
// reader.
func TestActivityMirrorsServer(t *testing.T) {
	srv, _ := startInstance(t)
	var doc wire.Activity
	strictly(t, "GET", srv.URL+"/api/activity", "", &doc)
	if doc.BucketSeconds != 60 || doc.Models == nil {
		t.Fatalf("activity %+v", doc)
	}
	got, err := New(srv.URL).Activity(context.Background())
	if err != nil || got.BucketSeconds != 60 || got.Models == nil {
		t.Fatalf("client: %+v %v", got, err)
	}
}
