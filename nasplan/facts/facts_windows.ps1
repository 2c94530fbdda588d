# nasplan facts for Windows 10/11 over the built-in OpenSSH server: Windows PowerShell 5.1.
# Sent as powershell.exe -EncodedCommand (nasplan/shell.py), whichever DefaultShell sshd has.
# Every section is a standard cmdlet's Format-List output, one record per blank-line block.
# @CANDIDATES@ is replaced by tool name -> paths to try before PATH (nasplan/facts_windows.py).
$ErrorActionPreference = 'SilentlyContinue'
$ProgressPreference = 'SilentlyContinue'
# Adapter names are often not ASCII (e.g. localized "Ethernet"): send UTF-8, as nasplan reads.
[Console]::OutputEncoding = [Text.UTF8Encoding]::new($false)
function Section([string]$Name) { ''; "@@nasplan:$Name@@" }
function Show($Objects, [string[]]$Properties) {
  $Objects | Format-List -Property $Properties | Out-String -Width 4096 -Stream
}
Section 'uname-s'; 'Windows'
Section 'hostname'; $env:COMPUTERNAME
Section 'default-shell'
(Get-ItemProperty -Path 'HKLM:\SOFTWARE\OpenSSH' -Name DefaultShell).DefaultShell
Section 'win-admin'
$identity = [Security.Principal.WindowsIdentity]::GetCurrent()
([Security.Principal.WindowsPrincipal]$identity).IsInRole(
  [Security.Principal.WindowsBuiltInRole]::Administrator)
Section 'win-os'
Show (Get-CimInstance -ClassName Win32_OperatingSystem) @(
  'Caption', 'Version', 'BuildNumber', 'OSArchitecture', 'TotalVisibleMemorySize')
Section 'win-cpu'
Show (Get-CimInstance -ClassName Win32_Processor) @('Name', 'NumberOfLogicalProcessors')
Section 'win-netadapter'
Show (Get-NetAdapter) @('Name', 'InterfaceDescription', 'ifIndex', 'Status', 'MacAddress',
  'LinkSpeed', 'ReceiveLinkSpeed', 'MtuSize', 'FullDuplex', 'DriverFileName')
Section 'win-ipaddress'
Show (Get-NetIPAddress) @('IPAddress', 'InterfaceAlias', 'AddressFamily', 'PrefixLength')
$candidates = @CANDIDATES@
Section 'tools'
foreach ($tool in $candidates.Keys) {
  $found = $null
  foreach ($path in $candidates[$tool]) {
    if ($path -and (Test-Path -LiteralPath $path -PathType Leaf)) { $found = $path; break }
  }
  if (-not $found) {
    $command = Get-Command -Name "$tool.exe" -CommandType Application | Select-Object -First 1
    if ($command) { $found = $command.Source }
  }
  "$tool=$found"
  if ($tool -eq 'iperf3' -and $found) { $iperf3 = $found }
}
if ($iperf3) {
  Section 'iperf3-version'
  & $iperf3 --version 2>&1 | Select-Object -First 1 | ForEach-Object { "$_" }
}
Section 'end'
exit 0
