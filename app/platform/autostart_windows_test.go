package platform

import (
	"errors"
	"testing"

	"golang.org/x/sys/windows/registry"
)

// TestAutostartRunKey switches the login item on and off in the real registry (under Wine in
// `make test-windows`) and reads the value back as the setup writes it. Whatever value was
// there before is put back.
func TestAutostartRunKey(t *testing.T) {
	k, _, err := registry.CreateKey(registry.CURRENT_USER, runKey, registry.QUERY_VALUE|registry.SET_VALUE)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	before, _, err := k.GetStringValue(runValue)
	had := err == nil
	t.Cleanup(func() {
		if had {
			_ = k.SetStringValue(runValue, before)
		} else {
			_ = k.DeleteValue(runValue)
		}
	})

	exe := `C:\Users\Ann O'Neil\AppData\Local\Programs\Llamatray\llamatray.exe`
	if err := SetAutostart(true, exe); err != nil {
		t.Fatal(err)
	}
	if !AutostartEnabled() {
		t.Fatal("AutostartEnabled is false after SetAutostart(true)")
	}
	// The setup's "Start at login" writes '"$INSTDIR\llamatray.exe"' under the same name.
	if v, _, err := k.GetStringValue(runValue); err != nil || v != `"`+exe+`"` {
		t.Fatalf("Run value %q (%v), want the quoted path", v, err)
	}
	if err := SetAutostart(false, exe); err != nil {
		t.Fatal(err)
	}
	if AutostartEnabled() {
		t.Fatal("AutostartEnabled is true after SetAutostart(false)")
	}
	if _, _, err := k.GetStringValue(runValue); !errors.Is(err, registry.ErrNotExist) {
		t.Fatalf("the Run value is still there: %v", err)
	}
	if err := SetAutostart(false, exe); err != nil {
		t.Fatalf("turning off a login item that is not there: %v", err)
	}
}
