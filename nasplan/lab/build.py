"""Build a lab from its model, record each piece in state.json as it is made, and undo it all."""

from __future__ import annotations

import contextlib
import ipaddress
import shutil
import socket
from collections.abc import Callable
from pathlib import Path

from nasplan.errors import LabError
from nasplan.lab import (
    cgroups,
    hostfs,
    inventory_out,
    netns,
    personalities,
    services,
    shaping,
    sshd,
    volumes,
)
from nasplan.lab.model import LAN_INTERFACE, Lab, LabHost, Link
from nasplan.lab.state import STATE_FILE, HostState, LabState, LinkState

GENERATED_FILES = (
    STATE_FILE,
    "known_hosts",
    "id_ed25519",
    "id_ed25519.pub",
    "authorized_keys",
    "ssh_config",
    "inventory.yaml",
)


def new_state(lab: Lab, state_dir: Path) -> LabState:
    """An empty record for ``lab`` in ``state_dir`` (nothing made yet)."""
    names = lab.names
    return LabState(
        state_dir=state_dir,
        lab_name=lab.name,
        lab_file=str(lab.path.resolve()),
        bridge=names.bridge,
        control_address=lab.control_address,
        link_prefix=names.link_prefix,
        namespace_prefix=names.namespace_prefix,
        lab_digest=lab.digest,
    )


def conflicts(lab: Lab, own: LabState | None = None) -> list[str]:
    """Why ``lab`` cannot be built now: its names or LAN prefix are taken by something else."""
    names = lab.names
    own_links = set(own.root_links) if own else set()
    problems = [
        f"network namespace {host.namespace} already exists (is lab {lab.name} up elsewhere?)"
        for host in lab.hosts
        if netns.namespace_exists(host.namespace) and not (own and host.namespace in own.namespaces)
    ]
    existing = set(netns.root_links())
    taken = [link for link in existing if link.startswith(names.link_prefix)]
    problems += [f"interface {link} already exists" for link in taken if link not in own_links]
    lan = ipaddress.ip_network(lab.lan_prefix)
    for ifname, cidr in netns.root_ipv4_addresses():
        if ifname not in own_links and ipaddress.ip_interface(cidr).network.overlaps(lan):
            problems.append(f"LAN prefix {lan} overlaps {cidr} on {ifname}")
    return problems


def build(lab: Lab, state: LabState) -> None:
    """Create bridge, namespaces, links, shaping, keys, sshds and files; ``state`` records each."""
    names = lab.names
    state.save()
    state.created_privsep_dir = sshd.ensure_privsep_dir()
    state.root_links.append(names.bridge)
    state.save()
    netns.add_bridge(names.bridge, lab.control_address)
    lan = LinkState("lan", lab.lan_rate, lab.lan_mtu_bytes, [])
    state.links["lan"] = lan
    for host in lab.hosts:
        if host.jump is not None:
            _add_hidden_host(state, host)
            continue
        root_side = names.lan_root_side(host.index)
        state.namespaces.append(host.namespace)
        state.root_links.append(root_side)
        state.hosts[host.name] = HostState(
            name=host.name,
            namespace=host.namespace,
            address=host.lan_address,
            personality=host.personality,
            lan_root_side=root_side,
            interfaces={"lan": {"name": LAN_INTERFACE, "role": "lan", "address": host.lan_address}},
        )
        state.save()
        netns.add_namespace(host.namespace)
        netns.add_veth(root_side, names.lan_host_side(host.index))
        netns.move_and_rename(
            names.lan_host_side(host.index), host.namespace, LAN_INTERFACE, lab.lan_mtu_bytes
        )
        netns.set_up(LAN_INTERFACE, host.namespace, host.lan_address)
        netns.enslave(root_side, names.bridge, lab.lan_mtu_bytes)
        shaping.shape(LAN_INTERFACE, lab.lan_bits_per_second, host.namespace)
        shaping.shape(root_side, lab.lan_bits_per_second)
        lan.ends += [(host.namespace, LAN_INTERFACE), (None, root_side)]
    for index, link in enumerate(lab.links):
        _build_link(lab, state, index, link)
    for host in lab.hosts:
        if host.forward:
            netns.run(["sysctl", "-qw", "net.ipv4.ip_forward=1"], netns=host.namespace)
        for prefix, via in host.routes:
            netns.run(["ip", "-n", host.namespace, "route", "add", prefix, "via", via])
    _start_hosts(lab, state)
    write_files(state)
    state.complete = True
    state.save()


