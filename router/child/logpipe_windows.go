package child

import (
	"fmt"
	"os"
)

// logReader is the read end of a child's stderr: an anonymous pipe, read by blocking reads (it is
// in no poller, so bytes written while nobody reads wake nothing).
type logReader struct{ f *os.File }

func newLogPipe() (*logReader, *os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("pipe: %w", err)
	}
	return &logReader{f: r}, w, nil
}

func (r *logReader) Read(p []byte) (int, error)  { return r.f.Read(p) }
func (r *logReader) readNow([]byte) (int, error) { return 0, errNoPeek }
func (r *logReader) kick()                       {}
func (r *logReader) stop()                       { _ = r.f.Close() }
func (r *logReader) close()                      { _ = r.f.Close() }
