package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"time"
)

// knobs are the behaviour settings tests give a fake. They come from the
// environment (FAKE_LLAMA_<NAME>, global to every fake a test starts), then
// from an optional JSON sidecar "<model file>.fake.json" (per model), whose
// fields override the environment.
type knobs struct {
	LoadTime           time.Duration // time spent "loading"; /health is 503 meanwhile
	TokenDelay         time.Duration // time per generated token
	Tokens             int           // tokens generated per request (capped by max_tokens)
	HoldMB             int           // memory allocated and touched after load, freed while sleeping
	FailLoad           bool          // fail while loading and exit 1
	CrashAfterRequests int           // the Nth task request (and later ones) exits 3 mid-stream; 0 = never
	IgnoreSigterm      bool          // SIGTERM is recorded and otherwise ignored
	WakeTime           time.Duration // time a sleeping server takes to wake for a task
	Record             string        // file to append one JSON line per event to
	DropOpening        bool          // streams leave out their opening (Anthropic message_start, the OpenAI role chunk), as llama-server 0.7.0 does when the first token is an incomplete UTF-8 sequence
}

func defaultKnobs() knobs {
	return knobs{LoadTime: 100 * time.Millisecond, TokenDelay: 2 * time.Millisecond, Tokens: 8}
}

// sidecar is the JSON form of knobs; absent fields keep the environment's value.
type sidecar struct {
	LoadTime           *duration `json:"load_time"`
	TokenDelay         *duration `json:"token_delay"`
	Tokens             *int      `json:"tokens"`
	HoldMB             *int      `json:"hold_mb"`
	FailLoad           *bool     `json:"fail_load"`
	CrashAfterRequests *int      `json:"crash_after_requests"`
	IgnoreSigterm      *bool     `json:"ignore_sigterm"`
	WakeTime           *duration `json:"wake_time"`
	Record             *string   `json:"record"`
	DropOpening        *bool     `json:"drop_opening"`
}

// duration reads a JSON string such as "250ms" or a number of milliseconds.
type duration time.Duration

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		*d = duration(v)
		return nil
	}
	var ms float64
	if err := json.Unmarshal(b, &ms); err != nil {
		return fmt.Errorf("want a duration string like \"250ms\" or a number of milliseconds, got %s", b)
	}
	*d = duration(time.Duration(ms * float64(time.Millisecond)))
	return nil
}

// loadKnobs reads the environment, then the sidecar of modelPath.
func loadKnobs(modelPath string, getenv func(string) string) (knobs, error) {
	k := defaultKnobs()
	if err := k.fromEnv(getenv); err != nil {
		return k, err
	}
	path := modelPath + ".fake.json"
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return k, k.validate()
	}
	if err != nil {
		return k, fmt.Errorf("sidecar %s: %w", path, err)
	}
	var sc sidecar
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sc); err != nil {
		return k, fmt.Errorf("sidecar %s: %w", path, err)
	}
	k.apply(sc)
	if err := k.validate(); err != nil {
		return k, fmt.Errorf("sidecar %s: %w", path, err)
	}
	return k, nil
}

func (k *knobs) fromEnv(getenv func(string) string) error {
	var errs []error
	dur := func(name string, dst *time.Duration) {
		if v := getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", name, v, err))
			}
			*dst = d
		}
	}
	num := func(name string, dst *int) {
		if v := getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", name, v, err))
			}
			*dst = n
		}
	}
	flag := func(name string, dst *bool) {
		if v := getenv(name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", name, v, err))
			}
			*dst = b
		}
	}
	dur("FAKE_LLAMA_LOAD_TIME", &k.LoadTime)
	dur("FAKE_LLAMA_TOKEN_DELAY", &k.TokenDelay)
	num("FAKE_LLAMA_TOKENS", &k.Tokens)
	num("FAKE_LLAMA_HOLD_MB", &k.HoldMB)
	flag("FAKE_LLAMA_FAIL_LOAD", &k.FailLoad)
	num("FAKE_LLAMA_CRASH_AFTER_REQUESTS", &k.CrashAfterRequests)
	flag("FAKE_LLAMA_IGNORE_SIGTERM", &k.IgnoreSigterm)
	dur("FAKE_LLAMA_WAKE_TIME", &k.WakeTime)
	flag("FAKE_LLAMA_DROP_OPENING", &k.DropOpening)
	if v := getenv("FAKE_LLAMA_RECORD"); v != "" {
		k.Record = v
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("environment: %w", err)
	}
	return k.validate()
}

func (k *knobs) apply(sc sidecar) {
	if sc.LoadTime != nil {
		k.LoadTime = time.Duration(*sc.LoadTime)
	}
	if sc.TokenDelay != nil {
		k.TokenDelay = time.Duration(*sc.TokenDelay)
	}
	if sc.Tokens != nil {
		k.Tokens = *sc.Tokens
	}
	if sc.HoldMB != nil {
		k.HoldMB = *sc.HoldMB
	}
	if sc.FailLoad != nil {
		k.FailLoad = *sc.FailLoad
	}
	if sc.CrashAfterRequests != nil {
		k.CrashAfterRequests = *sc.CrashAfterRequests
	}
	if sc.DropOpening != nil {
		k.DropOpening = *sc.DropOpening
	}
	if sc.IgnoreSigterm != nil {
		k.IgnoreSigterm = *sc.IgnoreSigterm
	}
	if sc.WakeTime != nil {
		k.WakeTime = time.Duration(*sc.WakeTime)
	}
	if sc.Record != nil {
		k.Record = *sc.Record
	}
}

func (k knobs) validate() error {
	switch {
	case k.LoadTime < 0, k.TokenDelay < 0, k.WakeTime < 0:
		return fmt.Errorf("durations must not be negative")
	case k.Tokens < 0:
		return fmt.Errorf("tokens must not be negative")
	case k.HoldMB < 0:
		return fmt.Errorf("hold_mb must not be negative")
	case k.CrashAfterRequests < 0:
		return fmt.Errorf("crash_after_requests must not be negative")
	}
	return nil
}
