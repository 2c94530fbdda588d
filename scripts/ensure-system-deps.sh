#!/usr/bin/env bash
# Install the Debian/Ubuntu packages nasplan's lab and tests need, only those that are missing.
set -euo pipefail

missing=()
for pkg in "$@"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$pkg")
  fi
done
# A Python without venv/ensurepip (Debian's split packaging) needs python3-venv.
if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
  missing+=(python3-venv)
fi
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing system packages: ${missing[*]}"
as_root=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  as_root=(sudo)
fi
# iperf3's package asks whether to start a system-wide daemon: no.
echo 'iperf3 iperf3/start_daemon boolean false' | "${as_root[@]}" debconf-set-selections 2>/dev/null || true
export DEBIAN_FRONTEND=noninteractive
# The lab runs its own sshd, smbd and ganesha inside network namespaces; the packages' system-wide
# services are not wanted. policy-rc.d (honoured by invoke-rc.d and deb-systemd-invoke) keeps
# them from starting during the install; we add it only if the machine has none, and remove it.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\n# nasplan: no service starts while installing the lab packages\nexit 101\n' |
    "${as_root[@]}" tee "$policy" >/dev/null
  "${as_root[@]}" chmod 755 "$policy"
  trap '"${as_root[@]}" rm -f "$policy"' EXIT
fi
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
