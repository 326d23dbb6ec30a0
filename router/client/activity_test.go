package client

import (
	"testing"

	"github.com/llamatray/llamatray/router/wire"
)

// The activity document decodes field by field into wire.Activity.
func TestActivityMirrorsServer(t *testing.T) {
	srv, _ := startInstance(t)
	var doc wire.Activity
	strictly(t, "GET", srv.URL+"/api/activity", "", &doc)
	if doc.BucketSeconds != 60 || doc.Models == nil {
		t.Fatalf("activity %+v", doc)
	}
}
