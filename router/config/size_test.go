package config

import (
	"strings"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want Size
	}{
		{"0", 0},
		{"1024", 1024},
		{"6GiB", 6 * GiB},
		{"6 GiB", 6 * GiB},
		{"6gib", 6 * GiB},
		{"512MiB", 512 * MiB},
		{"512M", 512 * MiB},
		{"8GB", 8_000_000_000},
		{"8gb", 8_000_000_000},
		{"1.5G", GiB + GiB/2},
		{"1.5GiB", GiB + GiB/2},
		{"0.5KiB", 512},
		{"1.3MiB", 1363148}, // 1363148.8 rounds down
		{"2TiB", 2 * TiB},
		{"3TB", 3_000_000_000_000},
		{"10KB", 10_000},
		{"10K", 10 * KiB},
		{"7B", 7},
		{"  64MiB  ", 64 * MiB},
		{"8388607TiB", 8388607 * TiB},
		{"9223372036854775807", 1<<63 - 1},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if err != nil {
			t.Errorf("ParseSize(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseSize(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestParseSizeErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "empty size"},
		{"   ", "empty size"},
		{"-1", "cannot be negative"},
		{"-5GiB", "cannot be negative"},
		{"GiB", "expected a number"},
		{"6XB", `unknown unit "XB"`},
		{"6 gigs", `unknown unit "gigs"`},
		{"1.5", "must be whole"},
		{"1..5G", "expected a number"},
		{".", "expected a number"},
		{"1e9", `unknown unit "e9"`},
		{"8388608TiB", "too large"},
		{"99999999999999999999", "too large"},
		{"9999999999999999.5TiB", "too large"},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if err == nil {
			t.Errorf("ParseSize(%q) = %d, want error containing %q", tt.in, got, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseSize(%q) error %q, want it to contain %q", tt.in, err, tt.want)
		}
	}
}

func TestSizeString(t *testing.T) {
	tests := []struct {
		in   Size
		want string
	}{
		{0, "0"},
		{1, "1"},
		{1023, "1023"},
		{KiB, "1KiB"},
		{6 * GiB, "6GiB"},
		{GiB + GiB/2, "1536MiB"},
		{64 * MiB, "64MiB"},
		{3 * TiB, "3TiB"},
		{1363148, "1363148"},
		{8_000_000_000, "7812500KiB"},
		{-5, "-5"},
	}
	for _, tt := range tests {
		if got := tt.in.String(); got != tt.want {
			t.Errorf("Size(%d).String() = %q, want %q", int64(tt.in), got, tt.want)
		}
		if tt.in < 0 {
			continue
		}
		back, err := ParseSize(tt.in.String())
		if err != nil || back != tt.in {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tt.in.String(), back, err, tt.in)
		}
	}
}

func TestSizeFlagValue(t *testing.T) {
	var s Size
	if err := s.Set("2GiB"); err != nil || s != 2*GiB {
		t.Fatalf("Set(2GiB) = %v, %v", s, err)
	}
	if err := s.Set("lots"); err == nil {
		t.Fatal("Set(lots) accepted")
	}
	if s != 2*GiB {
		t.Fatalf("a failed Set changed the value to %v", s)
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want Duration
	}{
		{"0", 0},
		{"-1", Never},
		{"30s", Duration(30 * time.Second)},
		{"5m", Duration(5 * time.Minute)},
		{"1h30m", Duration(90 * time.Minute)},
		{"1.5h", Duration(90 * time.Minute)},
		{"250ms", Duration(250 * time.Millisecond)},
		{" 2m ", Duration(2 * time.Minute)},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if err != nil {
			t.Errorf("ParseDuration(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestParseDurationErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "empty duration"},
		{"300", `add a unit, like "300s"`},
		{"1.5", "add a unit"},
		{"-2", "add a unit"},
		{"-5m", "negative durations are not allowed"},
		{"five minutes", "use a number with a unit"},
		{"5 m", "use a number with a unit"},
		{"never", "use a number with a unit"},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if err == nil {
			t.Errorf("ParseDuration(%q) = %v, want error containing %q", tt.in, got, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseDuration(%q) error %q, want it to contain %q", tt.in, err, tt.want)
		}
	}
}

func TestDurationString(t *testing.T) {
	tests := []struct {
		in   Duration
		want string
	}{
		{0, "0"},
		{Never, "-1"},
		{Duration(-time.Hour), "-1"},
		{Duration(5 * time.Minute), "5m"},
		{Duration(90 * time.Second), "1m30s"},
		{Duration(2*time.Hour + 5*time.Second), "2h5s"},
		{Duration(30 * time.Second), "30s"},
		{Duration(1500 * time.Millisecond), "1.5s"},
		{Duration(250 * time.Millisecond), "250ms"},
	}
	for _, tt := range tests {
		if got := tt.in.String(); got != tt.want {
			t.Errorf("Duration(%d).String() = %q, want %q", int64(tt.in), got, tt.want)
		}
		if tt.in < 0 && tt.in != Never {
			continue
		}
		back, err := ParseDuration(tt.in.String())
		if err != nil || back != tt.in {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tt.in.String(), back, err, tt.in)
		}
	}
	if Duration(time.Minute).Std() != time.Minute {
		t.Error("Std does not convert")
	}
}

func TestHumanSize(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 512: "512 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB",
		812 << 20: "812 MiB", 1023<<20 + 600<<10: "1.0 GiB", 4402341478: "4.1 GiB",
		10694468485: "10 GiB", 16 << 30: "16 GiB", 70 << 30: "70 GiB", 3 << 40: "3.0 TiB", -2048: "-2.0 KiB",
	} {
		if got := HumanSize(n); got != want {
			t.Errorf("HumanSize(%d) = %q, want %q", n, got, want)
		}
	}
}
