package ggufwrite

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// zeros is a shared source of zero bytes for padding and zero-filled tensors.
var zeros = make([]byte, 64<<10)

// WriteTo writes the whole file to w and returns the number of bytes written.
// Tensor bytes are streamed: Fill functions run one at a time and nothing but
// the header is held in memory. When f.Sparse is set and w is a regular
// *os.File, the tensor section is made with Truncate instead (see File.Sparse);
// the file is then cut or extended to end exactly where this file ends.
func (f *File) WriteTo(w io.Writer) (int64, error) {
	l, err := f.layout()
	if err != nil {
		return 0, fmt.Errorf("gguf layout: %w", err)
	}
	if osf, ok := w.(*os.File); ok && f.Sparse {
		if st, err := osf.Stat(); err == nil && st.Mode().IsRegular() {
			return f.writeSparse(osf, l)
		}
	}
	cw := &countingWriter{w: w}
	bw := bufio.NewWriterSize(cw, 1<<20)
	if _, err := bw.Write(f.encodeHeader(l)); err != nil {
		return cw.n, fmt.Errorf("write gguf header: %w", err)
	}
	pos := uint64(0) // position within the data section
	for i := range f.Tensors {
		if err := writeZeros(bw, l.offsets[i]-pos); err != nil {
			return cw.n, fmt.Errorf("write padding before tensor %q: %w", f.Tensors[i].Name, err)
		}
		if err := writeTensor(bw, &f.Tensors[i], l.sizes[i]); err != nil {
			return cw.n, err
		}
		pos = l.offsets[i] + l.sizes[i]
	}
	if err := writeZeros(bw, uint64(l.total-l.dataStart)-pos); err != nil {
		return cw.n, fmt.Errorf("write final padding: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return cw.n, fmt.Errorf("write gguf: %w", err)
	}
	return cw.n, nil
}

// writeSparse writes the header and any tensor that has Data or Fill at its
// offset, then sets the file's size with Truncate so that the rest reads as
// zeros without taking disk.
func (f *File) writeSparse(osf *os.File, l *layout) (int64, error) {
	base, err := osf.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, fmt.Errorf("sparse gguf: %w", err)
	}
	if _, err := osf.Write(f.encodeHeader(l)); err != nil {
		return 0, fmt.Errorf("write gguf header: %w", err)
	}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if t.Data == nil && t.Fill == nil {
			continue
		}
		if _, err := osf.Seek(base+l.dataStart+int64(l.offsets[i]), io.SeekStart); err != nil {
			return 0, fmt.Errorf("sparse gguf: tensor %q: %w", t.Name, err)
		}
		bw := bufio.NewWriterSize(osf, 1<<20)
		if err := writeTensor(bw, t, l.sizes[i]); err != nil {
			return 0, err
		}
		if err := bw.Flush(); err != nil {
			return 0, fmt.Errorf("write tensor %q: %w", t.Name, err)
		}
	}
	if err := osf.Truncate(base + l.total); err != nil {
		return 0, fmt.Errorf("sparse gguf: extend to %d bytes: %w", base+l.total, err)
	}
	if _, err := osf.Seek(base+l.total, io.SeekStart); err != nil {
		return 0, fmt.Errorf("sparse gguf: %w", err)
	}
	return l.total, nil
}

// writeTensor writes one tensor's bytes: Data, else Fill's output, else zeros.
func writeTensor(w io.Writer, t *Tensor, size uint64) error {
	switch {
	case t.Data != nil:
		if _, err := w.Write(t.Data); err != nil {
			return fmt.Errorf("write tensor %q: %w", t.Name, err)
		}
	case t.Fill != nil:
		lw := &limitWriter{w: w, left: size}
		if err := t.Fill(lw); err != nil {
			return fmt.Errorf("fill tensor %q: %w", t.Name, err)
		}
		if lw.left != 0 {
			return fmt.Errorf("fill tensor %q: wrote %d of %d bytes", t.Name, size-lw.left, size)
		}
	default:
		if err := writeZeros(w, size); err != nil {
			return fmt.Errorf("write tensor %q: %w", t.Name, err)
		}
	}
	return nil
}

func writeZeros(w io.Writer, n uint64) error {
	for n > 0 {
		c := min(n, uint64(len(zeros)))
		if _, err := w.Write(zeros[:c]); err != nil {
			return err
		}
		n -= c
	}
	return nil
}

// WriteFile writes f to path. It writes a temporary file in the same folder
// and renames it over path, so a failed write leaves any earlier file intact.
// With f.Sparse the file gets its full size through Truncate and takes almost
// no disk.
func WriteFile(path string, f *File) (err error) {
	if _, err := f.layout(); err != nil {
		return fmt.Errorf("gguf %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("gguf %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = f.WriteTo(tmp); err != nil {
		return fmt.Errorf("gguf %s: %w", path, err)
	}
	if err = tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("gguf %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("gguf %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("gguf %s: %w", path, err)
	}
	return nil
}

// countingWriter counts the bytes that reach w.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// limitWriter passes at most left bytes to w and fails past that.
type limitWriter struct {
	w    io.Writer
	left uint64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if uint64(len(p)) > l.left {
		return 0, fmt.Errorf("tensor data overflows its size by %d bytes", uint64(len(p))-l.left)
	}
	n, err := l.w.Write(p)
	l.left -= uint64(n)
	return n, err
}
