package config

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
)

// Size is an amount of memory in bytes, written in the config file and on the command line as a
// number of bytes or a number with a unit (ParseSize): KiB, MiB, GiB, TiB and K, M, G, T are powers
// of 1024; KB, MB, GB, TB of 1000. Units are case-insensitive and may follow a space.
type Size int64

// The binary units.
const (
	KiB Size = 1 << 10
	MiB Size = 1 << 20
	GiB Size = 1 << 30
	TiB Size = 1 << 40
)

var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1 << 10, "ki": 1 << 10, "kib": 1 << 10, "kb": 1e3,
	"m": 1 << 20, "mi": 1 << 20, "mib": 1 << 20, "mb": 1e6,
	"g": 1 << 30, "gi": 1 << 30, "gib": 1 << 30, "gb": 1e9,
	"t": 1 << 40, "ti": 1 << 40, "tib": 1 << 40, "tb": 1e12,
}

// ParseSize parses a size such as "6GiB", "512MiB", "8GB", "1.5G" or "0". Fractions are allowed
// with a unit and round down to whole bytes; negative sizes are refused.
func ParseSize(s string) (Size, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return 0, errors.New("empty size: write a number of bytes or a value like \"6GiB\"")
	}
	i := 0
	for i < len(in) && (in[i] >= '0' && in[i] <= '9' || in[i] == '.' || in[i] == '_') {
		i++
	}
	num := strings.ReplaceAll(in[:i], "_", "")
	unit := strings.ToLower(strings.TrimSpace(in[i:]))
	if strings.HasPrefix(in, "-") {
		return 0, fmt.Errorf("invalid size %q: sizes cannot be negative", s)
	}
	if num == "" || num == "." || strings.Count(num, ".") > 1 {
		return 0, fmt.Errorf("invalid size %q: expected a number such as \"6GiB\" or \"512MiB\"", s)
	}
	mult, ok := sizeUnits[unit]
	if !ok {
		return 0, fmt.Errorf("invalid size %q: unknown unit %q (use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)", s, strings.TrimSpace(in[i:]))
	}
	if mult == 1 && strings.Contains(num, ".") {
		return 0, fmt.Errorf("invalid size %q: a number of bytes must be whole", s)
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, fmt.Errorf("invalid size %q: expected a number such as \"1.5GiB\"", s)
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	q := new(big.Int).Quo(r.Num(), r.Denom())
	if !q.IsInt64() {
		return 0, fmt.Errorf("invalid size %q: too large", s)
	}
	return Size(q.Int64()), nil
}

// String formats the size in the largest binary unit that holds it exactly ("6GiB", "512MiB"),
// else as a plain number of bytes. The result parses back to the same value with ParseSize.
func (s Size) String() string {
	if s < 0 {
		return strconv.FormatInt(int64(s), 10)
	}
	for _, u := range []struct {
		n    Size
		name string
	}{{TiB, "TiB"}, {GiB, "GiB"}, {MiB, "MiB"}, {KiB, "KiB"}} {
		if s >= u.n && s%u.n == 0 {
			return strconv.FormatInt(int64(s/u.n), 10) + u.name
		}
	}
	return strconv.FormatInt(int64(s), 10)
}

// MarshalText writes the size as String does.
func (s Size) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a size as ParseSize does.
func (s *Size) UnmarshalText(b []byte) error {
	v, err := ParseSize(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Set implements flag.Value.
func (s *Size) Set(v string) error { return s.UnmarshalText([]byte(v)) }

// HumanSize writes a byte count for people in the binary units the configuration takes: "512 B",
// "812 MiB", "4.1 GiB", "16 GiB" — one decimal below 10, none from 10 up. It is the one size
// format of Llamatray's output (the CLI, the tray and the windows).
func HumanSize(n int64) string {
	if n < 0 {
		return "-" + HumanSize(-n)
	}
	if n < int64(KiB) {
		return strconv.FormatInt(n, 10) + " B"
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v, i := float64(n)/1024, 0
	for i < len(units)-1 && v >= 1023.5 { // 1023.5 MiB would print as "1024 MiB": say 1.0 GiB
		v /= 1024
		i++
	}
	if v < 9.95 { // 9.96 would print as "10.0"
		return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[i]
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + " " + units[i]
}

// Duration is a length of time in the config file and on the command line, a Go duration with a
// unit ("500ms", "1h30m"), or "0" (off, for the idle timers and fair_wait), or "-1" (Never: off
// for the idle timers, no limit for queue_timeout and load_timeout). Other negative values and
// numbers without a unit are refused.
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
