# nasplan: `make demo` for a first look, `make test` for the whole suite (lab tests need root).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LAB ?= plans/examples/lab.yaml
PLAN ?= plans/examples/nas-upgrade.yaml
# What the demo lab needs, then what the whole test suite's labs add (Samba, NFS, fio, busybox;
# nftables: packet loss on a lab host's link, where the kernel has no netem; chromium and npm:
# the Mermaid render test, scripts/ensure-mermaid.sh; tmux: the live view's test; npm only when no npm is there:
# NodeSource's nodejs carries its own and conflicts with Debian's).
APT_PACKAGES := iperf3 openssh-server openssh-client iproute2 ethtool iputils-ping procps util-linux sudo openssl
TEST_APT_PACKAGES := $(APT_PACKAGES) iputils-tracepath samba smbclient smbnetfs rsync fio busybox libnfs-utils nfs-ganesha nfs-ganesha-vfs tgt libiscsi-bin chromium nftables tmux \
  nbdkit libnbd-bin fuse3 btrfs-progs xfsprogs \
  $(if $(shell command -v npm),,npm)

.PHONY: setup test-setup system-deps test-system-deps venv lint test unit demo demo-down bench examples clean

setup: system-deps venv

test-setup: test-system-deps venv

system-deps:
	@scripts/ensure-system-deps.sh $(APT_PACKAGES)

test-system-deps:
	@scripts/ensure-system-deps.sh $(TEST_APT_PACKAGES)
	@scripts/ensure-mermaid.sh

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $@

lint: venv
	$(BIN)/ruff check nasplan tests bench
	$(BIN)/ruff format --check nasplan tests bench
	$(BIN)/mypy

# the unit tests, then the lab's: its timer-bound fault tests in a second pytest beside the others
test: test-setup lint
	$(BIN)/pytest tests/unit
	scripts/test-lab.sh $(BIN)/pytest

unit: venv
	$(BIN)/pytest tests/unit

demo: setup
	$(BIN)/nasplan lab up $(LAB)
	$(BIN)/nasplan apply $(PLAN); status=$$?; \
	  echo "The lab stays up for more runs; 'make demo-down' takes it down."; exit $$status

demo-down: venv
	$(BIN)/nasplan lab down $(LAB)

# apply's start to its first connection (imports), nasplan's overhead against the SSH floor at 1,
# 2, 10 and 30 lab hosts and against ansible-playbook on the same work, --check at 30 hosts with
# disk tests against iperf3 tests, the dead time per cell of a 24-cell matrix, repetitions until
# clear against a fixed five on an 8-cell matrix, then where one apply's time goes, the control
# node's CPU and memory per host to 60 hosts as lines, then how close
# --list-tests' estimates come (root: it uses the lab). About 40 minutes; not part of `make test`.
bench: test-setup
	$(BIN)/python bench/apply_imports.py
	$(BIN)/python bench/overhead_floor.py
	$(BIN)/python bench/ansible_playbook.py
	$(BIN)/python bench/check_hosts.py
	$(BIN)/python bench/matrix_dead_time.py
	$(BIN)/python bench/adaptive_matrix.py
	$(BIN)/python bench/profile_apply.py
	$(BIN)/python bench/control_per_host.py
	$(BIN)/python bench/estimate_accuracy.py

# docs/examples/ (linked from the README) drawn again from their kept run.json files, no lab:
# after any change to the report or the comparison. tests/unit/report/test_examples.py fails when
# they are stale (it runs these same commands into a scratch copy).
EXAMPLES := docs/examples
examples: venv
	$(BIN)/nasplan report $(EXAMPLES)/ts253d-10g --charts png
	$(BIN)/nasplan report $(EXAMPLES)/ts253d-matrix
	$(BIN)/nasplan report $(EXAMPLES)/ts253d-disks
	$(BIN)/nasplan compare $(EXAMPLES)/compare-runs/p2p10-2g5 $(EXAMPLES)/compare-runs/p2p10-10g \
	  --label p2p10=2.5G --label p2p10=10G --out $(EXAMPLES)/compare.md --charts png

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache *.egg-info
