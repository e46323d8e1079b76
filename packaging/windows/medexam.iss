; Inno Setup script for the Windows installer of medexam.
;
; Build the app first (packaging/build.sh), then, from the repository root:
;   iscc /DAppVersion=0.1.0 packaging\windows\medexam.iss
; which writes packaging\dist\medexam-VERSION-windows-x64-setup.exe.
;
; The installer copies the one-folder app (packaging\dist\medexam) to Program Files (or, for
; a user without administrator rights, to their own programs folder), adds a Start menu
; entry (and, if asked, a desktop icon) that opens the window, and an uninstaller listed in
; Settings > Apps. The app never writes to its own folder: the user's data lives in
; %LOCALAPPDATA%\medexam and is left in place on uninstall.

#ifndef AppVersion
  #define AppVersion "0.1.0"
#endif

[Setup]
AppId={{5D1B2C4E-7A3F-4E8B-9C61-2F0D8A4B7E13}
AppName=medexam
AppVersion={#AppVersion}
AppVerName=medexam {#AppVersion}
AppPublisher=medexam
DefaultDirName={autopf}\medexam
DefaultGroupName=medexam
DisableProgramGroupPage=yes
PrivilegesRequired=admin
PrivilegesRequiredOverridesAllowed=dialog
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
OutputDir=..\dist
OutputBaseFilename=medexam-{#AppVersion}-windows-x64-setup
SetupIconFile=..\build\medexam\icons\medexam.ico
UninstallDisplayIcon={app}\medexam.exe
UninstallDisplayName=medexam
Compression=lzma2
SolidCompression=yes
WizardStyle=modern

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked

[Files]
Source: "..\dist\medexam\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{autoprograms}\medexam"; Filename: "{app}\medexam.exe"; Parameters: "gui"; WorkingDir: "{userdocs}"; Comment: "Offline medical exam practice"
Name: "{autodesktop}\medexam"; Filename: "{app}\medexam.exe"; Parameters: "gui"; WorkingDir: "{userdocs}"; Tasks: desktopicon

[Run]
Filename: "{app}\medexam.exe"; Parameters: "gui"; Description: "{cm:LaunchProgram,medexam}"; Flags: nowait postinstall skipifsilent
