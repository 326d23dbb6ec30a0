//go:build linux && !wayland && cgo

package app

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-gl/glfw/v3.3/glfw"
)

// Once Fyne's loop has ended, GLFW has closed the display and fyne.Do runs a park at once on its
// caller's goroutine: the park finds no X connection then, and never reads the closed one (which
// crashed the app in XPending as it quit).
func TestParkAfterGLFWEnded(t *testing.T) {
	if _, err := exec.LookPath("Xvfb"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("Xvfb is missing")
		}
		t.Skip("no Xvfb")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	xvfb := exec.Command("Xvfb", "-displayfd", "3", "-screen", "0", "320x240x24", "-nolisten", "tcp")
	xvfb.ExtraFiles = []*os.File{w}
	if err := xvfb.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() { xvfb.Process.Kill(); xvfb.Wait() })
	display, err := bufio.NewReader(r).ReadString('\n') // Xvfb writes the display it took once ready
	if err != nil {
		t.Fatalf("Xvfb said no display: %v", err)
	}
	t.Setenv("DISPLAY", ":"+strings.TrimSpace(display))

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := glfw.Init(); err != nil {
		t.Fatal(err)
	}
	p := newLoopPark()
	if x := p.xconn(); x.fd < 0 {
		glfw.Terminate()
		t.Fatal("no X connection while GLFW runs")
	}
	p.kick()
	if why := p.wait(time.Minute); why != wokeKick {
		t.Errorf("a kicked park ended with %d", why)
	}
	glfw.Terminate()
	if x := p.xconn(); x.fd >= 0 {
		t.Fatalf("an X connection (fd %d) after GLFW ended", x.fd)
	}
	if why := p.wait(time.Millisecond); why != wokeTimeout {
		t.Errorf("a park after GLFW ended returned %d, want its bound", why)
	}
}
