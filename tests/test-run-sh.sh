#!/bin/bash
# tests/test-run-sh.sh: scripts/run.sh keeps one private bus and daemon between calls, restarts
# the daemon for a newer build, and --stop stops both. TAP. Needs root (it runs the daemon).
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
cleanup() { "$SRC/scripts/run.sh" --stop >/dev/null 2>&1; rm -rf "$tmp"; }
trap cleanup EXIT
echo "1..7"

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
touch "$SECTREE_BUILD/daemon/sectreed"
"$SRC/scripts/run.sh" status >/dev/null 2>&1
new=$(cat "$SECTREE_RUN_DIR/sectreed.pid")
check "a newer build restarts the daemon, and only it" \
        '[ "$new" != "$pid" ] && ! kill -0 "$pid" 2>/dev/null && kill -0 "$new" && [ "$(cat "$SECTREE_RUN_DIR/dbus-daemon.pid")" = "$bus" ]'
"$SRC/scripts/run.sh" --stop 2>"$tmp/err3"
check "--stop stops both and removes the directory" \
        '! kill -0 "$new" 2>/dev/null && ! kill -0 "$bus" 2>/dev/null && [ ! -e "$SECTREE_RUN_DIR" ]'
check "--stop with nothing running says so" '"$SRC/scripts/run.sh" --stop 2>&1 | grep -q "Nothing to stop"'
[ $failed -eq 0 ]
