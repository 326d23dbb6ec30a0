package clocale

import "testing"

func TestFix(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"LANG": "C.UTF-8"}, "en"},
		{map[string]string{"LC_ALL": "POSIX.UTF-8", "LANG": "de_DE.UTF-8"}, "en"},
		{map[string]string{"LANG": "de_DE.UTF-8"}, ""},
		{map[string]string{"LANG": "C"}, ""}, // plain C is handled by Fyne already
		{map[string]string{"LANG": "C.UTF-8", "LANGUAGE": "fr"}, "fr"},
		{map[string]string{"LC_ALL": "fr_FR.UTF-8", "LANG": "C.UTF-8"}, ""},
	}
	for _, tc := range tests {
		env := map[string]string{}
		for k, v := range tc.env {
			env[k] = v
		}
		fix(func(k string) string { return env[k] }, func(k, v string) error { env[k] = v; return nil })
		if env["LANGUAGE"] != tc.want {
			t.Errorf("%v: LANGUAGE=%q, want %q", tc.env, env["LANGUAGE"], tc.want)
		}
	}
}
