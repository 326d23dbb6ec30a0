package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseArgs(t *testing.T) {
	tests := map[string]struct {
		args    []string
		want    func(o options) bool
		wantErr string
	}{
		"defaults": {
			args: []string{"-m", "x.gguf"},
			want: func(o options) bool {
				return o.model == "x.gguf" && o.host == "127.0.0.1" && o.port == 8080 && o.parallel == -1 && o.sleepIdle == 0
			},
		},
		"long forms and = values": {
			args: []string{"--model=x.gguf", "--host", "0.0.0.0", "--port=9000", "--ctx-size", "8192", "--alias", "a, b", "--mmproj", "p.gguf", "--parallel", "2", "--n-gpu-layers", "99"},
			want: func(o options) bool {
				return o.host == "0.0.0.0" && o.port == 9000 && o.ctxSize == 8192 && reflect.DeepEqual(o.aliases, []string{"a", "b"}) &&
					o.mmproj == "p.gguf" && o.parallel == 2 && o.gpuLayers == "99"
			},
		},
		"short forms": {
			args: []string{"-m", "x", "-c", "512", "-np", "3", "-ngl", "all", "-fa", "on", "-a", "q"},
			want: func(o options) bool {
				return o.ctxSize == 512 && o.parallel == 3 && o.gpuLayers == "all" && o.flashAttn == "on" && o.aliases[0] == "q"
			},
		},
		"bare -fa before another flag": {
			args: []string{"-m", "x", "-fa", "--port", "1"},
			want: func(o options) bool { return o.flashAttn == "on" && o.port == 1 },
		},
		"unknown flags consume values but not flags": {
			args: []string{"--jinja", "-m", "x", "--seed", "-1", "--temp", "0.7", "--no-mmap", "--port", "7"},
			want: func(o options) bool {
				return o.port == 7 && reflect.DeepEqual(o.ignored, []string{"--jinja", "--seed", "-1", "--temp", "0.7", "--no-mmap"})
			},
		},
		"sleep seconds, fractional": {
			args: []string{"-m", "x", "--sleep-idle-seconds", "0.5"},
			want: func(o options) bool { return o.sleepIdle == 500*time.Millisecond },
		},
		"log format switches": {
			args: []string{"-m", "x", "--no-log-prefix", "--no-log-timestamps"},
			want: func(o options) bool { return !o.logPrefix && !o.logTimes },
		},
		"log format defaults on": {
			args: []string{"-m", "x"},
			want: func(o options) bool { return o.logPrefix && o.logTimes },
		},
		"fit on by default": {args: []string{"-m", "x"}, want: func(o options) bool { return o.fit && o.fitTarget == nil }},
		"fit targets per device": {
			args: []string{"-m", "x", "--fit", "off", "-fitt", "512,2048"},
			want: func(o options) bool { return !o.fit && reflect.DeepEqual(o.fitTarget, []int64{512 << 20, 2048 << 20}) },
		},
		"bad fit target":         {args: []string{"-m", "x", "--fit-target", "1G"}, wantErr: "invalid fit target"},
		"sleep -1 is off":        {args: []string{"-m", "x", "--sleep-idle-seconds", "-1"}, want: func(o options) bool { return o.sleepIdle == 0 }},
		"version needs no model": {args: []string{"--version"}, want: func(o options) bool { return o.version }},
		"model required":         {args: []string{"--port", "1"}, wantErr: "--model is required"},
		"missing value":          {args: []string{"-m"}, wantErr: "expected value for argument -m"},
		"bad port":               {args: []string{"-m", "x", "--port", "http"}, wantErr: "invalid port"},
		"sleep zero":             {args: []string{"-m", "x", "--sleep-idle-seconds", "0"}, wantErr: "cannot be 0"},
		"positional":             {args: []string{"x.gguf"}, wantErr: "unexpected argument"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o, err := parseArgs(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.want(o) {
				t.Fatalf("options = %+v", o)
			}
		})
	}
}

