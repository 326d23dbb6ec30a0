package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/adrg/xdg"

	"github.com/llamatray/llamatray/router/client"
	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/releases"
	"github.com/llamatray/llamatray/router/service"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
	"github.com/llamatray/llamatray/router/testbed/ghreleases"
)

// TestFirstRunInstallsLlamaServer starts from a fresh home with no llama-server anywhere: the service
// reports none; installing through the API downloads the stand-in's release archive (the real
// llama-server with its libraries beside it), verifies and unpacks it; the service then finds it and
// answers a chat with it. Later installs never touch the build a running model uses; new loads use the
// newest. A corrupt and a cut download are refused and leave nothing behind.
func TestFirstRunInstallsLlamaServer(t *testing.T) {
	real := testbed.RealLlamaServer(t)
	build, err := ghreleases.FromRelocatable(real)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	tgz, err := build.TarGz("b7100")
	if err != nil {
		t.Fatal(err)
	}
	zipped, err := build.Zip()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("release archives packed in %s: .tar.gz %d MiB, .zip %d MiB", time.Since(t0).Round(time.Millisecond), len(tgz)>>20, len(zipped)>>20)
	gh := ghreleases.New()
	t.Cleanup(gh.Close)
	gh.Add("b7000", map[string][]byte{ghreleases.AssetName("b7000", ".zip"): zipped})
	gh.Add("b7100", map[string][]byte{ghreleases.AssetName("b7100", ".tar.gz"): tgz})

	// A fresh home: no configuration, no data, no llama-server on PATH or in $LLAMA_SERVER.
	home := t.TempDir()
	t.Cleanup(xdg.Reload)
	for k, v := range map[string]string{"HOME": home, "XDG_CONFIG_HOME": "", "XDG_DATA_HOME": "", "XDG_STATE_HOME": "",
		"XDG_CACHE_HOME": "", "LLAMA_SERVER": "", "PATH": "/usr/bin:/bin", releases.URLEnv: gh.Base} {
		t.Setenv(k, v)
	}
	xdg.Reload()
	if p, err := exec.LookPath("llama-server"); err == nil {
		t.Skipf("a llama-server is on PATH (%s): not a fresh machine", p)
	}
	models := t.TempDir()
	if err := ggufwrite.WriteLlama(filepath.Join(models, "tiny.gguf"), ggufwrite.LlamaOptions{Width: 64, Blocks: 2, Seed: 1, Name: "tiny"}); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Listen = fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	cfg.ModelDirs = []string{models}
	cfg.ScanDefaultDirs = false
	cfg.Defaults.CtxSize = 512
	cfg.Defaults.Args = []string{"-t", "1"}
	svc, err := service.New(cfg, service.Options{Version: "e2e", Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		svc.Stop(ctx)
	})
	in := &instance{t: t, svc: svc, base: "http://" + svc.ListenAddr(), dir: models}
	ctx := context.Background()
	if ls := svc.LlamaServer(); ls.Path != "" {
		t.Fatalf("found a llama-server in a fresh home: %+v", ls)
	}
	if code, body, _ := in.chat(ctx, "tiny", false, 4); code != http.StatusServiceUnavailable || !strings.Contains(body, "llama_server_not_found") {
		t.Fatalf("chat before the install: %d %s", code, body)
	}

	c := client.New(svc.ListenAddr())
	install := func(build string) (releases.Build, time.Duration, error) {
		t.Helper()
		start := time.Now()
		var last releases.Progress
		b, err := c.InstallLlamaServer(ctx, releases.Request{Build: build}, func(p releases.Progress) { last = p })
		if err == nil && last.Phase != releases.PhaseDone {
			t.Errorf("last progress event %+v", last)
		}
		return b, time.Since(start), err
	}
	b, took, err := install(releases.Latest)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("installed %s (%d MiB archive) through the API in %s", b.Build, len(tgz)>>20, took.Round(time.Millisecond))
	root := filepath.Join(home, ".local", "share", "llamatray", "llama-server")
	if !strings.HasPrefix(b.Path, filepath.Join(root, "b7100")+string(filepath.Separator)) || b.Version == "" {
		t.Fatalf("installed %+v", b)
	}
	if ls := svc.LlamaServer(); ls.Path != b.Path || ls.Source != "installed" || ls.Build != "b7100" {
		t.Fatalf("after the install the service uses %+v", ls)
	}
	st, err := c.Status(ctx)
	if err != nil || st.Setup == nil || st.LlamaServer.Build != "b7100" {
		t.Errorf("/api/status: %+v %v", st.Setup, err)
	}
	t0 = time.Now()
	if code, body, err := in.chat(ctx, "tiny", false, 4); code != http.StatusOK || err != nil {
		t.Fatalf("chat with the installed llama-server: %d %s %v", code, body, err)
	}
	t.Logf("first answer (load included) %s after the install", time.Since(t0).Round(time.Millisecond))
	if got := in.state("tiny").Binary; got != b.Path {
		t.Fatalf("the child runs %q, want the installed %q", got, b.Path)
	}

	// While tiny runs on b7100, install the older .zip release b7000 and then b7200: b7100 is neither
	// current nor previous at the end, but it is kept because tiny's child runs from it.
	if _, _, err := install("b7000"); err != nil {
		t.Fatal(err)
	}
	gh.Add("b7200", map[string][]byte{ghreleases.AssetName("b7200", ".tar.gz"): tgz})
	b2, _, err := install(releases.Latest)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(b.Path); err != nil {
		t.Fatalf("the build a running model uses was removed: %v", err)
	}
	if got := in.state("tiny").Binary; got != b.Path {
		t.Errorf("the running child changed binary: %s", got)
	}
	if code, _, _ := in.chat(ctx, "tiny", false, 4); code != http.StatusOK {
		t.Fatalf("chat on the old build after the update: %d", code)
	}
	if err := svc.Engine().Unload(ctx, "tiny", false); err != nil {
		t.Fatal(err)
	}
	if code, body, _ := in.chat(ctx, "tiny", false, 4); code != http.StatusOK {
		t.Fatalf("chat after the update: %d %s", code, body)
	}
	if got := in.state("tiny").Binary; got != b2.Path {
		t.Errorf("a new load runs %s, want the new build %s", got, b2.Path)
	}

	// Refused downloads leave nothing: no new build folder, no partial file.
	before := entries(t, root)
	gh.Corrupt.Store(true)
	gh.Add("b7300", map[string][]byte{ghreleases.AssetName("b7300", ".tar.gz"): tgz})
	if _, _, err := install(releases.Latest); err == nil || !strings.Contains(err.Error(), "sha256 mismatch") {
		t.Fatalf("corrupt download: %v", err)
	}
	gh.Corrupt.Store(false)
	gh.CutAt.Store(int64(len(tgz) / 2))
	if _, _, err := install(releases.Latest); err == nil || !strings.Contains(err.Error(), "download cut") || !strings.Contains(err.Error(), "stopped after") {
		t.Fatalf("cut download: %v", err)
	}
	gh.CutAt.Store(0)
	if after := entries(t, root); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("files changed by refused installs:\n before %v\n after  %v", before, after)
	}
	if ls := svc.LlamaServer(); ls.Build != "b7200" {
		t.Errorf("after refused installs the service uses %+v", ls)
	}
	t.Logf("download rate through the stand-in: %s", rate(t, gh, "b7300", ghreleases.AssetName("b7300", ".tar.gz")))
}

