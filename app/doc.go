// Package app is Llamatray's desktop app: the tray icon and menu, the models window, settings,
// notifications, start at login and the single-instance check. It is the only package that uses
// Fyne; everything it shows comes from router/service through the Backend interface.
//
// Backend (backend.go) is the one seam between the app and the service: every method the app calls,
// named as the service's own, and nothing asked of a backend beyond it (no optional interfaces, no
// type assertions). What a backend lacks is said by Offers, where the UI hides the button, and the
// method answers ErrNotOffered or an empty result. serviceBackend is the running service (most of
// Backend is the service's own methods, promoted); the tests' fakes implement the same interface. The engine's states, waits, events and budget come as the
// service's aliases (router/service/terms.go): no package under app/ imports router/engine.
package app