def _add_hidden_host(state: LabState, host: LabHost) -> None:
    """A host with no LAN port: only its links (made next) reach it, through its jump host,
    which does not forward (the namespace default): ssh through the jump host is the one way."""
    state.namespaces.append(host.namespace)
    state.hosts[host.name] = HostState(
        name=host.name,
        namespace=host.namespace,
        address=host.address,
        personality=host.personality,
        lan_root_side="",
        jump=host.jump,
    )
    state.save()
    netns.add_namespace(host.namespace)


def _build_link(lab: Lab, state: LabState, index: int, link: Link) -> None:
    names = lab.names
    temp = {"a": names.link_end(index, "a"), "b": names.link_end(index, "b")}
    state.root_links += list(temp.values())
    state.links[link.name] = LinkState(link.name, link.rate, link.mtu_bytes, [])
    state.save()
    netns.add_veth(temp["a"], temp["b"])
    for side, end in (("a", link.a), ("b", link.b)):
        namespace = lab.host(end.host).namespace
        netns.move_and_rename(temp[side], namespace, end.interface, link.mtu_bytes)
        netns.set_up(end.interface, namespace, end.address)
        shaping.shape(end.interface, link.shaped_bits_per_second, namespace)
        state.links[link.name].ends.append((namespace, end.interface))
        iface = {"name": end.interface, "role": "test"}
        if end.address:
            iface["address"] = end.address
        state.hosts[end.host].interfaces[link.name] = iface
    state.save()


def _addresses(host: HostState) -> list[str]:
    """A lab host's IPv4 addresses: its LAN address first, then each addressed link end's."""
    found = [host.ip]
    for iface in host.interfaces.values():
        address = str(iface.get("address") or "").split("/")[0]
        if address and address not in found:
            found.append(address)
    return found


def _start_hosts(lab: Lab, state: LabState) -> None:
    client_pub = sshd.generate_key(state.identity_path, f"nasplan-lab-{lab.name}")
    authorized_keys = state.state_dir / "authorized_keys"
    authorized_keys.write_text(client_pub + "\n")
    authorized_keys.chmod(0o600)
    host_keys: dict[str, str] = {}
    wrappers: dict[str, Path] = {}
    for host in lab.hosts:
        host_dir = state.host_dir(host.name)
        host_dir.mkdir(parents=True, exist_ok=True)
        negotiated = {
            end.interface: end.negotiated_bits_per_second // 1_000_000
            for link in lab.links
            for end in (link.a, link.b)
            if end.host == host.name and end.negotiated_bits_per_second
        }
        sysfs = hostfs.negotiated_speed_commands(host_dir, negotiated)
        if host.memory_bytes is not None:
            sysfs += hostfs.cgroup_commands(cgroups.layout().root)
        wrapper, host_pub = sshd.write_host_files(
            host_dir,
            authorized_keys,
            personalities.get(host.personality, host.personality_options),
            sysfs,
        )
        sshd.check_config(host_dir / "sshd_config")
        # sshd answers on every address of the host: the LAN's and each addressed cable's.
        for address in _addresses(state.hosts[host.name]):
            host_keys[address] = host_pub
        wrappers[host.name] = wrapper
    state.known_hosts_path.write_text(inventory_out.render_known_hosts(host_keys))
    for host in lab.hosts:
        if host.memory_bytes is not None:
            _limit_memory(lab, state, host)
    for name, wrapper in wrappers.items():
        group = state.hosts[name].cgroup
        pid = sshd.start(
            state.hosts[name].namespace,
            wrapper,
            wrapper.parent / "sshd.log",
            Path(group) if group else None,
        )
        state.hosts[name].sshd_pid = pid
        state.pids.append(pid)
        state.save()
    for name, running in state.hosts.items():
        assert running.sshd_pid is not None
        log = state.host_dir(name) / "sshd.log"
        if running.jump is None:
            sshd.wait_ready(running.ip, running.sshd_pid, log)
        else:  # nothing reaches it from here: asked inside its own namespace
            sshd.wait_listening_inside(running.namespace, running.sshd_pid, log)
    for host in lab.hosts:
        mounted = _mount_volumes(state, host)
        if host.services:
            running = state.hosts[host.name]
            addresses = [i["address"] for i in running.interfaces.values() if i.get("address")]
            assert running.sshd_pid is not None
            pids = services.start_services(
                host, state.host_dir(host.name), addresses, running.sshd_pid, mounted
            )
            state.pids += pids
            state.save()
        _list_volumes(state, host)


def _limit_memory(lab: Lab, state: LabState, host: LabHost) -> None:
    """The host's memory limit: a cgroup its sshd (and so its daemons) start in."""
    assert host.memory_bytes is not None
    group = cgroups.layout().group(cgroups.group_name(lab.name, host.name))
    state.hosts[host.name].cgroup = str(group)
    state.save()
    cgroups.create(group.name, host.memory_bytes)


