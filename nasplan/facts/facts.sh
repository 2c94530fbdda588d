# nasplan facts: POSIX sh (dash, busybox ash, bash), run as one SSH round trip.
# @TOOLS@ is replaced by the tool names nasplan looks for (nasplan/facts.py).
set +e +u
nasplan_dirs='/opt/bin /opt/sbin /var/packages/DiagnosisTool/target/tool /usr/syno/bin
/usr/syno/sbin /opt/homebrew/bin /opt/homebrew/sbin /usr/local/bin /usr/local/sbin /usr/bin
/usr/sbin /bin /sbin'
nasplan_section() { printf '\n@@nasplan:%s@@\n' "$1"; }
# Non-interactive SSH sessions on NAS firmware leave /opt/bin (Entware), /usr/sbin and the
# Synology DiagnosisTool directory off PATH: look there too, PATH first.
# The script runs on every host at once, so it forks as little as it can: nasplan_find sets
# nasplan_p with shell builtins only, nasplan_get reads a one-line file with `read`.
nasplan_find() {
  nasplan_p=
  nasplan_ifs=$IFS; IFS=:
  for nasplan_d in $PATH; do
    case "$nasplan_d" in /*) ;; *) continue ;; esac
    if [ -x "$nasplan_d/$1" ] && [ ! -d "$nasplan_d/$1" ]; then
      nasplan_p=$nasplan_d/$1; break
    fi
  done
  IFS=$nasplan_ifs
  [ -n "$nasplan_p" ] && return 0
  for nasplan_d in $nasplan_dirs; do
    if [ -x "$nasplan_d/$1" ] && [ ! -d "$nasplan_d/$1" ]; then
      nasplan_p=$nasplan_d/$1; return 0
    fi
  done
  return 0
}
nasplan_which() { nasplan_find "$1"; [ -z "$nasplan_p" ] || printf '%s\n' "$nasplan_p"; }
nasplan_get() { nasplan_v=; read -r nasplan_v 2>/dev/null < "$1"; }
nasplan_marker() {
  if [ -f "$1" ]; then
    nasplan_section "marker:$1"
    if [ -n "$2" ]; then grep -E "$2" "$1" 2>/dev/null; else head -n 60 "$1" 2>/dev/null; fi
  fi
}
nasplan_section hostname
if nasplan_get /proc/sys/kernel/hostname && [ -n "$nasplan_v" ]; then
  printf '%s\n' "$nasplan_v"
else
  hostname 2>/dev/null || uname -n 2>/dev/null
fi
nasplan_section uname-s
if nasplan_get /proc/sys/kernel/ostype && [ -n "$nasplan_v" ]; then
  nasplan_os=$nasplan_v
else
  nasplan_os=$(uname -s 2>/dev/null)
fi
printf '%s\n' "$nasplan_os"
nasplan_section uid; id -u 2>/dev/null
nasplan_section kernel
if nasplan_get /proc/sys/kernel/osrelease && [ -n "$nasplan_v" ]; then
  printf '%s\n' "$nasplan_v"
else
  uname -r 2>/dev/null
fi
nasplan_section arch; uname -m 2>/dev/null
nasplan_marker /etc/os-release
[ -f /etc/os-release ] || nasplan_marker /usr/lib/os-release
if [ -f /etc/config/uLinux.conf ]; then
  nasplan_section marker:/etc/config/uLinux.conf
  awk '/^\[/ { s = (tolower($0) == "[system]") } s' /etc/config/uLinux.conf 2>/dev/null | head -n 40
fi
nasplan_getcfg=$(nasplan_which getcfg)
if [ -n "$nasplan_getcfg" ]; then
  nasplan_section 'marker:getcfg System Version'; "$nasplan_getcfg" System Version 2>/dev/null
fi
nasplan_marker /etc.defaults/VERSION
nasplan_marker /etc.defaults/synoinfo.conf '^(unique|upnpmodelname|company_title)='
nasplan_marker /etc/synoinfo.conf '^(unique|upnpmodelname|company_title)='
nasplan_marker /etc/version
nasplan_marker /etc/truenas_version
if [ -f /data/manifest.json ]; then
  nasplan_section marker:/data/manifest.json
  tr ',{}' '\n\n\n' < /data/manifest.json 2>/dev/null | grep '"version"' | head -n 1
fi
nasplan_section cpu-model
grep -E '^(model name|cpu model|Hardware|Processor)[[:space:]]*:' /proc/cpuinfo 2>/dev/null \
  | uniq | head -n 4
nasplan_section cpu-processors; grep -c '^processor' /proc/cpuinfo 2>/dev/null
nasplan_section nproc; nproc 2>/dev/null
nasplan_section meminfo; grep '^MemTotal:' /proc/meminfo 2>/dev/null
# FreeBSD (TrueNAS CORE, FreeNAS) and macOS have no /proc or /sys/class/net: sysctl names the
# system, CPU and memory, and `ifconfig -a` (below) describes the NICs.
if [ ! -d /sys/class/net ]; then
  nasplan_section sysctl
  for nasplan_k in kern.ostype kern.osrelease kern.osproductversion hw.model \
    machdep.cpu.brand_string hw.ncpu hw.physmem hw.memsize; do
    sysctl "$nasplan_k" 2>/dev/null
  done
fi
# Hosts with one boot_id share one kernel (containers, lab namespaces): their CPU figures are
# the whole machine's.
nasplan_section boot-id; cat /proc/sys/kernel/random/boot_id 2>/dev/null
nasplan_section tools
for nasplan_t in @TOOLS@; do
  nasplan_find "$nasplan_t"
  printf '%s=%s\n' "$nasplan_t" "$nasplan_p"
done
nasplan_find iperf3
nasplan_iperf3=$nasplan_p
if [ -n "$nasplan_iperf3" ]; then
  nasplan_section iperf3-version
  "$nasplan_iperf3" --version </dev/null 2>&1 | { read -r nasplan_v; printf '%s\n' "$nasplan_v"; }
fi
nasplan_find ethtool
nasplan_ethtool=$nasplan_p
for nasplan_d in /sys/class/net/*; do
  [ -d "$nasplan_d" ] || continue
  nasplan_n=${nasplan_d##*/}
  nasplan_section nic
  printf 'name=%s\n' "$nasplan_n"
  for nasplan_k in mtu operstate address speed duplex; do
    nasplan_get "$nasplan_d/$nasplan_k"
    printf '%s=%s\n' "$nasplan_k" "$nasplan_v"
  done
  nasplan_drv=
  [ -e "$nasplan_d/device/driver" ] && nasplan_drv=$(cd -P "$nasplan_d/device/driver" && pwd)
  nasplan_drv=${nasplan_drv##*/}
  # veth, bridges and bonds have no device/driver link; ethtool -i still names their driver
  # (the loopback has none worth a process).
  if [ -z "$nasplan_drv" ] && [ -n "$nasplan_ethtool" ] && [ "$nasplan_n" != lo ]; then
    nasplan_drv=$("$nasplan_ethtool" -i "$nasplan_n" 2>/dev/null | sed -n 's/^driver: *//p')
  fi
  printf 'driver=%s\n' "$nasplan_drv"
  # the bus under the link: a PCIe NIC's link (speed, width) against the device's maximum, a
  # USB NIC's bus speed in Mbit/s (its USB device is the parent of the interface's device)
  if [ -e "$nasplan_d/device/current_link_speed" ]; then
    for nasplan_k in current_link_speed current_link_width max_link_speed max_link_width; do
      nasplan_get "$nasplan_d/device/$nasplan_k"
      printf 'pcie_%s=%s\n' "$nasplan_k" "$nasplan_v"
    done
  fi
  if [ -e "$nasplan_d/device/../idVendor" ] && [ -e "$nasplan_d/device/../speed" ]; then
    nasplan_get "$nasplan_d/device/../speed"
    printf 'usb_speed=%s\n' "$nasplan_v"
  fi
done
nasplan_ip=$(nasplan_which ip)
nasplan_addrs=
[ -n "$nasplan_ip" ] && [ -d /sys/class/net ] && nasplan_addrs=$("$nasplan_ip" -o addr show 2>/dev/null)
if [ -n "$nasplan_addrs" ]; then
  nasplan_section ip-addr; printf '%s\n' "$nasplan_addrs"
else
  nasplan_ifconfig=$(nasplan_which ifconfig)
  if [ -n "$nasplan_ifconfig" ]; then
    nasplan_section ifconfig; "$nasplan_ifconfig" -a 2>/dev/null
  fi
fi
# iproute2 4.13+ prints JSON with -j (routes from 4.17); BusyBox's ip and older iproute2 do not:
# the network phase then reads `ip addr`/`ip route` text or `ifconfig` (nasplan/network/tools.py).
if [ -n "$nasplan_ip" ]; then
  nasplan_section ip-json
  printf '%s%s\n' "$("$nasplan_ip" -j addr show dev lo 2>/dev/null | head -c 1)" \
    "$("$nasplan_ip" -j route show table main 2>/dev/null | head -c 1)"
fi
# Storage layout, all readable without root: md RAID, ZFS pools, disks (sysfs), filesystems.
if [ -r /proc/mdstat ]; then
  nasplan_section mdstat; cat /proc/mdstat 2>/dev/null
fi
nasplan_zpool=$(nasplan_which zpool)
if [ -n "$nasplan_zpool" ]; then
  nasplan_section zpool-list; "$nasplan_zpool" list -H -p -o name,size,health 2>/dev/null
  nasplan_section zpool-status; "$nasplan_zpool" status 2>/dev/null
fi
for nasplan_b in /sys/block/*; do
  [ -d "$nasplan_b" ] || continue
  nasplan_n=${nasplan_b##*/}
  # Virtual block devices say nothing about the NAS's disks; md arrays come from mdstat.
  case "$nasplan_n" in loop*|ram*|zram*|dm-*|md*|sr*|fd*|nbd*|zd*) continue ;; esac
  nasplan_section disk
  printf 'name=%s\n' "$nasplan_n"
  for nasplan_k in device/model device/vendor size queue/rotational; do
    printf '%s=%s\n' "${nasplan_k##*/}" "$(cat "$nasplan_b/$nasplan_k" 2>/dev/null)"
  done
