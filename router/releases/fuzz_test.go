package releases

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/testbed/ghreleases"
)

// FuzzUnpack unpacks any .zip (isZip) or tar (gzipped here, so that the fuzzer changes the tar's own
// headers) into a folder with a victim folder beside it. Whatever the input, unpack fails or writes
// only inside its folder: the victim and the folder's parent are as they were, every link left
// inside resolves inside, and it never panics. Seeded with the hostile archives of the stand-in.
//
//	go test -run '^$' -fuzz '^FuzzUnpack$' -fuzztime 8000x -fuzzminimizetime 200x ./router/releases/
//
// Without -fuzzminimizetime Go spends up to 60 s minimizing each new input (about 1 ms a run), so
// the first inputs it finds take a short run's whole time.
func FuzzUnpack(f *testing.F) {
	link := func(name, to string) ghreleases.Entry {
		return ghreleases.Entry{Name: name, Mode: fs.ModeSymlink | 0o777, Data: []byte(to)}
	}
	file := func(name, data string) ghreleases.Entry {
		return ghreleases.Entry{Name: name, Mode: 0o644, Data: []byte(data)}
	}
	// The victim is "../../victim" from the folder unpacked into.
	seeds := [][]ghreleases.Entry{
		{{Name: "llama-b1/", Mode: fs.ModeDir | 0o755}, file("llama-b1/llama-server", "#!/bin/sh\n"), link("llama-b1/libggml.so.0", "libggml.so"), file("llama-b1/libggml.so", "lib")},
		ghreleases.LinkChain("../../victim", "file", []byte("pwned")),
		ghreleases.HardLinkChain("../../victim", "file", []byte("pwned")),
		ghreleases.HardLinkOut(2, "victim/file", []byte("pwned")),
		ghreleases.LinkOut(4),
		ghreleases.LinkOut(2),
		{link("a", "b"), link("b", "a"), file("a/x", "loop")},
		{file("../../victim/file", "pwned"), file("/tmp/abs", "x"), file(`..\..\victim\file`, "x"), file("C:/x", "x")},
		{link("x", "../../victim"), file("x/file", "pwned")},
		{link("x", "/"), link("y", `..\..`), link("z", "")},
		{file("f", "one"), {Name: "g", HardLink: "f"}, file("g", "two"), link("f", "g"), file("f", "three")},
		{{Name: "lie", Mode: 0o644, Data: make([]byte, 4<<10), Declared: 16}},
	}
	// Bombs as .zip only: a tar seed would be as large as what it unpacks to, and slow to mutate.
	for _, bomb := range [][]ghreleases.Entry{{ghreleases.Bomb("zeros", 2<<20)}, {ghreleases.Bomb("a", 600<<10), ghreleases.Bomb("b", 600<<10)}} {
		zipped, err := ghreleases.Zip(bomb...)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(zipped, true)
	}
	for _, entries := range seeds {
		zipped, err := ghreleases.Zip(entries...)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(zipped, true)
		tgz, err := ghreleases.TarGz(entries...)
		if err != nil {
			f.Fatal(err)
		}
		gz, err := gzip.NewReader(bytes.NewReader(tgz))
		if err != nil {
			f.Fatal(err)
		}
		tarred, err := io.ReadAll(gz)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(tarred, false)
	}

	// base holds victim/file, made once, and run/, made anew for each input: the archive and out/, the
	// folder it is unpacked into.
	base := f.TempDir()
	victim := filepath.Join(base, "victim")
	vf := filepath.Join(victim, "file")
	if err := os.Mkdir(victim, 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(vf, []byte(victimText), 0o644); err != nil {
		f.Fatal(err)
	}
	if err := os.Chtimes(vf, victimTime, victimTime); err != nil {
		f.Fatal(err)
	}
	// As the file system keeps them: Windows reports other permission bits, NTFS rounds times.
	was, err := os.Stat(vf)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte, isZip bool) {
		run := filepath.Join(base, "run")
		out := filepath.Join(run, "out")
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(run)
		name := "a.zip"
		if !isZip {
			name = "a.tar.gz"
			var b bytes.Buffer
			gz, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
			gz.Write(data)
			gz.Close()
			data = b.Bytes()
		}
		archive := filepath.Join(run, name)
		if err := os.WriteFile(archive, data, 0o644); err != nil {
			t.Fatal(err)
		}

		err := unpackWithin(archive, name, out, 1<<20)

		if b, rerr := os.ReadFile(vf); rerr != nil || string(b) != victimText {
			t.Fatalf("the victim was written (%q, %v); unpack said %v", b, rerr, err)
		}
		if fi, serr := os.Stat(vf); serr != nil || !fi.ModTime().Equal(was.ModTime()) || fi.Mode() != was.Mode() {
			t.Fatalf("the victim was touched (%v, %v); unpack said %v", fi, serr, err)
		}
		if got := dirNames(t, victim); !slices.Equal(got, []string{"file"}) {
			t.Fatalf("written beside the victim: %v; unpack said %v", got, err)
		}
		if got := dirNames(t, run); !slices.Equal(got, []string{name, "out"}) {
			t.Fatalf("written beside the folder: %v; unpack said %v", got, err)
		}
		if got := dirNames(t, base); !slices.Equal(got, []string{"run", "victim"}) {
			t.Fatalf("written beside the run: %v; unpack said %v", got, err)
		}
		if err != nil {
			return
		}
		// Every link that resolves, resolves inside (checked apart from unpack's own walk).
		realOut, rerr := filepath.EvalSymlinks(out)
		if rerr != nil {
			t.Fatal(rerr)
		}
		filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.Type()&fs.ModeSymlink == 0 {
				return nil
			}
			if to, err := filepath.EvalSymlinks(p); err == nil {
				if rel, err := filepath.Rel(realOut, to); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
					t.Fatalf("unpack kept %s, which leads to %s", p, to)
				}
			}
			return nil
		})
	})
}
