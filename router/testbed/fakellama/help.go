package main

import (
	"fmt"
	"sort"
	"strings"
)

// tolerated are flags the fake takes and ignores that its --help lists too, as llama-server's does.
var tolerated = [][]string{{"-t", "--threads"}, {"--jinja"}, {"--temp"}, {"-ctk", "--cache-type-k"}, {"-ctv", "--cache-type-v"}, {"-b", "--batch-size"}}

// helpText is --help in llama-server's shape: each option's spellings, separated by commas, then
// at least two spaces and a description, so that its flags are read as a real one's are.
func helpText() string {
	byName := map[string][]string{}
	for _, table := range []map[string]string{valueFlags, optionalValueFlags, boolFlags} {
		for flag, canon := range table {
			byName[canon] = append(byName[canon], flag)
		}
	}
	for _, spellings := range tolerated {
		byName[spellings[len(spellings)-1]] = spellings
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("----- common params -----\n\n")
	for _, n := range names {
		fl := byName[n]
		sort.Slice(fl, func(i, j int) bool { return len(fl[i]) < len(fl[j]) || len(fl[i]) == len(fl[j]) && fl[i] < fl[j] })
		fmt.Fprintf(&b, "%-38s  Llamatray's fake llama-server (%s)\n", strings.Join(fl, ", "), n)
	}
	b.WriteString("\nknobs come from FAKE_LLAMA_* and <model>.fake.json\n")
	return b.String()
}
