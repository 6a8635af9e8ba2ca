#!/bin/bash
# tests/test-run-sh.sh: scripts/run.sh keeps one private bus and daemon between calls, restarts
# the daemon for a newer build or another state directory, and --stop stops both; a clone pointed at a state directory another
# clone's daemon holds is refused, naming that daemon, and by default each build directory has a
# state directory of its own. TAP. Needs root (it runs the daemon).
set -uo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
check() { if eval "$2"; then ok "$1"; else not_ok "$1"; fi; }

if [ "$(id -u)" != 0 ]; then
        [ -n "${CI:-}" ] && { echo "1..1"; echo "not ok 1 - needs root (CI must run it)"; exit 1; }
        echo "1..0 # SKIP needs root"
        exit 0
fi
tmp=$(mktemp -d)
export SECTREE_RUN_DIR=$tmp/run SECTREE_STATE_DIR=$tmp/state SECTREE_PRIVATE_BUS=1
cleanup() {
        "$SRC/scripts/run.sh" --stop >/dev/null 2>&1
        SECTREE_RUN_DIR=$tmp/run2 "$SRC/scripts/run.sh" --stop >/dev/null 2>&1
        SECTREE_RUN_DIR=$tmp/run3 "$SRC/scripts/run.sh" --stop >/dev/null 2>&1
        [ -n "${own_state:-}" ] && rm -rf "$own_state"
        rm -rf "$tmp"
}
trap cleanup EXIT
echo "1..12"

out=$("$SRC/scripts/run.sh" status 2>"$tmp/err")
check "the first call starts a bus and a daemon and runs the verb" '[[ $out == *"Backend: bpf"* ]]'
# what it printed, and the daemon's log, when that failed (TAP comments)
if [[ $out != *"Backend: bpf"* ]]; then
        printf '# out: %s\n' "$out"
        sed 's/^/# err: /' "$tmp/err"
        sed 's/^/# sectreed: /' "$SECTREE_RUN_DIR/sectreed.log" 2>/dev/null | tail -n 20
fi
check "it says where the bus is and how to stop it" 'grep -q "run.sh --stop" "$tmp/err"'
pid=$(cat "$SECTREE_RUN_DIR/sectreed.pid")
bus=$(cat "$SECTREE_RUN_DIR/dbus-daemon.pid")
out=$("$SRC/scripts/run.sh" --json status 2>"$tmp/err2")
check "the second call uses the same daemon and bus" \
        '[[ $out == "{"* ]] && [ "$(cat "$SECTREE_RUN_DIR/sectreed.pid")" = "$pid" ] && kill -0 "$pid" && kill -0 "$bus"'
check "and says nothing about starting them" '[ ! -s "$tmp/err2" ]'
# root may monitor the private bus, as Debian's system bus allows (busctl monitor runs until
# timeout(1) ends it: 124; refused, it fails at once)
timeout 1 busctl --address="unix:path=$SECTREE_RUN_DIR/system_bus_socket" monitor >/dev/null 2>"$tmp/err-monitor"
rc=$?
check "root may monitor the private bus" '[ $rc -eq 124 ]' || sed 's/^/# err: /' "$tmp/err-monitor"
# another clone (its own bus) pointed at the same state directory: refused, naming the holder
SECTREE_RUN_DIR=$tmp/run2 "$SRC/scripts/run.sh" status >/dev/null 2>"$tmp/err-clone"
rc=$?
check "a clone on a state directory another daemon holds fails" '[ $rc -ne 0 ]'
check "and says which daemon holds it" 'grep -q "is in use by another sectreed (pid $pid)" "$tmp/err-clone"' ||
        sed 's/^/# err: /' "$tmp/err-clone"
# without SECTREE_STATE_DIR the state directory is the build's own, not /var/lib/sectree
out=$(env -u SECTREE_STATE_DIR SECTREE_RUN_DIR=$tmp/run3 "$SRC/scripts/run.sh" status 2>/dev/null)
own=$(cat "$tmp/run3/sectreed.pid" 2>/dev/null)
own_state=$(tr '\0' '\n' <"/proc/$own/cmdline" 2>/dev/null | sed -n 's/^--state-dir=//p')
check "by default a build's daemon has a state directory of its own" \
        '[[ $out == *"Backend: bpf"* ]] && [[ $own_state == /var/lib/sectree-run.* ]]'
SECTREE_RUN_DIR=$tmp/run3 "$SRC/scripts/run.sh" --stop >/dev/null 2>&1
touch "$SECTREE_BUILD/daemon/sectreed"
"$SRC/scripts/run.sh" status >/dev/null 2>&1
new=$(cat "$SECTREE_RUN_DIR/sectreed.pid")
check "a newer build restarts the daemon, and only it" \
        '[ "$new" != "$pid" ] && ! kill -0 "$pid" 2>/dev/null && kill -0 "$new" && [ "$(cat "$SECTREE_RUN_DIR/dbus-daemon.pid")" = "$bus" ]'
# another state directory with the same bus: the daemon is restarted on it, and it says so (it
# kept using the first one without a word)
SECTREE_STATE_DIR=$tmp/state2 "$SRC/scripts/run.sh" status >/dev/null 2>"$tmp/err4"
moved=$(cat "$SECTREE_RUN_DIR/sectreed.pid")
moved_state=$(tr '\0' '\n' <"/proc/$moved/cmdline" 2>/dev/null | sed -n 's/^--state-dir=//p')
check "another SECTREE_STATE_DIR restarts the daemon on it, and says so" \
        '[ "$moved" != "$new" ] && [ "$moved_state" = "$tmp/state2" ] && grep -q "Restarting sectreed on the state directory $tmp/state2" "$tmp/err4"' ||
        sed 's/^/# err: /' "$tmp/err4"
new=$moved
"$SRC/scripts/run.sh" --stop 2>"$tmp/err3"
check "--stop stops both and removes the directory" \
        '! kill -0 "$new" 2>/dev/null && ! kill -0 "$bus" 2>/dev/null && [ ! -e "$SECTREE_RUN_DIR" ]'
check "--stop with nothing running says so" '"$SRC/scripts/run.sh" --stop 2>&1 | grep -q "Nothing to stop"'
[ $failed -eq 0 ]
