//go:build linux

package traytest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of utime and stime in /proc/PID/stat: USER_HZ, 100 on every Linux platform.
const userHZ = 100

// procSample is one reading of /proc/PID/stat.
type procSample struct {
	cpuTicks uint64 // utime + stime, in 1/userHZ seconds
	rss      int64  // resident set, bytes
}

func readStat(pid int) (procSample, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procSample{}, fmt.Errorf("read stat of pid %d: %w", pid, err)
	}
	// The command name (field 2) may hold spaces: the fields that follow start after its last ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procSample{}, fmt.Errorf("pid %d: malformed stat %q", pid, data)
	}
	f := strings.Fields(string(data[i+1:]))
	// f[0] is field 3 (state): utime is field 14, stime 15, rss (pages) 24.
	if len(f) < 22 {
		return procSample{}, fmt.Errorf("pid %d: stat has %d fields after the name", pid, len(f))
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	pages, err3 := strconv.ParseInt(f[21], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return procSample{}, fmt.Errorf("pid %d: unparsable stat %q", pid, data)
	}
	return procSample{cpuTicks: utime + stime, rss: pages * int64(os.Getpagesize())}, nil
}

// rssBreakdown is the "RssAnon … RssFile … RssShmem" part of /proc/PID/status, for the log.
func rssBreakdown(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err.Error()
	}
	var parts []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && (k == "RssAnon" || k == "RssFile" || k == "RssShmem") {
			parts = append(parts, k+" "+strings.TrimSpace(v))
		}
	}
	return strings.Join(parts, ", ")
}

// driverRSS is the resident part of pid's mappings of the OpenGL driver: Mesa's DRI drivers and
// the LLVM its software renderer (llvmpipe, what Xvfb gives) compiles shaders with. Its size
// depends on the machine's GPU driver, not on the app.
func driverRSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return 0, fmt.Errorf("read smaps of pid %d: %w", pid, err)
	}
	var total int64
	driver := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			// A mapping header: "start-end perms offset dev inode [path]".
			path := ""
			if len(f) >= 6 {
				path = f[5]
			}
			base := filepath.Base(path)
			driver = strings.Contains(path, "/dri/") || strings.HasPrefix(base, "libLLVM") || strings.HasPrefix(base, "libgallium")
			continue
		}
		if driver && len(f) == 3 && f[0] == "Rss:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("smaps of pid %d: %q", pid, line)
			}
			total += kb * 1024
		}
	}
	return total, nil
}

// goHeapRSS is the resident part of pid's anonymous mappings in the address range Go's allocator
// takes its heap arenas from on amd64: 0xc000000000, or since Go 1.26 a random address below 2^46
// (the mmap area where C libraries, malloc and thread stacks go is near 2^47). It is the Go heap,
// for the log.
func goHeapRSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return 0, fmt.Errorf("read smaps of pid %d: %w", pid, err)
	}
	var total int64
	inHeap := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			startHex, _, _ := strings.Cut(f[0], "-")
			start, err := strconv.ParseUint(startHex, 16, 64)
			inHeap = err == nil && start >= 1<<32 && start < 1<<46 && len(f) == 5
			continue
		}
		if inHeap && len(f) == 3 && f[0] == "Rss:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("smaps of pid %d: %q", pid, sc.Text())
			}
			total += kb * 1024
		}
	}
	return total, nil
}

// usage is what a process used over a measured period.
type usage struct {
	period     time.Duration
	cpuPercent float64 // of one core
	rssEnd     int64
	rssPeak    int64
	driverEnd  int64  // the GL driver's share of rssEnd
	appPeak    int64  // peak of RSS minus the GL driver's share
	heapEnd    int64  // the Go heap's share of rssEnd
	breakdown  string // RSS by kind at the end
}

func (u usage) String() string {
	return fmt.Sprintf("CPU %.2f%% of one core over %s; RSS %.1f MB at the end (%s), peak %.1f MB; "+
		"GL driver %.1f MB of it, Go heap %.1f MB; without the GL driver peak %.1f MB",
		u.cpuPercent, u.period.Round(time.Second), mb(u.rssEnd), u.breakdown, mb(u.rssPeak), mb(u.driverEnd),
		mb(u.heapEnd), mb(u.appPeak))
}

func mb(b int64) float64 { return float64(b) / 1e6 }

// measure reads pid's CPU time at the start and end of period, and its RSS every second.
func measure(pid int, period time.Duration) (usage, error) {
	first, err := readStat(pid)
	if err != nil {
		return usage{}, err
	}
	start := time.Now()
	drv, err := driverRSS(pid)
	if err != nil {
		return usage{}, err
	}
	peak, appPeak := first.rss, first.rss-drv
	end := time.NewTimer(period)
	defer end.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			s, err := readStat(pid)
			if err != nil {
				return usage{}, err
			}
			if drv, err = driverRSS(pid); err != nil {
				return usage{}, err
			}
			peak, appPeak = max(peak, s.rss), max(appPeak, s.rss-drv)
		case <-end.C:
			s, err := readStat(pid)
			if err != nil {
				return usage{}, err
			}
			if drv, err = driverRSS(pid); err != nil {
				return usage{}, err
			}
			heap, err := goHeapRSS(pid)
			if err != nil {
				return usage{}, err
			}
			elapsed := time.Since(start)
			return usage{
				period:     elapsed,
				cpuPercent: float64(s.cpuTicks-first.cpuTicks) / userHZ / elapsed.Seconds() * 100,
				rssEnd:     s.rss,
				rssPeak:    max(peak, s.rss),
				driverEnd:  drv,
				appPeak:    max(appPeak, s.rss-drv),
				heapEnd:    heap,
				breakdown:  rssBreakdown(pid),
			}, nil
		}
	}
}
