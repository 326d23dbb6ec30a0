//go:build windows

package platform

import (
	"errors"
	"fmt"

	"golang.org/x/sys/windows/registry"
)

const (
	runKey   = `Software\Microsoft\Windows\CurrentVersion\Run`
	runValue = "Llamatray"
)

// AutostartEnabled reports whether Llamatray starts at login.
func AutostartEnabled() bool {
	k, err := registry.OpenKey(registry.CURRENT_USER, runKey, registry.QUERY_VALUE)
	if err != nil {
		return false
	}
	defer k.Close()
	v, _, err := k.GetStringValue(runValue)
	return err == nil && v != ""
}

// SetAutostart sets or deletes the value Llamatray under HKCU\Software\Microsoft\Windows\CurrentVersion\Run,
// which starts exe at login.
func SetAutostart(on bool, exe string) error {
	k, _, err := registry.CreateKey(registry.CURRENT_USER, runKey, registry.SET_VALUE|registry.QUERY_VALUE)
	if err != nil {
		return fmt.Errorf("open the Run registry key: %w", err)
	}
	defer k.Close()
	if !on {
		if err := k.DeleteValue(runValue); err != nil && !errors.Is(err, registry.ErrNotExist) {
			return fmt.Errorf("remove the login item: %w", err)
		}
		return nil
	}
	if err := k.SetStringValue(runValue, windowsRunValue(exe)); err != nil {
		return fmt.Errorf("write the login item: %w", err)
	}
	return nil
}