func TestLoadKnobs(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "m.gguf")
	env := map[string]string{"FAKE_LLAMA_TOKENS": "5", "FAKE_LLAMA_LOAD_TIME": "1s", "FAKE_LLAMA_IGNORE_SIGTERM": "true"}
	getenv := func(k string) string { return env[k] }

	k, err := loadKnobs(model, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if k.Tokens != 5 || k.LoadTime != time.Second || !k.IgnoreSigterm || k.TokenDelay != 2*time.Millisecond {
		t.Fatalf("env knobs = %+v", k)
	}

	os.WriteFile(model+".fake.json", []byte(`{"tokens": 2, "load_time": 250, "wake_time": "3s", "ignore_sigterm": false}`), 0o644)
	k, err = loadKnobs(model, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if k.Tokens != 2 || k.LoadTime != 250*time.Millisecond || k.WakeTime != 3*time.Second || k.IgnoreSigterm {
		t.Fatalf("sidecar knobs = %+v", k)
	}

	for body, want := range map[string]string{
		`{"tokens": -1}`:        "must not be negative",
		`{"load_time": "soon"}`: "invalid duration",
		`{"record": 5}`:         "cannot unmarshal",
		`{"tokens": 1`:          "unexpected EOF",
	} {
		os.WriteFile(model+".fake.json", []byte(body), 0o644)
		if _, err := loadKnobs(model, getenv); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "m.gguf.fake.json") {
			t.Errorf("sidecar %s: err = %v, want %q naming the file", body, err, want)
		}
	}
	env["FAKE_LLAMA_TOKEN_DELAY"] = "fast"
	os.Remove(model + ".fake.json")
	if _, err := loadKnobs(model, getenv); err == nil || !strings.Contains(err.Error(), "FAKE_LLAMA_TOKEN_DELAY") {
		t.Errorf("bad env: err = %v", err)
	}
}

func TestTokenizeRoundTrip(t *testing.T) {
	for _, text := range []string{"", "a", "abcd", "Hello, llama! ünïcode ✓"} {
		ids := tokenize(text)
		if want := (len(text) + 3) / 4; len(ids) != want {
			t.Errorf("tokenize(%q) gave %d tokens, want %d", text, len(ids), want)
		}
		back, err := detokenize(ids)
		if err != nil || back != text {
			t.Errorf("detokenize(tokenize(%q)) = %q, %v", text, back, err)
		}
	}
	if _, err := detokenize([]int{-1}); err == nil {
		t.Error("negative token id accepted")
	}
}

func TestPredictCount(t *testing.T) {
	s := &server{kn: knobs{Tokens: 8}}
	tests := []struct {
		body   map[string]any
		n      int
		reason string
	}{
		{map[string]any{}, 8, "stop"},
		{map[string]any{"max_tokens": 3.0}, 3, "length"},
		{map[string]any{"max_tokens": 30.0}, 8, "stop"},
		{map[string]any{"n_predict": -1.0, "max_tokens": 2.0}, 2, "length"},
		{map[string]any{"max_completion_tokens": 1.0, "max_tokens": 5.0}, 1, "length"},
	}
	for _, tc := range tests {
		n, reason := s.predictCount(tc.body, "max_completion_tokens", "max_tokens", "n_predict")
		if n != tc.n || reason != tc.reason {
			t.Errorf("predictCount(%v) = %d %s, want %d %s", tc.body, n, reason, tc.n, tc.reason)
		}
	}
}

func TestOrderedJSON(t *testing.T) {
	got, err := marshal(obj{{"state", "loading"}, {"payload", obj{{"value", float(0)}, {"half", float(0.5)}, {"one", float(1)}, {"text", "<a&b>"}}}, {"null", nil}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"state":"loading","payload":{"value":0.0,"half":0.5,"one":1.0,"text":"<a&b>"},"null":null}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
