// Package assets holds Llamatray's icons as embedded PNG bytes. The images are drawn by the program in
// assets/gen (`go run ./assets/gen`); this package has no dependency on any UI toolkit.
package assets

import _ "embed"

// AppIcon is the 512×512 application icon, used for windows and packaging.
//
//go:embed icon.png
var AppIcon []byte

// Tray icons, one per state, in colour (Linux, Windows) and as macOS template images (black and alpha
// only; the system tints them to match the menu bar).
var (
	//go:embed tray-idle.png
	TrayIdle []byte
	//go:embed tray-serving.png
	TrayServing []byte
	//go:embed tray-loading.png
	TrayLoading []byte
	//go:embed tray-error.png
	TrayError []byte

	//go:embed tray-idle-template.png
	TrayIdleTemplate []byte
	//go:embed tray-serving-template.png
	TrayServingTemplate []byte
	//go:embed tray-loading-template.png
	TrayLoadingTemplate []byte
	//go:embed tray-error-template.png
	TrayErrorTemplate []byte
)
