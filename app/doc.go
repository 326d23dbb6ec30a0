// Package app is Llamatray's desktop app: the tray icon and menu, the models window, settings,
// notifications, start at login and the single-instance check. It is the only package that uses
// Fyne; everything it shows comes from router/service through the Backend interface.
package app
