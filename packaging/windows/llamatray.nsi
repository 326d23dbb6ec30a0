; Llamatray installer for Windows (NSIS 3). Installs for the current user only, without an
; administrator prompt, under %LOCALAPPDATA%\Programs\Llamatray.
;
; Built by packaging/windows/build-installer.sh, which passes:
;   -DVERSION=0.1.0            shown to the user and in Add/Remove Programs
;   -DNUMVER=0.1.0.0           four numbers, for the installer's own version resource
;   -DEXE=path\llamatray.exe   the program
;   -DICON=path\llamatray.ico  installer, uninstaller and shortcut icon
;   -DOUTFILE=path\Llamatray-Setup-0.1.0.exe
;   -DTARGET=amd64-unicode     NSIS's target: build-installer.sh makes a 64-bit installer, as the
;                              program is 64-bit only (NSIS's own default is 32-bit, x86-unicode)
;   -DLLAMA_SERVER_DIR=path    optional: a llama.cpp build folder (llama-server.exe and its DLLs)
;                              installed in the llama-server folder of $INSTDIR

Unicode true
!ifdef TARGET
  Target ${TARGET}
!endif
ManifestDPIAware true
SetCompressor /SOLID lzma

!macro Require NAME
  !ifndef ${NAME}
    !error "${NAME} is not defined: build with packaging/windows/build-installer.sh"
  !endif
!macroend
!insertmacro Require VERSION
!insertmacro Require NUMVER
!insertmacro Require EXE
!insertmacro Require ICON
!insertmacro Require OUTFILE

!define APP_NAME "Llamatray"
!define APP_EXE "llamatray.exe"
!define PUBLISHER "Llamatray contributors"
!define HOMEPAGE "https://github.com/llamatray/llamatray"
!define APP_KEY "Software\Llamatray"
!define UNINST_KEY "Software\Microsoft\Windows\CurrentVersion\Uninstall\Llamatray"
!define RUN_KEY "Software\Microsoft\Windows\CurrentVersion\Run"
; The same value name as the app's own "Start at login" setting, so both see one switch.
!define RUN_VALUE "Llamatray"

!include "MUI2.nsh"
!include "LogicLib.nsh"
!include "FileFunc.nsh"
!include "WordFunc.nsh"
!include "Sections.nsh"

Name "${APP_NAME}"
OutFile "${OUTFILE}"
RequestExecutionLevel user
InstallDir "$LOCALAPPDATA\Programs\${APP_NAME}"
InstallDirRegKey HKCU "${APP_KEY}" "InstallDir"
BrandingText "${APP_NAME} ${VERSION}"

VIProductVersion "${NUMVER}"
VIFileVersion "${NUMVER}"
VIAddVersionKey "ProductName" "${APP_NAME}"
VIAddVersionKey "ProductVersion" "${VERSION}"
VIAddVersionKey "FileVersion" "${VERSION}"
VIAddVersionKey "FileDescription" "${APP_NAME} installer"
VIAddVersionKey "CompanyName" "${PUBLISHER}"
VIAddVersionKey "LegalCopyright" "Copyright (c) 2026 ${PUBLISHER}. MIT License."

!define MUI_ICON "${ICON}"
!define MUI_UNICON "${ICON}"
!define MUI_ABORTWARNING
!define MUI_COMPONENTSPAGE_SMALLDESC
!define MUI_FINISHPAGE_RUN "$INSTDIR\${APP_EXE}"
!define MUI_FINISHPAGE_RUN_TEXT "Start ${APP_NAME} now"
!define MUI_FINISHPAGE_LINK "Where to get models and llama-server"
!define MUI_FINISHPAGE_LINK_LOCATION "${HOMEPAGE}#readme"

!insertmacro MUI_PAGE_COMPONENTS
!insertmacro MUI_PAGE_DIRECTORY
!insertmacro MUI_PAGE_INSTFILES
!insertmacro MUI_PAGE_FINISH
!insertmacro MUI_UNPAGE_CONFIRM
!insertmacro MUI_UNPAGE_INSTFILES
!insertmacro MUI_LANGUAGE "English"

!define POWERSHELL `"$SYSDIR\WindowsPowerShell\v1.0\powershell.exe" -NoProfile -NonInteractive -Command`

; StopApp: ends Llamatray and the llama-server processes it started (/T: the whole process
; tree), then any llama-server.exe still running from $INSTDIR. Processes elsewhere are left
; alone. Used before files are replaced or removed.
!macro StopApp un
Function ${un}StopApp
  nsExec::Exec '"$SYSDIR\taskkill.exe" /F /T /IM ${APP_EXE}'
  Pop $0
  ; Where /T is not supported (Wine), end Llamatray alone: its llama-server children run in a
  ; kill-on-close job object and watch their stdin, so they end with it.
  nsExec::Exec '"$SYSDIR\taskkill.exe" /F /IM ${APP_EXE}'
  Pop $0
  ; taskkill selects by image name only, so the path filter needs PowerShell. A ' in the
  ; folder name is doubled for PowerShell's single-quoted string.
  ${WordReplace} "$INSTDIR" "'" "''" "+" $1
  nsExec::Exec `${POWERSHELL} "Get-Process -Name llama-server -ErrorAction SilentlyContinue | Where-Object { $$_.Path -like '$1\*' } | Stop-Process -Force"`
  Pop $0
FunctionEnd
!macroend
!insertmacro StopApp ""
!insertmacro StopApp "un."

; WaitDeletable FILE: waits up to 10 s for a just-killed process to release FILE, which is
; free once it can be opened for writing.
!macro WaitDeletable FILE
  StrCpy $R9 0
  ${Do}
    ${IfNot} ${FileExists} "${FILE}"
      ${Break}
    ${EndIf}
    ClearErrors
    FileOpen $R8 "${FILE}" a
    ${IfNot} ${Errors}
      FileClose $R8
      ${Break}
    ${EndIf}
    IntOp $R9 $R9 + 1
    ${If} $R9 > 50
      ${Break}
    ${EndIf}
    Sleep 200
  ${Loop}
!macroend

Function .onInit
  Call ReadOptions
  ; A running copy holds its files open: ask before closing it (a silent install just closes it).
  nsExec::Exec `${POWERSHELL} "if (Get-Process -Name llamatray -ErrorAction SilentlyContinue) { exit 3 }"`
  Pop $0
  ${If} $0 == 3
    MessageBox MB_OKCANCEL|MB_ICONINFORMATION "${APP_NAME} is running. Setup will close it and stop the models it is serving." /SD IDOK IDOK proceed
    Abort
    proceed:
  ${EndIf}
FunctionEnd

Section "${APP_NAME}" SecApp
  SectionIn RO
  Call StopApp
  !insertmacro WaitDeletable "$INSTDIR\${APP_EXE}"
  !insertmacro WaitDeletable "$INSTDIR\llama-server\llama-server.exe"
  SetOutPath "$INSTDIR"
  File "/oname=${APP_EXE}" "${EXE}"
  ; A llama-server bundled by an earlier version is replaced (or removed) as a whole.
  RMDir /r "$INSTDIR\llama-server"
  WriteUninstaller "$INSTDIR\uninstall.exe"
  CreateShortcut "$SMPROGRAMS\${APP_NAME}.lnk" "$INSTDIR\${APP_EXE}" "" "$INSTDIR\${APP_EXE}" 0
  WriteRegStr HKCU "${APP_KEY}" "InstallDir" "$INSTDIR"
SectionEnd

!ifdef LLAMA_SERVER_DIR
Section "llama-server (llama.cpp)" SecLlama
  SetOutPath "$INSTDIR\llama-server"
  File /r "${LLAMA_SERVER_DIR}\*"
SectionEnd
!endif

Section "Start at login" SecAutostart
  WriteRegStr HKCU "${RUN_KEY}" "${RUN_VALUE}" '"$INSTDIR\${APP_EXE}"'
SectionEnd

; Written last, so that EstimatedSize counts every section installed.
Section "-Uninstall entry"
  WriteRegStr HKCU "${UNINST_KEY}" "DisplayName" "${APP_NAME}"
  WriteRegStr HKCU "${UNINST_KEY}" "DisplayVersion" "${VERSION}"
  WriteRegStr HKCU "${UNINST_KEY}" "Publisher" "${PUBLISHER}"
  WriteRegStr HKCU "${UNINST_KEY}" "DisplayIcon" "$INSTDIR\${APP_EXE},0"
  WriteRegStr HKCU "${UNINST_KEY}" "InstallLocation" "$INSTDIR"
  WriteRegStr HKCU "${UNINST_KEY}" "UninstallString" '"$INSTDIR\uninstall.exe"'
  WriteRegStr HKCU "${UNINST_KEY}" "QuietUninstallString" '"$INSTDIR\uninstall.exe" /S'
  WriteRegStr HKCU "${UNINST_KEY}" "URLInfoAbout" "${HOMEPAGE}"
  WriteRegStr HKCU "${UNINST_KEY}" "HelpLink" "${HOMEPAGE}/issues"
  WriteRegDWORD HKCU "${UNINST_KEY}" "NoModify" 1
  WriteRegDWORD HKCU "${UNINST_KEY}" "NoRepair" 1
  ${GetSize} "$INSTDIR" "/S=0K" $0 $1 $2
  IntFmt $0 "0x%08X" $0
  WriteRegDWORD HKCU "${UNINST_KEY}" "EstimatedSize" "$0"
SectionEnd

; ReadOptions applies the command-line options, for silent installs: /NOAUTOSTART leaves out
; "Start at login".
Function ReadOptions
  ${GetParameters} $R0
  ClearErrors
  ${GetOptions} $R0 "/NOAUTOSTART" $R1
  ${IfNot} ${Errors}
    !insertmacro UnselectSection ${SecAutostart}
  ${EndIf}
FunctionEnd

!insertmacro MUI_FUNCTION_DESCRIPTION_BEGIN
  !insertmacro MUI_DESCRIPTION_TEXT ${SecApp} "The ${APP_NAME} tray app and command line."
!ifdef LLAMA_SERVER_DIR
  !insertmacro MUI_DESCRIPTION_TEXT ${SecLlama} "A llama.cpp llama-server for ${APP_NAME} to run models with. Leave it out to use one installed separately (winget install llama.cpp)."
!endif
  !insertmacro MUI_DESCRIPTION_TEXT ${SecAutostart} "Start ${APP_NAME} in the notification area when you sign in. It can be changed later in the settings."
!insertmacro MUI_FUNCTION_DESCRIPTION_END

; The uninstaller keeps the user's settings, logs and models in %LOCALAPPDATA%\llamatray.
Section "Uninstall"
  Call un.StopApp
  !insertmacro WaitDeletable "$INSTDIR\${APP_EXE}"
  !insertmacro WaitDeletable "$INSTDIR\llama-server\llama-server.exe"
  Delete "$SMPROGRAMS\${APP_NAME}.lnk"
  DeleteRegValue HKCU "${RUN_KEY}" "${RUN_VALUE}"
  DeleteRegKey HKCU "${UNINST_KEY}"
  DeleteRegKey HKCU "${APP_KEY}"
  Delete "$INSTDIR\${APP_EXE}"
  RMDir /r "$INSTDIR\llama-server"
  Delete "$INSTDIR\uninstall.exe"
  RMDir "$INSTDIR"
SectionEnd
