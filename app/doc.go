// Package app is Llamatray's desktop app: the tray icon and menu, the models window, settings,
// notifications, start at login and the single-instance check. It is the only package that uses
// Fyne; everything it shows comes from router/service through the Backend interface.
//
// Backend (backend.go) is the one seam between the app and the service, with no optional interfaces
// or type assertions. The engine's states, waits, events and budget come as the service's aliases
// (router/service/terms.go): no package under app/ imports router/engine.
package app
