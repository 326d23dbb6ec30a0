package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/llamatray/llamatray/router/catalog"
)

// ImportMode says how a model file is brought into the models folder.
type ImportMode int

// The ways to add a model file.
const (
	ImportLink ImportMode = iota // hard link, else symbolic link: instant, no extra disk space
	ImportCopy                   // a full copy, with progress
)

// modelFiles returns the files that make up the model at path: the file itself, or every part of a
// split GGUF (all must be present).
func modelFiles(path string) ([]string, error) {
	if !strings.EqualFold(filepath.Ext(path), ".gguf") {
		return nil, fmt.Errorf("%s is not a .gguf file", filepath.Base(path))
	}
	if err := catalog.CheckGGUF(path); err != nil {
		return nil, err
	}
	parts := catalog.ShardPaths(path)
	if len(parts) == 1 {
		return parts, nil
	}
	for i, p := range parts {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("%s is part of a split model but part %d of %d is missing: %w", filepath.Base(path), i+1, len(parts), err)
		}
	}
	return parts, nil
}

// ImportModel brings the model at src (every part, for a split model) into dstDir by link or copy,
// and returns the destination of src. A file already in dstDir under the same name is an error,
// unless it is the very same file. Copies go to a temporary name first, so a cancelled or failed
// copy leaves nothing behind; progress is called with the bytes copied so far and the total.
func ImportModel(ctx context.Context, src, dstDir string, mode ImportMode, progress func(done, total int64)) (string, error) {
	files, err := modelFiles(src)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dstDir, 0o755); err != nil {
		return "", fmt.Errorf("create the models folder: %w", err)
	}
	var total int64
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			return "", err
		}
		total += st.Size()
		dst := filepath.Join(dstDir, filepath.Base(f))
		if dstSt, err := os.Stat(dst); err == nil {
			if os.SameFile(st, dstSt) {
				continue
			}
			return "", fmt.Errorf("%s already exists in %s", filepath.Base(f), dstDir)
		}
	}
	if progress == nil {
		progress = func(int64, int64) {}
	}
	var done int64
	var made []string // destinations created so far, removed if a later part fails
	for _, f := range files {
		dst := filepath.Join(dstDir, filepath.Base(f))
		if _, err := os.Stat(dst); err == nil {
			continue // the same file, checked above
		}
		var err error
		if mode == ImportLink {
			err = linkFile(f, dst)
		} else {
			err = copyFile(ctx, f, dst, func(n int64) { progress(done+n, total) })
		}
		if err != nil {
			for _, m := range made {
				os.Remove(m)
			}
			return "", err
		}
		made = append(made, dst)
		st, _ := os.Stat(f)
		done += st.Size()
		progress(done, total)
	}
	return filepath.Join(dstDir, filepath.Base(src)), nil
}

// linkFile hard-links src to dst, or, across file systems, makes dst a symbolic link to src.
func linkFile(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	abs, err := filepath.Abs(src)
	if err != nil {
		return err
	}
	if err := os.Symlink(abs, dst); err != nil {
		return fmt.Errorf("link %s into the models folder: %w", filepath.Base(src), err)
	}
	return nil
}

// copyFile copies src to dst through dst.partial, calling progress with the bytes copied.
func copyFile(ctx context.Context, src, dst string, progress func(int64)) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := copyInto(ctx, in, dst, progress); err != nil {
		return fmt.Errorf("copy %s: %w", filepath.Base(src), err)
	}
	return nil
}

// copyInto writes what in has to dst.partial, calling progress with the bytes written, and renames
// it dst once it is all on disk; on a failure, or ctx ending, dst.partial is removed.
func copyInto(ctx context.Context, in io.Reader, dst string, progress func(int64)) (err error) {
	tmp := dst + ".partial"
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		// left by an earlier copy that did not finish
		os.Remove(tmp)
		out, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			out.Close()
			os.Remove(tmp)
		}
	}()
	buf := make([]byte, 4<<20)
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, rerr := in.Read(buf)
		if r > 0 {
			if _, err := out.Write(buf[:r]); err != nil {
				return err
			}
			n += int64(r)
			progress(n)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return rerr
		}
	}
	if err := out.Sync(); err != nil {
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// modelFilesToDelete returns the files of the model at path (all parts of a split model), for
// Delete; unlike modelFiles it does not insist that every part is present.
func modelFilesToDelete(path string) []string {
	parts := catalog.ShardPaths(path)
	if len(parts) == 1 {
		return parts
	}
	var out []string
	for _, p := range parts {
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}