done
# Only filesystems on block devices (and ZFS datasets): the rest say nothing about the disks.
nasplan_section mounts
awk '$1 ~ /^\/dev\// || $3 == "zfs" { print }' /proc/mounts 2>/dev/null
# Each filesystem's size and free space (POSIX df, 1024-byte blocks; BusyBox's too).
nasplan_section df
df -P -k 2>/dev/null
# What a filesystem's device is made of, from sysfs (no root): LVM and other device-mapper
# targets, md arrays, a loop device's file; each with the devices under it (slaves).
for nasplan_b in /sys/block/dm-* /sys/block/md* /sys/block/loop*; do
  [ -d "$nasplan_b" ] || continue
  case "${nasplan_b##*/}" in loop*) [ -e "$nasplan_b/loop/backing_file" ] || continue ;; esac
  nasplan_section layer
  printf 'name=%s\n' "${nasplan_b##*/}"
  for nasplan_k in dm/name dm/uuid md/level loop/backing_file; do
    nasplan_get "$nasplan_b/$nasplan_k"
    [ -n "$nasplan_v" ] && printf '%s_%s=%s\n' "${nasplan_k%%/*}" "${nasplan_k##*/}" "$nasplan_v"
  done
  printf 'slaves='
  for nasplan_d in "$nasplan_b"/slaves/*; do
    [ -e "$nasplan_d" ] && printf '%s ' "${nasplan_d##*/}"
  done
  printf '\n'
