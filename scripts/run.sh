#!/bin/bash
# scripts/run.sh: the main job on a fresh machine: install what is missing, build, start the daemon
# and show this machine's seccomp filter forest with `sectreectl tree`.
#
#   ./scripts/run.sh                 the forest, as `sectreectl tree`
#   ./scripts/run.sh ps              any other sectreectl verb and options
#   ./scripts/run.sh --scan [ARGS]   no daemon: one `sectreed scan` (e.g. --scan --format=json)
#
# With a systemd system and a system bus it installs sectree (meson install) and starts
# sectreed.service. Without one (containers, CI) it starts a private dbus-daemon configured like
# the system bus, runs sectreed on it, shows the forest, and stops both again.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
install_packages
build
mount_tracefs

SECTREED="$SECTREE_BUILD/daemon/sectreed"
SECTREECTL="$SECTREE_BUILD/client/sectreectl"

if [ "${1:-}" = "--scan" ]; then
        shift
        exec "$SECTREED" scan "$@"
fi
[ $# -gt 0 ] || set -- tree

# Wait until the daemon answers on the bus (it sends READY=1 once the first scan is stored).
wait_for_daemon() {
        for _ in $(seq 1 200); do
                "$SECTREECTL" status >/dev/null 2>&1 && return 0
                kill -0 "$1" 2>/dev/null || die "sectreed exited; see the messages above"
                sleep 0.05
        done
        die "sectreed did not come up within 10 s"
}

run_with_systemd() {
        meson install -C "$SECTREE_BUILD" --quiet >/dev/null || die "meson install failed"
        systemctl daemon-reload
        busctl --system call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus ReloadConfig
        systemctl start sectreed.service || die "systemctl start sectreed.service failed (journalctl -u sectreed)"
        exec "$SECTREECTL" "$@"
}

BUS_DIR= BUS_PID= DAEMON_PID=
stop_private_bus() {
        [ -n "$DAEMON_PID" ] && kill "$DAEMON_PID" 2>/dev/null && wait "$DAEMON_PID" 2>/dev/null
        [ -n "$BUS_PID" ] && kill "$BUS_PID" 2>/dev/null && wait "$BUS_PID" 2>/dev/null
        [ -n "$BUS_DIR" ] && rm -rf "$BUS_DIR"
        return 0
}

run_on_private_bus() {
        local dir
        dir=$(mktemp -d /run/sectree-bus.XXXXXX)
        BUS_DIR=$dir
        trap stop_private_bus EXIT
        chmod 0755 "$dir"
        sed -e "s|@DIR@|$dir|g" -e "s|@POLICY@|$SECTREE_SRC/dbus/org.sectree1.conf|g" \
                "$SECTREE_SRC/dbus/private-system-bus.conf.in" > "$dir/bus.conf"
        dbus-daemon --config-file="$dir/bus.conf" --nofork --nopidfile 2>/dev/null &
        BUS_PID=$!
        for _ in $(seq 1 200); do [ -S "$dir/system_bus_socket" ] && break; sleep 0.01; done
        export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$dir/system_bus_socket"
        echo "No system bus here: using a private one at $dir (stopped again on exit)." >&2
        "$SECTREED" --state-dir="${SECTREE_STATE_DIR:-/var/lib/sectree}" 2> >(grep -v "^Received Terminated" >&2) &
        DAEMON_PID=$!
        wait_for_daemon "$DAEMON_PID"
        "$SECTREECTL" "$@"
}

if [ -d /run/systemd/system ] && [ -S /run/dbus/system_bus_socket ]; then
        run_with_systemd "$@"
else
        run_on_private_bus "$@"
fi
