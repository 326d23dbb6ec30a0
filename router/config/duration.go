package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration is a length of time in the config file and on the command line.
//
// It is written as a Go duration with a unit: "500ms", "30s", "5m", "1h30m". Two special values:
//
//   - "0" is zero. For the idle timers (idle_sleep, idle_unload) and fair_wait it means off.
//   - "-1" means never / no limit. The idle timers treat it as off like "0"; queue_timeout and
//     load_timeout treat it as "wait without a limit". It is stored as a negative Duration.
//
// Other negative values are refused, and so is a number without a unit (other than 0 and -1).
type Duration time.Duration

// Never is the stored value of "-1".
const Never = Duration(-1)

// ParseDuration parses a duration such as "30s", "5m", "1h30m", "0" or "-1".
func ParseDuration(s string) (Duration, error) {
	in := strings.TrimSpace(s)
	switch in {
	case "":
		return 0, fmt.Errorf("empty duration: write a value like \"30s\" or \"5m\"")
	case "0", "+0", "-0":
		return 0, nil
	case "-1":
		return Never, nil
	}
	if _, err := strconv.ParseFloat(in, 64); err == nil {
		return 0, fmt.Errorf("invalid duration %q: add a unit, like \"%ss\" or \"%sm\" (only 0 and -1 go without one)", s, in, in)
	}
	d, err := time.ParseDuration(in)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: use a number with a unit (ms, s, m, h), like \"30s\" or \"1h30m\"", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("invalid duration %q: negative durations are not allowed; use \"-1\" for never", s)
	}
	return Duration(d), nil
}

// Std returns the value as a time.Duration (Never is negative).
func (d Duration) Std() time.Duration { return time.Duration(d) }

// String formats the duration compactly ("5m", "1h30m", "1m30s", "250ms"); zero is "0" and
// negative values are "-1". The result parses back to the same value with ParseDuration.
func (d Duration) String() string {
	switch {
	case d == 0:
		return "0"
	case d < 0:
		return "-1"
	case d%Duration(time.Second) != 0:
		return time.Duration(d).String()
	}
	var b strings.Builder
	t := time.Duration(d)
	if h := t / time.Hour; h > 0 {
		b.WriteString(strconv.FormatInt(int64(h), 10) + "h")
		t -= h * time.Hour
	}
	if m := t / time.Minute; m > 0 {
		b.WriteString(strconv.FormatInt(int64(m), 10) + "m")
		t -= m * time.Minute
	}
	if s := t / time.Second; s > 0 {
		b.WriteString(strconv.FormatInt(int64(s), 10) + "s")
	}
	return b.String()
}

// MarshalText writes the duration as String does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads a duration as ParseDuration does.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// Set implements flag.Value.
func (d *Duration) Set(v string) error { return d.UnmarshalText([]byte(v)) }
