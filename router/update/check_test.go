package update

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/releases"
	"github.com/llamatray/llamatray/router/testbed/ghreleases"
)

func rel(tag string, pre bool) Release {
	v, err := ParseVersion(tag)
	if err != nil {
		panic(err)
	}
	return Release{Tag: tag, Version: v, URL: "https://example.test/releases/tag/" + tag, Prerelease: pre || v.Prerelease()}
}

func TestPick(t *testing.T) {
	rels := []Release{rel("v0.5.0-rc.1", true), rel("v0.4.0", false), rel("v0.4.1", false), rel("v0.3.0", false)}
	for _, tc := range []struct {
		name, cur  string
		pre        bool
		rels       []Release
		latest     string // "" → none
		available  bool
		build, msg string
	}{
		{name: "older", cur: "0.3.0", rels: rels, latest: "v0.4.1", available: true, build: BuildRelease,
			msg: "Llamatray 0.4.1 is available: https://example.test/releases/tag/v0.4.1"},
		{name: "newest", cur: "0.4.1", rels: rels, latest: "v0.4.1", build: BuildRelease, msg: "Llamatray 0.4.1 is the newest release"},
		{name: "v prefix", cur: "v0.4.1", rels: rels, latest: "v0.4.1", build: BuildRelease, msg: "Llamatray 0.4.1 is the newest release"},
		{name: "prerelease opted in", cur: "0.4.1", pre: true, rels: rels, latest: "v0.5.0-rc.1", available: true, build: BuildRelease,
			msg: "Llamatray 0.5.0-rc.1 is available: https://example.test/releases/tag/v0.5.0-rc.1"},
		{name: "running a prerelease, not opted in", cur: "0.5.0-rc.1", rels: rels, latest: "v0.4.1", build: BuildRelease,
			msg: "Llamatray 0.5.0-rc.1 is newer than the newest release, 0.4.1"},
		{name: "prerelease by flag only", cur: "0.4.1", rels: append([]Release{rel("v0.6.0", true)}, rels...), latest: "v0.4.1", build: BuildRelease},
		{name: "dev", cur: "dev", rels: rels, latest: "v0.4.1", build: BuildDevelopment,
			msg: "Llamatray dev is a development build, not compared with releases; the newest release is 0.4.1: https://example.test/releases/tag/v0.4.1"},
		{name: "empty version", cur: "", rels: rels, latest: "v0.4.1", build: BuildDevelopment},
		{name: "snapshot of the newest", cur: "0.4.1-SNAPSHOT-887b233", rels: rels, latest: "v0.4.1", build: BuildSnapshot},
		{name: "snapshot behind", cur: "0.4.0-SNAPSHOT-887b233", rels: rels, latest: "v0.4.1", available: true, build: BuildSnapshot},
		{name: "none published", cur: "0.4.1", build: BuildRelease, msg: "No Llamatray release is published; this is 0.4.1"},
		{name: "only prereleases, not opted in", cur: "0.4.1", rels: rels[:1], build: BuildRelease},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Pick(tc.rels, tc.cur, tc.pre)
			got := ""
			if res.Latest != nil {
				got = res.Latest.Tag
			}
			if got != tc.latest || res.Available != tc.available || res.Build != tc.build {
				t.Errorf("Pick = latest %q available %v build %s; want %q %v %s", got, res.Available, res.Build, tc.latest, tc.available, tc.build)
			}
			if tc.msg != "" && res.Message() != tc.msg {
				t.Errorf("Message() = %q\nwant        %q", res.Message(), tc.msg)
			}
		})
	}
}

// standIn is Llamatray's releases on the GitHub stand-in: v0.3.0, v0.4.0, a draft v0.9.0, a
// pre-release v0.5.0-rc.1 and a tag that is no version.
func standIn(t *testing.T) *ghreleases.Server {
	t.Helper()
	s := ghreleases.NewRepo(ghreleases.LlamatrayRepo)
	t.Cleanup(s.Close)
	for _, tag := range []string{"v0.3.0", "v0.4.0", "nightly", "v0.5.0-rc.1", "v0.9.0"} {
		s.Add(tag, map[string][]byte{"Llamatray-Setup-" + strings.TrimPrefix(tag, "v") + ".exe": []byte("MZ" + tag)})
	}
	s.SetFlags("v0.5.0-rc.1", false, true)
	s.SetFlags("v0.9.0", true, false)
	return s
}

func TestCheckAgainstStandIn(t *testing.T) {
	s := standIn(t)
	c := &Checker{releases.Client{Base: s.Base, UserAgent: "Llamatray/0.3.0"}}
	ctx := context.Background()

	res, err := c.Check(ctx, "0.3.0", false)
	if err != nil {
		t.Fatal(err)
	}
	want := "Llamatray 0.4.0 is available: " + strings.TrimSuffix(s.Base, "/repos/"+ghreleases.LlamatrayRepo+"/releases") + "/" + ghreleases.LlamatrayRepo + "/releases/tag/v0.4.0"
	if res.Message() != want {
		t.Errorf("got %q\nwant %q", res.Message(), want)
	}
	if res.CheckedAt.IsZero() {
		t.Error("CheckedAt not set")
	}
	if ua := s.LastUserAgent(); ua != "Llamatray/0.3.0" {
		t.Errorf("User-Agent %q", ua)
	}
	if res, _ := c.Check(ctx, "0.4.0", false); res.Available || res.Message() != "Llamatray 0.4.0 is the newest release" {
		t.Errorf("up to date: %q (available %v)", res.Message(), res.Available)
	}
	if res, _ := c.Check(ctx, "0.4.0", true); !res.Available || res.Latest.Tag != "v0.5.0-rc.1" {
		t.Errorf("pre-release opted in: %q", res.Message())
	}
	// The draft v0.9.0 is never offered, even to a pre-release user.
	rels, err := c.Releases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rels {
		if r.Tag == "v0.9.0" || r.Tag == "nightly" {
			t.Errorf("listed %s", r.Tag)
		}
	}
	if len(rels) != 3 {
		t.Errorf("%d releases, want 3: %+v", len(rels), rels)
	}
}

