#!/usr/bin/env bash
# The lab tests in two pytest runs at once: those marked lab_timers (fault tests that mostly wait
# for a host's timer: a lease, an outage, a host's own revert) beside all the others, each with
# its own temporary directory (not named nasplan-*: the tests look for what nasplan left). The
# second run's output follows the first's; the exit status is the first failing run's. Extra
# arguments go to both runs.
#   scripts/test-lab.sh .venv/bin/pytest [PYTEST ARGS...]
set -uo pipefail
pytest=$1
shift
log=$(mktemp /tmp/pytest-lab-timers.XXXXXX.log)
trap 'rm -f "$log"' EXIT
"$pytest" tests/lab -m lab_timers --basetemp=/tmp/pytest-lab-timers -p no:cacheprovider "$@" \
  >"$log" 2>&1 &
timers=$!
"$pytest" tests/lab -m "not lab_timers" --basetemp=/tmp/pytest-lab "$@"
rest=$?
wait "$timers"
waited=$?
echo "=== the lab's timer-bound tests (run beside the others) ==="
cat "$log"
if [ "$rest" -ne 0 ]; then exit "$rest"; fi
exit "$waited"