// TestInstallRefusedOnFullDisk gives the installer a 4 MiB tmpfs: it refuses before downloading.
func TestInstallRefusedOnFullDisk(t *testing.T) {
	real := testbed.RealLlamaServer(t)
	if runtime.GOOS != "linux" {
		t.Skip("tmpfs is Linux's")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	build, err := ghreleases.FromRelocatable(real)
	if err != nil {
		t.Fatal(err)
	}
	tgz, err := build.TarGz("b7100")
	if err != nil {
		t.Fatal(err)
	}
	gh := ghreleases.New()
	t.Cleanup(gh.Close)
	gh.Add("b7100", map[string][]byte{ghreleases.AssetName("b7100", ".tar.gz"): tgz})
	in := &releases.Installer{Client: &releases.Client{Base: gh.Base}, Store: releases.Store{Root: filepath.Join(dir, "llama-server")},
		System: func(context.Context) releases.System { return releases.System{OS: runtime.GOOS, Arch: runtime.GOARCH} }}
	_, err = in.Install(context.Background(), releases.Request{}, nil)
	if !errors.Is(err, releases.ErrDiskFull) || !strings.Contains(err.Error(), "needed") {
		t.Fatalf("err = %v, want not enough space", err)
	}
	if gh.Downloads() != 0 {
		t.Errorf("%d downloads started on a full disk", gh.Downloads())
	}
	t.Log(err)
}

// entries lists every path under root, relative, in order.
func entries(t *testing.T, root string) []string {
	var out []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
		}
		return nil
	})
	return out
}

// rate downloads an asset through the stand-in and reports MiB/s, and curl's on the same URL.
func rate(t *testing.T, gh *ghreleases.Server, tag, name string) string {
	u := strings.TrimSuffix(gh.Base, "/repos/"+ghreleases.Repo+"/releases") + "/" + ghreleases.Repo + "/releases/download/" + tag + "/" + name
	start := time.Now()
	resp, err := http.Get(u)
	if err != nil {
		return err.Error()
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	mine := float64(n) / (1 << 20) / time.Since(start).Seconds()
	out := fmt.Sprintf("Go client %.0f MiB/s", mine)
	if curl, err := exec.LookPath("curl"); err == nil {
		start = time.Now()
		if err := exec.Command(curl, "-sL", "-o", os.DevNull, u).Run(); err == nil {
			out += fmt.Sprintf(", curl %.0f MiB/s", float64(n)/(1<<20)/time.Since(start).Seconds())
		}
	}
	return out
}
