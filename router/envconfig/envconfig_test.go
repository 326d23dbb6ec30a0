package envconfig

import (
	"io/fs"
	"os"
	"path/filepath"
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

// Each variable is named only here: the product's other code reads it through its Var (the test
// bed's own variables aside).
func TestVariablesNamedOnlyHere(t *testing.T) {
	root := "../.."
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch filepath.ToSlash(rel) {
			case ".git", "router/testbed", "router/envconfig":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if i := strings.Index(string(data), `"LLAMATRAY_`); i >= 0 {
			line := strings.Count(string(data[:i]), "\n") + 1
			t.Errorf("%s:%d names a LLAMATRAY_ variable; declare it in envconfig and read it through its Var", rel, line)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