done
# Btrfs filesystems: label, member devices, the profile of their data (raid1, single, ...).
for nasplan_f in /sys/fs/btrfs/*-*; do
  [ -d "$nasplan_f" ] || continue
  nasplan_section btrfs
  printf 'uuid=%s\n' "${nasplan_f##*/}"
  nasplan_get "$nasplan_f/label"; printf 'label=%s\n' "$nasplan_v"
  printf 'devices='
  for nasplan_d in "$nasplan_f"/devices/*; do
    [ -e "$nasplan_d" ] && printf '%s ' "${nasplan_d##*/}"
  done
  printf '\ndata='
  for nasplan_d in "$nasplan_f"/allocation/data/*/; do
    [ -d "$nasplan_d" ] && nasplan_d=${nasplan_d%/} && printf '%s ' "${nasplan_d##*/}"
  done
  printf '\n'
done
# The memory this login may use when a cgroup limits it (a container, a NAS's service slice, a
# lab host): cgroup v2's memory.max, or v1's memory.limit_in_bytes, of this process's group.
nasplan_section memory-limit
while IFS=: read -r nasplan_k nasplan_c nasplan_p; do
  case ",$nasplan_c," in
    ,,) nasplan_f=/sys/fs/cgroup$nasplan_p/memory.max ;;
    *,memory,*) nasplan_f=/sys/fs/cgroup/memory$nasplan_p/memory.limit_in_bytes ;;
    *) continue ;;
  esac
  nasplan_get "$nasplan_f" && [ -n "$nasplan_v" ] && printf '%s=%s\n' "$nasplan_f" "$nasplan_v"
done 2>/dev/null < /proc/self/cgroup
# The line below is replaced by what the caller runs in the same round trip on a POSIX host
# (apply: the host lock), in a subshell, after a marker line, with its exit status; it does not
# run in a Windows POSIX layer, which nasplan drives through PowerShell.
@ALSO@
nasplan_section end
exit 0
