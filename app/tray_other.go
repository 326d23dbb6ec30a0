//go:build !((linux || freebsd || openbsd || netbsd) && !android)

package app

// startTray shows Fyne's tray icon.
func startTray(u *ui) trayHost { return startFyneTray(u) }
