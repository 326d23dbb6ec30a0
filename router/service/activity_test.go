package service

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/activity"
)

// The last hour's activity is there again after a restart (the app's Activity window was empty
// after each one): Stop keeps it in the state folder, New brings it back.
func TestActivityKeptAcrossRestart(t *testing.T) {
	svc := pinService(t, "")
	svc.activity.Record(activity.Sample{Model: "m", End: time.Now(), Status: 200})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := svc.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := New(svc.cfg, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	doc := again.Activity()
	if len(doc.Models) != 1 || doc.Models[0].Model != "m" || doc.Models[0].Total.Requests != 1 {
		t.Fatalf("activity after a restart: %+v; want m's one request", doc.Models)
	}
}
