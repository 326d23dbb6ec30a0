// Package wintest runs the Windows build of Llamatray under Wine, as `make test-windows` does:
// llamatray.exe (the build the installer ships) serving a fake llama-server cross-built for
// Windows, its command line against it, its Job Object and crash handling, and the NSIS setup
// installing and uninstalling it. Its tests skip unless LLAMATRAY_WINE names a wine; the Make
// target sets it, with LLAMATRAY_WINDOWS_EXE and LLAMATRAY_WINDOWS_SETUP naming the files that
// `make package-windows` built.
package wintest
