package locate

import (
	"errors"
	"io/fs"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fakeInfo is a file in a fakeMachine.
type fakeInfo struct {
	name string
	mode fs.FileMode
}

func (f fakeInfo) Name() string       { return f.name }
func (f fakeInfo) Size() int64        { return 1 }
func (f fakeInfo) Mode() fs.FileMode  { return f.mode }
func (f fakeInfo) ModTime() time.Time { return time.Time{} }
func (f fakeInfo) IsDir() bool        { return f.mode.IsDir() }
func (f fakeInfo) Sys() any           { return nil }

// fakeMachine describes a machine for the search: its files, environment and PATH.
type fakeMachine struct {
	goos  string
	exe   string
	home  string
	env   map[string]string
	path  []string               // PATH folders, searched by LookPath
	files map[string]fs.FileMode // path → mode; fs.ModeDir for folders
}

const (
	exe = 0o755
	doc = 0o644
	dir = fs.ModeDir | 0o755
)

func (m fakeMachine) envFor() Env {
	e := Env{GOOS: m.goos, HomeDir: m.home}
	e.Getenv = func(k string) string { return m.env[k] }
	e.Executable = func() (string, error) {
		if m.exe == "" {
			return "", errors.New("no executable path")
		}
		return m.exe, nil
	}
	e.Stat = func(p string) (fs.FileInfo, error) {
		mode, ok := m.files[p]
		if !ok {
			return nil, &fs.PathError{Op: "stat", Path: p, Err: fs.ErrNotExist}
		}
		return fakeInfo{name: p, mode: mode}, nil
	}
	e.LookPath = func(name string) (string, error) {
		for _, d := range m.path {
			p := e.join(d, name)
			if mode, ok := m.files[p]; ok && !mode.IsDir() && (m.goos == "windows" || mode&0o111 != 0) {
				return p, nil
			}
		}
		return "", errors.New("executable file not found in $PATH")
	}
	return e
}

func TestPlacesOrder(t *testing.T) {
	cases := []struct {
		name string
		m    fakeMachine
		want []string
	}{
		{
			name: "linux",
			m:    fakeMachine{goos: "linux", exe: "/opt/llamatray/llamatray", home: "/home/ann"},
			want: []string{
				"bundled:/opt/llamatray/llama-server",
				"bundled:/opt/llamatray/llama-server/llama-server",
				"PATH:llama-server",
				"homebrew:/home/linuxbrew/.linuxbrew/bin/llama-server",
				"system:/usr/local/bin/llama-server",
				"user:/home/ann/.local/bin/llama-server",
				"system:/usr/bin/llama-server",
			},
		},
		{
			name: "macOS app bundle",
			m:    fakeMachine{goos: "darwin", exe: "/Applications/Llamatray.app/Contents/MacOS/llamatray", home: "/Users/ann"},
			want: []string{
				"bundled:/Applications/Llamatray.app/Contents/MacOS/llama-server",
				"bundled:/Applications/Llamatray.app/Contents/MacOS/llama-server/llama-server",
				"bundled:/Applications/Llamatray.app/Contents/Resources/llama-server/llama-server",
				"PATH:llama-server",
				"homebrew:/opt/homebrew/bin/llama-server",
				"homebrew:/usr/local/bin/llama-server",
				"user:/Users/ann/.local/bin/llama-server",
				"system:/usr/bin/llama-server",
			},
		},
		{
			name: "macOS outside a bundle",
			m:    fakeMachine{goos: "darwin", exe: "/Users/ann/go/bin/llamatray"},
			want: []string{
				"bundled:/Users/ann/go/bin/llama-server",
				"bundled:/Users/ann/go/bin/llama-server/llama-server",
				"PATH:llama-server",
				"homebrew:/opt/homebrew/bin/llama-server",
				"homebrew:/usr/local/bin/llama-server",
				"system:/usr/bin/llama-server",
			},
		},
		{
			name: "windows",
			m: fakeMachine{
				goos: "windows", exe: `C:\Users\ann\AppData\Local\Programs\Llamatray\llamatray.exe`, home: `C:\Users\ann`,
				env: map[string]string{"LOCALAPPDATA": `C:\Users\ann\AppData\Local`, "ProgramFiles": `C:\Program Files`},
			},
			want: []string{
				`bundled:C:\Users\ann\AppData\Local\Programs\Llamatray\llama-server.exe`,
				`bundled:C:\Users\ann\AppData\Local\Programs\Llamatray\llama-server\llama-server.exe`,
				"PATH:llama-server.exe",
				`winget:C:\Users\ann\AppData\Local\Microsoft\WinGet\Links\llama-server.exe`,
				`winget:C:\Program Files\WinGet\Links\llama-server.exe`,
			},
		},
		{
			name: "no executable path, no home",
			m:    fakeMachine{goos: "freebsd"},
			want: []string{"PATH:llama-server", "system:/usr/local/bin/llama-server", "system:/usr/bin/llama-server"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range places(tc.m.envFor()) {
				got = append(got, p.source+":"+p.path)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("places:\n got  %q\n want %q", got, tc.want)
			}
		})
	}
}

func TestCandidates(t *testing.T) {
	linux := func(files map[string]fs.FileMode, env map[string]string, path ...string) fakeMachine {
		return fakeMachine{goos: "linux", exe: "/opt/lt/llamatray", home: "/home/ann", env: env, path: path, files: files}
	}
	cases := []struct {
		name       string
		m          fakeMachine
		configured string
		want       []string // source:path of each candidate, in order
		wantErr    string   // substring of the error; "" = no error
		notExist   bool     // the error wraps fs.ErrNotExist
	}{
		{
			name: "nothing installed",
			m:    linux(nil, nil, "/usr/bin"),
		},
		{
			name: "every spot, in order, PATH duplicate dropped",
			m: linux(map[string]fs.FileMode{
				"/opt/lt/llama-server":                 exe,
				"/usr/bin/llama-server":                exe,
				"/usr/local/bin/llama-server":          exe,
				"/home/ann/.local/bin/llama-server":    exe,
				"/home/linuxbrew/.linuxbrew/bin/other": exe,
			}, nil, "/usr/bin"),
			want: []string{
				"bundled:/opt/lt/llama-server",
				"PATH:/usr/bin/llama-server",
				"system:/usr/local/bin/llama-server",
				"user:/home/ann/.local/bin/llama-server",
			},
		},
		{
			name: "bundled folder with its libraries",
			m: linux(map[string]fs.FileMode{
				"/opt/lt/llama-server":              dir,
				"/opt/lt/llama-server/llama-server": exe,
			}, nil),
			want: []string{"bundled:/opt/lt/llama-server/llama-server"},
		},
		{
			name: "not executable and folders are skipped",
			m: linux(map[string]fs.FileMode{
				"/usr/local/bin/llama-server":       doc,
				"/home/ann/.local/bin/llama-server": dir,
				"/usr/bin/llama-server":             exe,
			}, nil),
			want: []string{"system:/usr/bin/llama-server"},
		},
		{
			name: "configured file wins over everything",
			m: linux(map[string]fs.FileMode{
				"/srv/llama/llama-server": exe,
				"/usr/bin/llama-server":   exe,
			}, map[string]string{"LLAMA_SERVER": "/usr/bin/llama-server"}, "/usr/bin"),
			configured: "/srv/llama/llama-server",
			want:       []string{"config:/srv/llama/llama-server"},
		},
		{
			name:       "configured missing is an error naming it",
			m:          linux(map[string]fs.FileMode{"/usr/bin/llama-server": exe}, nil, "/usr/bin"),
			configured: "/srv/gone/llama-server",
			wantErr:    `configured llama-server "/srv/gone/llama-server" does not exist`,
			notExist:   true,
		},
		{
			name:       "configured not executable",
			m:          linux(map[string]fs.FileMode{"/srv/llama-server": doc}, nil),
			configured: "/srv/llama-server",
			wantErr:    `configured llama-server "/srv/llama-server" is not executable`,
		},
		{
			name: "configured folder",
			m: linux(map[string]fs.FileMode{
				"/srv/llama.cpp":                  dir,
				"/srv/llama.cpp/bin":              dir,
				"/srv/llama.cpp/bin/llama-server": exe,
			}, nil),
			configured: "/srv/llama.cpp",
			want:       []string{"config:/srv/llama.cpp/bin/llama-server"},
		},
		{
			name:       "configured folder without llama-server",
			m:          linux(map[string]fs.FileMode{"/srv/empty": dir}, nil),
			configured: "/srv/empty",
			wantErr:    `configured llama-server "/srv/empty" is a folder without llama-server in it`,
			notExist:   true,
		},
		{
			name:       "configured under home",
			m:          linux(map[string]fs.FileMode{"/home/ann/llama/llama-server": exe}, nil),
			configured: "~/llama/llama-server",
			want:       []string{"config:/home/ann/llama/llama-server"},
		},
		{
			name:       "configured bare name is looked up in PATH",
			m:          linux(map[string]fs.FileMode{"/usr/local/bin/llama-server-vulkan": exe}, nil, "/usr/bin", "/usr/local/bin"),
			configured: "llama-server-vulkan",
			want:       []string{"config:/usr/local/bin/llama-server-vulkan"},
		},
		{
			name:       "configured bare name not in PATH",
			m:          linux(nil, nil, "/usr/bin"),
			configured: "llama-server-cuda",
			wantErr:    `configured llama-server "llama-server-cuda" is not in PATH`,
		},
		{
			name: "LLAMA_SERVER when nothing is configured",
			m: linux(map[string]fs.FileMode{
				"/srv/b/llama-server":   exe,
				"/usr/bin/llama-server": exe,
			}, map[string]string{"LLAMA_SERVER": "/srv/b/llama-server"}, "/usr/bin"),
			want: []string{"env:/srv/b/llama-server"},
		},
		{
			name:     "LLAMA_SERVER missing is an error naming it",
			m:        linux(map[string]fs.FileMode{"/usr/bin/llama-server": exe}, map[string]string{"LLAMA_SERVER": "/srv/x"}),
			wantErr:  `llama-server from $LLAMA_SERVER "/srv/x" does not exist`,
			notExist: true,
		},
		{
			name: "macOS bundle before Homebrew",
			m: fakeMachine{goos: "darwin", exe: "/Applications/Llamatray.app/Contents/MacOS/llamatray", files: map[string]fs.FileMode{
				"/Applications/Llamatray.app/Contents/Resources/llama-server/llama-server": exe,
				"/opt/homebrew/bin/llama-server":                                           exe,
			}},
			want: []string{
				"bundled:/Applications/Llamatray.app/Contents/Resources/llama-server/llama-server",
				"homebrew:/opt/homebrew/bin/llama-server",
			},
		},
		{
			name: "macOS Homebrew when PATH is a desktop one",
			m: fakeMachine{goos: "darwin", exe: "/Applications/Llamatray.app/Contents/MacOS/llamatray", home: "/Users/ann",
				path: []string{"/usr/bin", "/bin"}, files: map[string]fs.FileMode{
					"/usr/local/bin/llama-server": exe,
				}},
			want: []string{"homebrew:/usr/local/bin/llama-server"},
		},
		{
			name: "windows: bundled folder, then PATH, then WinGet",
			m: fakeMachine{goos: "windows", exe: `C:\Apps\Llamatray\llamatray.exe`,
				env:  map[string]string{"LOCALAPPDATA": `C:\Users\ann\AppData\Local`},
				path: []string{`C:\llama`},
				files: map[string]fs.FileMode{
					`C:\Apps\Llamatray\llama-server`:                                          dir,
					`C:\Apps\Llamatray\llama-server\llama-server.exe`:                         doc, // no x bit on Windows
					`C:\llama\llama-server.exe`:                                               doc,
					`C:\Users\ann\AppData\Local\Microsoft\WinGet\Links\llama-server.exe`:      doc,
					`C:\Users\ann\AppData\Local\Microsoft\WinGet\Links\llama-server-cuda.exe`: doc,
				}},
			want: []string{
				`bundled:C:\Apps\Llamatray\llama-server\llama-server.exe`,
				`PATH:C:\llama\llama-server.exe`,
				`winget:C:\Users\ann\AppData\Local\Microsoft\WinGet\Links\llama-server.exe`,
			},
		},
		{
			name: "windows: configured without .exe",
			m: fakeMachine{goos: "windows", exe: `C:\Apps\Llamatray\llamatray.exe`,
				files: map[string]fs.FileMode{`C:\llama\llama-server.exe`: doc}},
			configured: `C:\llama\llama-server`,
			want:       []string{`config:C:\llama\llama-server.exe`},
		},
		{
			name: "windows: duplicates differing in case are dropped",
			m: fakeMachine{goos: "windows", exe: `C:\llama\llamatray.exe`, path: []string{`c:\LLAMA`},
				files: map[string]fs.FileMode{`C:\llama\llama-server.exe`: doc, `c:\LLAMA\llama-server.exe`: doc}},
			want: []string{`bundled:C:\llama\llama-server.exe`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			found, searched, err := Candidates(tc.m.envFor(), tc.configured)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				var ce *ChosenError
				if !errors.As(err, &ce) {
					t.Errorf("error %T is not a *ChosenError", err)
				}
				if tc.notExist != errors.Is(err, fs.ErrNotExist) {
					t.Errorf("errors.Is(err, fs.ErrNotExist) = %v, want %v", !tc.notExist, tc.notExist)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			var got []string
			for _, c := range found {
				got = append(got, c.Source+":"+c.Path)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("candidates:\n got  %q\n want %q", got, tc.want)
			}
			if len(searched) == 0 {
				t.Error("searched is empty")
			}
		})
	}
}

func TestInstallHint(t *testing.T) {
	for goos, want := range map[string][]string{
		"darwin":  {"brew install llama.cpp"},
		"windows": {"winget install llama.cpp"},
		"linux":   {"apt install llama.cpp-tools", "unstable", "dnf install llama-cpp", "AUR", "brew install llama.cpp"},
		"freebsd": {},
	} {
		h := installHint(goos)
		for _, w := range append(want, ReleasesURL, "llamatray llama-server install") {
			if !strings.Contains(h, w) {
				t.Errorf("%s hint lacks %q:\n%s", goos, w, h)
			}
		}
	}
	if InstallHint() == "" {
		t.Error("InstallHint is empty")
	}
}