func TestURLFromEnvironment(t *testing.T) {
	s := standIn(t)
	t.Setenv(URLEnv, s.Base+"/")
	if URL() != s.Base {
		t.Fatalf("URL() = %q, want %q", URL(), s.Base)
	}
	if _, err := (&Checker{}).Check(context.Background(), "0.3.0", false); err != nil || s.Lists() != 1 {
		t.Fatalf("check through %s: %v (%d list requests)", URLEnv, err, s.Lists())
	}
	t.Setenv(URLEnv, "")
	if URL() != DefaultURL {
		t.Errorf("URL() = %q without %s", URL(), URLEnv)
	}
}

// Hostile answers each end the check with an error saying what was wrong, within its bounds.
func TestHostileAnswers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(*ghreleases.Server)
		want  string
		is    error
		// timeout is the client's: long unless the case is about it, so that what ends a case is its
		// fault, not a machine too busy to read an answer (or 1 MiB of one) in time.
		timeout time.Duration
	}{
		{name: "garbage", fault: func(s *ghreleases.Server) { b := []byte("<html>Unicorn!</html>"); s.ListBody.Store(&b) },
			want: "not a list of releases: invalid character"},
		{name: "object for a list", fault: func(s *ghreleases.Server) { b := []byte(`{"message":"hi"}`); s.ListBody.Store(&b) },
			want: "not a list of releases"},
		{name: "wrong types", fault: func(s *ghreleases.Server) { b := []byte(`[{"tag_name":7}]`); s.ListBody.Store(&b) },
			want: "not a list of releases"},
		{name: "rate limited", fault: func(s *ghreleases.Server) { s.ListStatus.Store(403) },
			want: "HTTP 403: API rate limit exceeded"},
		{name: "not found", fault: func(s *ghreleases.Server) { s.ListStatus.Store(404) }, want: "HTTP 404: Not Found"},
		{name: "endless body", fault: func(s *ghreleases.Server) { s.ListEndless.Store(true) },
			want: "the answer is too large: more than 1.0 MiB", is: releases.ErrTooLarge},
		{name: "silent server", fault: func(s *ghreleases.Server) { s.ListStall.Store(true) },
			want: "no complete answer within 300ms", is: context.DeadlineExceeded, timeout: 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := standIn(t)
			tc.fault(s)
			c := &Checker{releases.Client{Base: s.Base, Timeout: cmp.Or(tc.timeout, time.Minute), MaxBody: 1 << 20}}
			res, err := c.Check(context.Background(), "0.3.0", false)
			if err == nil {
				t.Fatalf("no error; got %q", res.Message())
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q lacks %q", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %q is not %v", err, tc.is)
			}
			if res.Available || res.Latest != nil {
				t.Errorf("a failed check reports %+v", res)
			}
		})
	}
}

// An endless answer is cut by the timeout too, when the size bound is not reached in time.
func TestEndlessBodyCutByTimeout(t *testing.T) {
	s := standIn(t)
	s.ListEndless.Store(true)
	c := &Checker{releases.Client{Base: s.Base, Timeout: 200 * time.Millisecond, MaxBody: 64 << 20}}
	_, err := c.Check(context.Background(), "0.3.0", false)
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, releases.ErrTooLarge) {
		t.Fatalf("err = %v, want the deadline", err)
	}
}

// A feed's html_url is shown only when it is https:// on the feed's own host; any other (a script,
// plain http, a custom scheme, another host) gives way to the page built from the feed and the tag.
func TestHostileLinks(t *testing.T) {
	s := standIn(t)
	host := strings.TrimPrefix(strings.TrimSuffix(s.Base, "/repos/"+ghreleases.LlamatrayRepo+"/releases"), "http://")
	built := "http://" + host + "/" + ghreleases.LlamatrayRepo + "/releases/tag/v0.4.0"
	for _, tc := range []struct{ htmlURL, want string }{
		{"javascript:alert(document.cookie)", built},
		{"JavaScript://" + host + "/%0aalert(1)", built},
		{"http://" + host + "/elsewhere", built},
		{"llamatray://install?url=https://evil.example/x.exe", built},
		{"https://evil.example/" + ghreleases.LlamatrayRepo + "/releases/tag/v0.4.0", built},
		{"https://" + host + "@evil.example/", built},
		{"https://user@" + host + "/notes", built},
		{"", built},
		{"https://" + host + "/" + ghreleases.LlamatrayRepo + "/releases/tag/v0.4.0-notes", "https://" + host + "/" + ghreleases.LlamatrayRepo + "/releases/tag/v0.4.0-notes"},
	} {
		s.SetHTMLURL("v0.4.0", tc.htmlURL)
		res, err := (&Checker{releases.Client{Base: s.Base}}).Check(context.Background(), "0.3.0", false)
		if err != nil {
			t.Fatal(err)
		}
		w := res.Wire()
		if w.URL != tc.want || !strings.HasSuffix(w.Message, ": "+tc.want) {
			t.Errorf("html_url %q: link %q, message %q; want %q", tc.htmlURL, w.URL, w.Message, tc.want)
		}
	}
}
