package service

import (
	"context"
	"errors"
	"testing"

	"github.com/llamatray/llamatray/router/releases"
)

// A llama-server install shows as a download with its progress while it runs, can be cancelled,
// and shows how it ended.
func TestInstallTrackedAsDownload(t *testing.T) {
	var in installs
	if d := in.Downloads(); len(d) != 0 {
		t.Fatalf("before any install: %+v", d)
	}
	midway := make(chan struct{})
	resume := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := in.track(context.Background(), func(ctx context.Context, p func(releases.Progress)) (releases.Build, error) {
			p(releases.Progress{Phase: releases.PhaseDownloading, Build: "b7100", Done: 50, Total: 200, BytesPerSecond: 25, ETASeconds: 6})
			close(midway)
			<-resume
			<-ctx.Done()
			return releases.Build{}, ctx.Err()
		}, nil)
		done <- err
	}()
	<-midway
	d := in.Downloads()
	if len(d) != 1 || d[0].Kind != "llama-server" || d[0].Name != "b7100" || d[0].Status != "downloading" || d[0].BytesDone != 50 || d[0].Actions[0] != "cancel" {
		t.Fatalf("while it runs: %+v", d)
	}
	if in.CancelInstall("b7000") {
		t.Error("cancelled an install of another build")
	}
	if !in.CancelInstall("b7100") {
		t.Fatal("cancel found no install")
	}
	close(resume)
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if d := in.Downloads(); d[0].Status != "cancelled" || len(d[0].Actions) != 0 {
		t.Fatalf("after the cancel: %+v", d)
	}
}
