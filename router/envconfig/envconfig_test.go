package envconfig

import (
	"os"
	"strings"
	"testing"
)

// The README lists every variable, with the description declared here.
func TestREADMEListsEveryVariable(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[Var]bool{}
	for _, v := range All {
		if seen[v.Var] || !strings.HasPrefix(string(v.Var), "LLAMATRAY_") || v.Description == "" {
			t.Errorf("%s: declared twice, misnamed or undescribed", v.Var)
		}
		seen[v.Var] = true
		if row := "| `" + string(v.Var) + "` | " + v.Description + " |"; !strings.Contains(string(readme), row) {
			t.Errorf("README.md lacks the row %s", row)
		}
	}
}

func TestGet(t *testing.T) {
	t.Setenv(string(UpdateURL), "  https://mirror.example/releases/ ")
	if got := UpdateURL.Get(); got != "https://mirror.example/releases/" {
		t.Errorf("Get = %q", got)
	}
	if got := UpdateURL.URL("def"); got != "https://mirror.example/releases" {
		t.Errorf("URL = %q", got)
	}
	t.Setenv(string(UpdateURL), "")
	if got := UpdateURL.URL("def"); got != "def" {
		t.Errorf("URL unset = %q", got)
	}
	if got := PeerAPIKey.From(func(k string) string { return map[string]string{string(PeerAPIKey): " k\n"}[k] }); got != "k" {
		t.Errorf("From = %q", got)
	}
}
