package app

import (
	"regexp"
	"strings"
)

// loadFix is what fixes a failed load, as the row offers it.
type loadFix int

const (
	fixNone     loadFix = iota
	fixServer           // a newer llama-server: Settings… (its llama-server), or Install
	fixSettings         // the model's own settings: a smaller context, fewer GPU layers, other flags
	fixFile             // the file itself is broken: delete it and get it again
)

// loadCauses are the lines of llama-server's output that explain a failed load, first match wins,
// each with the sentence that says what to do.
var loadCauses = []struct {
	re  *regexp.Regexp
	fix loadFix
	do  string
}{
	{regexp.MustCompile(`(?i)unknown model architecture`), fixServer,
		"This llama-server is too old for this model: pick a newer llama.cpp build in Settings…, then Retry."},
	{regexp.MustCompile(`(?i)out of memory|failed to allocate|unable to allocate|cudaMalloc failed|OutOfDeviceMemory|not enough memory`), fixSettings,
		"Not enough memory: lower its context size or GPU layers in its Settings…, or unload other models, then Retry."},
	{regexp.MustCompile(`(?i)invalid magic|not a gguf|failed to read|data is not within the file bounds|unexpectedly reached end of file|corrupt`), fixFile,
		"The model file is damaged or incomplete: delete it and get it again."},
	{regexp.MustCompile(`(?i)invalid argument|unknown argument|unrecognized option|error while handling argument`), fixSettings,
		"llama-server refused a flag: check the extra flags in its Settings…, then Retry."},
	{regexp.MustCompile(`(?i)wrong shape|missing tensor|wrong number of tensors|key not found`), fixServer,
		"This llama-server cannot read this model's layout: a newer llama.cpp build may (Settings…), else get another file of it."},
	{regexp.MustCompile(`(?i)\berror\b|failed`), fixNone, ""},
}

// loadCause finds the line of a failed load's llama-server output that explains it (not the last
// one, which is "exiting due to model loading error"), without the function names before it, and
// what to do about it; "" when none explains.
func loadCause(logs []string) (cause, do string, fix loadFix) {
	for _, c := range loadCauses {
		for _, line := range logs {
			if c.re.MatchString(line) {
				return explainLine(line), c.do, c.fix
			}
		}
	}
	return "", "", fixNone
}

// funcPrefix is a "llama_model_load: " or "main: " before a message; "error loading model: " is
// said by the line's own words.
var funcPrefix = regexp.MustCompile(`^(?:[A-Za-z_][A-Za-z0-9_:]*: +|error loading model[^:]*: +)`)

// explainLine is a line of output with the function names and repeated "error loading model"
// phrases before its message taken off: "unknown model architecture: 'foo'".
func explainLine(line string) string {
	s := strings.TrimSpace(line)
	for {
		t := funcPrefix.ReplaceAllString(s, "")
		if t == s || t == "" {
			return s
		}
		s = t
	}
}
