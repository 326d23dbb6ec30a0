package harness

import (
	"fmt"
	"os"
	"strings"
)

// ReplaceSection puts text, a markdown section that starts with the line heading ("## Peers"), into
// the file at path: in place of the section with that heading, up to the next "## " heading, or at
// the end when there is none. The rest of the file is kept; a missing file is created.
func ReplaceSection(path, heading, text string) error {
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("benchmarks: %w", err)
	}
	s := string(old)
	i := -1
	if strings.HasPrefix(s, heading+"\n") {
		i = 0
	} else if j := strings.Index(s, "\n"+heading+"\n"); j >= 0 {
		i = j + 1
	}
	if i < 0 {
		if s != "" {
			s = strings.TrimRight(s, "\n") + "\n\n"
		}
		return os.WriteFile(path, []byte(s+text), 0o644)
	}
	rest := s[i+len(heading):]
	end := ""
	if j := strings.Index(rest, "\n## "); j >= 0 {
		end = rest[j+1:]
	}
	return os.WriteFile(path, []byte(s[:i]+text+"\n"+end), 0o644)
}
