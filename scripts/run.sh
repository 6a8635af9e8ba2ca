#!/bin/bash
# scripts/run.sh: the main job on a fresh machine: install what is missing, build, start the daemon
# and show this machine's seccomp filter forest with `sectreectl tree`.
#
#   ./scripts/run.sh                 the forest, as `sectreectl tree`
#   ./scripts/run.sh ps              any other sectreectl verb and options
#   ./scripts/run.sh --scan [ARGS]   no daemon: one `sectreed scan` (e.g. --scan --format=json)
#   ./scripts/run.sh --stop          stop the private bus and daemon that earlier calls left running
#
# With a systemd system and a system bus it installs sectree (meson install) and starts
# sectreed.service. Without one (containers, CI), or with SECTREE_PRIVATE_BUS=1, it starts a private
# dbus-daemon configured like the system bus and sectreed on it, and leaves both running for the
# next call (restarting the daemon when the build has a newer one), so that only the first call
# waits for them. Clones or worktrees running side by side each get their own bus, daemon and state
# directory (named after the build directory): two daemons on one database would corrupt each
# other's view, and sectreed refuses to start on a state directory another daemon holds.
# Environment: SECTREE_STATE_DIR (the private daemon's --state-dir, default
# /var/lib/sectree-run.ID), SECTREE_RUN_DIR (where the private bus lives, default
# /run/sectree-run.ID), SECTREE_BUILD (the build directory, default build/); ID is a hash of the
# build directory's path.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

SECTREED="$SECTREE_BUILD/daemon/sectreed"
SECTREECTL="$SECTREE_BUILD/client/sectreectl"
# One private bus, daemon and state directory per build directory: several clones or worktrees may
# run side by side.
CLONE_ID=$(printf %s "$SECTREE_BUILD" | md5sum | cut -c1-8)
RUN_DIR=${SECTREE_RUN_DIR:-/run/sectree-run.$CLONE_ID}
STATE_DIR=${SECTREE_STATE_DIR:-/var/lib/sectree-run.$CLONE_ID}
BUS_SOCKET=$RUN_DIR/system_bus_socket

# Is the process of pid file $1 alive and running program $2 (or an older build of it)?
running() {
        local pid exe
        pid=$(cat "$1" 2>/dev/null) || return 1
        exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
        [ "${exe% (deleted)}" = "$(readlink -f "$2")" ]
}

# Send SIGTERM to the process of pid file $1 (running $2) and wait up to 10 s for it to go.
stop_process() {
        running "$1" "$2" || return 0
        local pid
        pid=$(cat "$1")
        kill "$pid" 2>/dev/null || return 0
        for _ in $(seq 1 200); do
                kill -0 "$pid" 2>/dev/null || return 0
                sleep 0.05
        done
        kill -KILL "$pid" 2>/dev/null || true
}

stop_private() {
        if [ ! -d "$RUN_DIR" ]; then
                echo "Nothing to stop: no private bus at $RUN_DIR." >&2
                return 0
        fi
        stop_process "$RUN_DIR/sectreed.pid" "$SECTREED"
        stop_process "$RUN_DIR/dbus-daemon.pid" "$(command -v dbus-daemon)"
        rm -rf "$RUN_DIR"
        echo "Stopped the private bus and sectreed at $RUN_DIR." >&2
}

if [ "${1:-}" = "--stop" ]; then
        require_root
        stop_private
        exit 0
fi

require_root
install_packages
build
mount_tracefs

if [ "${1:-}" = "--scan" ]; then
        shift
        exec "$SECTREED" scan "$@"
fi
[ $# -gt 0 ] || set -- tree

run_with_systemd() {
        meson install -C "$SECTREE_BUILD" --quiet >/dev/null || die "meson install failed"
        systemctl daemon-reload
        busctl --system call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus ReloadConfig
        systemctl start sectreed.service || die "systemctl start sectreed.service failed (journalctl -u sectreed)"
        exec "$SECTREECTL" "$@"
}

start_bus() {
        rm -rf "$RUN_DIR"
        mkdir -p "$RUN_DIR"
        chmod 0755 "$RUN_DIR" # unprivileged clients must reach the socket
        sed -e "s|@DIR@|$RUN_DIR|g" -e "s|@POLICY@|$SECTREE_SRC/dbus/org.sectree1.conf|g" \
                "$SECTREE_SRC/dbus/private-system-bus.conf.in" > "$RUN_DIR/bus.conf"
        dbus-daemon --config-file="$RUN_DIR/bus.conf" --fork --print-pid=3 3>"$RUN_DIR/dbus-daemon.pid" 2>/dev/null ||
                die "dbus-daemon did not start"
        for _ in $(seq 1 200); do [ -S "$BUS_SOCKET" ] && return 0; sleep 0.01; done
        die "dbus-daemon did not create $BUS_SOCKET"
}

# Wait until the daemon answers on the bus (it sends READY=1 once the first scan is stored): up to
# 60 s, since a machine that other work keeps busy can make its first pass slow.
wait_for_daemon() {
        for _ in $(seq 1 1200); do
                "$SECTREECTL" status >/dev/null 2>&1 && return 0
                running "$RUN_DIR/sectreed.pid" "$SECTREED" ||
                        die "sectreed exited: $(tail -n 5 "$RUN_DIR/sectreed.log" 2>/dev/null)"
                sleep 0.05
        done
        die "sectreed did not come up within 60 s (see $RUN_DIR/sectreed.log)"
}

start_daemon() {
        stop_process "$RUN_DIR/sectreed.pid" "$SECTREED"
        # its own session: it outlives this script, and a Ctrl+C here does not reach it; restores
        # run the executor of this build
        SECTREE_RESTORE="$SECTREE_BUILD/executor/sectree-restore" setsid "$SECTREED" --state-dir="$STATE_DIR" \
                </dev/null >>"$RUN_DIR/sectreed.log" 2>&1 &
        echo $! >"$RUN_DIR/sectreed.pid"
        # the build it runs: a newer build restarts it; and its state directory: another restarts it
        touch -r "$SECTREED" "$RUN_DIR/sectreed.stamp"
        printf '%s\n' "$STATE_DIR" >"$RUN_DIR/sectreed.state-dir"
        wait_for_daemon
}

run_on_private_bus() {
        export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$BUS_SOCKET"
        if ! running "$RUN_DIR/dbus-daemon.pid" "$(command -v dbus-daemon)" || [ ! -S "$BUS_SOCKET" ]; then
                start_bus
                cat >&2 <<EOF
No system bus here: started a private one at $RUN_DIR, and sectreed on it.
Both keep running for the next call; ./scripts/run.sh --stop stops them. To use the client directly:
    export DBUS_SYSTEM_BUS_ADDRESS=$DBUS_SYSTEM_BUS_ADDRESS
EOF
        fi
        local ran_on
        ran_on=$(cat "$RUN_DIR/sectreed.state-dir" 2>/dev/null || true)
        if ! running "$RUN_DIR/sectreed.pid" "$SECTREED" || [ "$SECTREED" -nt "$RUN_DIR/sectreed.stamp" ]; then
                start_daemon
        elif [ "$ran_on" != "$STATE_DIR" ]; then
                echo "Restarting sectreed on the state directory $STATE_DIR (it ran on ${ran_on:-another})." >&2
                start_daemon
        fi
        exec "$SECTREECTL" "$@"
}

if [ -z "${SECTREE_PRIVATE_BUS:-}" ] && [ -d /run/systemd/system ] && [ -S /run/dbus/system_bus_socket ]; then
        run_with_systemd "$@"
else
        run_on_private_bus "$@"
fi
