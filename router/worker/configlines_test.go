package worker

import (
	"strings"
	"testing"
)

func TestWorkerConfigLines(t *testing.T) {
	got := ConfigLines("desk 2", "192.168.1.20:50052", "tok-en")
	want := "[workers.desk-2]\naddress = \"192.168.1.20:50052\"\ntoken = \"tok-en\"\n"
	if got != want {
		t.Fatalf("config lines:\n%s\nwant:\n%s", got, want)
	}
	if got := ConfigLines("desk", "0.0.0.0:7000", "t"); strings.Contains(got, "0.0.0.0") || !strings.Contains(got, ":7000\"") {
		t.Fatalf("config lines for a wildcard listen name the wildcard: %s", got)
	}
}
