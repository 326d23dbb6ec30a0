// Package traytest drives the real llamatray binary as a desktop user would, without a desktop: it
// starts a private Xvfb X server and D-Bus session bus, plays the part of the system tray host (a
// minimal org.kde.StatusNotifierWatcher), and clicks the tray menu over com.canonical.dbusmenu.
// It holds tests only; run them with `go test ./app/traytest/`.
package traytest