def _mount_volumes(state: LabState, host: LabHost) -> dict[str, str]:
    """Make and mount the host's volumes: name -> where its daemons see it (a vendor's root
    put in front of its path)."""
    if not host.volumes:
        return {}
    missing = volumes.tools_missing()
    if missing:
        raise LabError(f"lab volumes need {', '.join(missing)} (Makefile TEST_APT_PACKAGES)")
    running = state.hosts[host.name]
    assert running.sshd_pid is not None
    host_dir = state.host_dir(host.name)
    prefix = personalities.get(host.personality, host.personality_options).exec_prefix(host_dir)
    root = prefix[1] if prefix[:1] == ["chroot"] else ""
    made = volumes.Made(state.volume_pids, state.loops, state.fuse_dirs)
    for volume in host.volumes:
        try:
            volumes.start(volume, host_dir, running.sshd_pid, root, made)
        finally:
            state.save()
    return {volume.name: root + volume.path for volume in host.volumes}


def _list_volumes(state: LabState, host: LabHost) -> None:
    """What the inventory says of the host's volumes: path, share and export where served."""
    for volume in host.volumes:
        entry = volumes.inventory_entry(volume, host.services)
        state.hosts[host.name].volumes[volume.name] = entry
    state.save()


def write_files(state: LabState) -> None:
    """Write ssh_config and inventory.yaml from ``state`` (known_hosts is written with the keys)."""
    state.ssh_config_path.write_text(inventory_out.render_ssh_config(state))
    state.inventory_path.write_text(inventory_out.render_inventory(state))


def problems(state: LabState) -> list[str]:
    """What is wrong with a lab that ``state`` says is up (empty when all is well)."""
    found = [] if state.complete else ["lab up did not finish"]
    if not netns.link_exists(state.bridge):
        found.append(f"bridge {state.bridge} is missing")
    for host in state.hosts.values():
        if not netns.namespace_exists(host.namespace):
            found.append(f"{host.name}: namespace {host.namespace} is missing")
        if host.sshd_pid is None or not netns.pid_alive(host.sshd_pid):
            found.append(f"{host.name}: sshd (PID {host.sshd_pid}) is not running")
            continue
        if host.jump is not None:
            if not sshd.listening_inside(host.namespace):
                found.append(f"{host.name}: sshd does not listen on port 22 in its namespace")
            found += services.problems(host.name, state.host_dir(host.name))
            continue
        try:
            with socket.create_connection((host.ip, sshd.SSH_PORT), timeout=2.0):
                pass
        except OSError as exc:
            found.append(f"{host.name}: sshd on {host.ip}:22 does not answer ({exc})")
        found += services.problems(host.name, state.host_dir(host.name))
    for name in ("known_hosts", "id_ed25519", "ssh_config", "inventory.yaml"):
        if not (state.state_dir / name).exists():
            found.append(f"{state.state_dir / name} is missing")
    return found


def teardown(state: LabState) -> list[str]:
    """Stop every lab process, delete namespaces, links and generated files; return what failed."""
    failures: list[str] = []
    pids = list(state.pids)
    for name in state.hosts:
        services.stop_services(state.host_dir(name))
    for namespace in state.namespaces:
        pids += netns.namespace_pids(namespace)
    netns.stop_pids(sorted(set(pids)))
    for namespace in state.namespaces:
        _attempt(failures, netns.delete_namespace, namespace)
    # the hosts' mount namespaces are gone with their processes: their volumes are unmounted
    failures += volumes.stop(volumes.Made(state.volume_pids, state.loops, state.fuse_dirs))
    for host in state.hosts.values():
        problem = cgroups.remove(Path(host.cgroup)) if host.cgroup else None
        failures += [problem] if problem else []
    for link in reversed(state.root_links):
        _attempt(failures, netns.delete_link, link)
    if state.created_privsep_dir:
        sshd.remove_privsep_dir()
    _remove_files(state)
    return failures


def _attempt(failures: list[str], action: Callable[[str], None], name: str) -> None:
    try:
        action(name)
    except LabError as exc:
        failures.append(str(exc))


def _remove_files(state: LabState) -> None:
    # Only what lab up wrote: --state-dir may point into a directory holding other files.
    for name in state.hosts:
        services.remove(state.host_dir(name))
        shutil.rmtree(state.host_dir(name), ignore_errors=True)
    _rmdir(state.state_dir / "hosts")
    for name in GENERATED_FILES:
        (state.state_dir / name).unlink(missing_ok=True)
    (state.state_dir / (STATE_FILE + ".tmp")).unlink(missing_ok=True)
    _rmdir(state.state_dir)
    if state.state_dir.parent.name == ".lab":
        _rmdir(state.state_dir.parent)


def _rmdir(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.rmdir()
