#!/bin/bash
# tests/test-unit-systemd.sh: run the installed sectreed.service under a real booted systemd.
#
# `meson install --destdir` puts the build (unit, bus policy, activation file, binaries) into a
# temporary tree, which is copied onto an overlay of / whose upper layer is a tmpfs. systemd 252
# boots as PID 1 of private pid, mount, cgroup, uts and ipc namespaces on that overlay, with its
# own journald and dbus-daemon system bus, under a child cgroup of the host's cgroup2 hierarchy.
# The daemon is then started by bus activation, as on a real machine, and driven through the bus
# with all of the unit's hardening in force. Prints TAP. The host is left untouched: every mount
# lives in the private mount namespace, and PID 1 of the namespace, the cgroup and the temporary
# files are removed on exit, whatever happens.
#
# Environment: SECTREE_BUILD, the build directory (required). CI set: a skip is a failure.
set -uo pipefail

BUILD=${SECTREE_BUILD:?SECTREE_BUILD must name the build directory}
ns_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
n=0
failed=0
pid1=
work=
cg=

ok() {  # ok CONDITION-STATUS DESCRIPTION
        n=$((n + 1))
        if [ "$1" -eq 0 ]; then
                echo "ok $n - $2"
        else
                echo "not ok $n - $2"
                failed=$((failed + 1))
        fi
}

diag() {
        sed 's/^/# /'
}

skip_all() {
        if [ -n "${CI:-}" ]; then
                echo "not ok 1 - $1 (a skip is a failure when CI is set)"
                echo "1..1"
                exit 1
        fi
        echo "1..0 # SKIP $1"
        exit 0
}

cleanup() {
        local _
        if [ -n "$pid1" ]; then
                # SIGKILL of PID 1 kills every process of the namespace; its mounts go with it.
                kill -KILL "$pid1" 2>/dev/null
                for _ in $(seq 100); do
                        kill -0 "$pid1" 2>/dev/null || break
                        sleep 0.05
                done
        fi
        if [ -n "$cg" ] && [ -d "$cg" ]; then
                for _ in $(seq 100); do
                        # depth first: the deepest cgroups are removed before their parents
                        find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null
                        [ -d "$cg" ] || break
                        sleep 0.05
                done
                [ -d "$cg" ] && echo "# could not remove cgroup $cg" >&2
        fi
        [ -n "$work" ] && rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# inside CMD...: run CMD in every namespace of the booted systemd, with a clean environment.
inside() {
        timeout -k 5 "${INSIDE_TIMEOUT:-30}" nsenter -t "$pid1" -a \
                env -i PATH="$ns_path" LANG=C.UTF-8 SYSTEMD_COLORS=0 SYSTEMD_PAGER= "$@"
}

[ "$(id -u)" = 0 ] || skip_all "needs root"
[ -x /lib/systemd/systemd ] || skip_all "no /lib/systemd/systemd"
[ -d /sys/fs/cgroup/unified ] || [ -f /sys/fs/cgroup/cgroup.controllers ] || skip_all "no cgroup2 hierarchy"
for t in unshare nsenter pivot_root busctl python3 timeout; do
        command -v "$t" >/dev/null || skip_all "no $t"
done

# What a run killed outright (SIGKILL: no trap) left behind: its cgroup, empty once its namespace
# died, and its temporary directory, both named after its pid.
for d in /sys/fs/cgroup/unified/sectree-unit-systemd-* /sys/fs/cgroup/sectree-unit-systemd-* \
        /tmp/sectree-unit-systemd.*.*; do
        [ -d "$d" ] || continue
        p=${d##*[-/]sectree-unit-systemd[-.]}
        p=${p%%.*}
        if ! [[ $p =~ ^[0-9]+$ ]] || kill -0 "$p" 2>/dev/null; then
                continue
        fi
        case $d in
        /sys/*) find "$d" -depth -type d -exec rmdir {} + 2>/dev/null ;;
        *) rm -rf "$d" ;;
        esac
done
work=$(mktemp -d "/tmp/sectree-unit-systemd.$$.XXXXXX")
chmod 0755 "$work"

# 1. The build as `meson install` lays it out, under $work/dest.
if ! meson install -C "$BUILD" --destdir "$work/dest" --no-rebuild --quiet >"$work/install.log" 2>&1; then
        diag <"$work/install.log"
        ok 1 "meson install --destdir"
        echo "1..$n"
        exit 1
fi
ok 0 "meson install --destdir"
# dbus-daemon's system policy and system service directories (Debian's; the activation below
# proves that dbus-daemon read both files, and systemd the unit).
unit=$(find "$work/dest" -name sectreed.service -path '*systemd/system*' | head -n1)
[ -n "$unit" ] && [ -f "$work/dest/usr/share/dbus-1/system.d/org.sectree1.conf" ] &&
        [ -f "$work/dest/usr/share/dbus-1/system-services/org.sectree1.service" ]
ok $? "the unit, the bus policy and the activation file are installed where systemd and dbus-daemon read them"
sbin=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$unit")
[ -x "$work/dest$sbin" ]
ok $? "the unit's ExecStart= ($sbin) is the installed sectreed"

# The boot target: journald, the system bus, nothing else.
mkdir -p "$work/dest/etc/systemd/system"
cat >"$work/dest/etc/systemd/system/sectree-test.target" <<'EOF'
[Unit]
Description=sectree unit test
Requires=sysinit.target dbus.socket
After=sysinit.target dbus.socket
AllowIsolate=yes
EOF

# 2. The namespace's cgroup: a child of the host's cgroup2 hierarchy.
cgroot=/sys/fs/cgroup/unified
[ -f /sys/fs/cgroup/cgroup.controllers ] && cgroot=/sys/fs/cgroup
cg=$cgroot/sectree-unit-systemd-$$
mkdir "$cg" || skip_all "cannot create a cgroup under $cgroot"

# 3. What PID 1 runs before it becomes systemd: overlay root, private /run, /tmp, /dev, /proc,
#    read-only /proc/sys and /sys, cgroup2 at /sys/fs/cgroup, the installed files, pivot_root.
cat >"$work/boot.sh" <<'EOF'
set -eu
work=$1
read -r hostpid _ </proc/self/stat
echo "$hostpid" >"$work/pid1.tmp" && mv "$work/pid1.tmp" "$work/pid1"
mount --make-rprivate /
mkdir -p "$work/layers" "$work/root"
mount -t tmpfs -o mode=0755 tmpfs "$work/layers"
mkdir -p "$work/layers/upper" "$work/layers/work"
mount -t overlay overlay -o "lowerdir=/,upperdir=$work/layers/upper,workdir=$work/layers/work" "$work/root"
r=$work/root
# tar keeps the root's /lib -> usr/lib symbolic link where cp would refuse to replace it
tar -C "$work/dest" -cf - . | tar -C "$r" -xf - --keep-directory-symlink --no-overwrite-dir
for d in run tmp dev; do
        mount -t tmpfs -o mode=0755,nosuid tmpfs "$r/$d"
done
chmod 1777 "$r/tmp"
mknod -m 666 "$r/dev/null" c 1 3
mknod -m 666 "$r/dev/zero" c 1 5
mknod -m 666 "$r/dev/full" c 1 7
mknod -m 666 "$r/dev/random" c 1 8
mknod -m 666 "$r/dev/urandom" c 1 9
mknod -m 666 "$r/dev/tty" c 5 0
mkdir -p "$r/dev/pts" "$r/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$r/dev/pts"
ln -s pts/ptmx "$r/dev/ptmx"
ln -s /proc/self/fd "$r/dev/fd"
ln -s /proc/self/fd/0 "$r/dev/stdin"
ln -s /proc/self/fd/1 "$r/dev/stdout"
ln -s /proc/self/fd/2 "$r/dev/stderr"
mount -t proc proc "$r/proc"
mount --bind "$r/proc/sys" "$r/proc/sys"
mount -o remount,bind,ro "$r/proc/sys"
mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$r/sys"
mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 "$r/sys/fs/cgroup"
: >"$r/etc/machine-id"
cd "$r"
mkdir -p .oldroot
pivot_root . .oldroot
umount -l /.oldroot
rmdir /.oldroot
exec env -i container=sectree-test /lib/systemd/systemd --system --unit=sectree-test.target \
        --log-target=journal-or-kmsg </dev/null >/dev/null 2>&1
EOF

# 4. Boot. The launcher moves itself into the cgroup, then unshares; its child is PID 1.
t0=$(date +%s%N)
# setpriv --pdeathsig: if this script is killed outright (no trap runs), unshare dies with it and
# --kill-child takes PID 1, and with it the whole namespace.
# shellcheck disable=SC2016 # $$, $1 and $2 are the launcher's
setsid setpriv --pdeathsig KILL bash -c 'echo $$ >"$1/cgroup.procs" &&
        exec unshare --pid --fork --kill-child --mount --uts --ipc --cgroup bash "$2/boot.sh" "$2"' \
        launcher "$cg" "$work" </dev/null >"$work/launcher.log" 2>&1 &
for _ in $(seq 200); do
        [ -s "$work/pid1" ] && break
        sleep 0.05
done
pid1=$(cat "$work/pid1" 2>/dev/null)
booted=1
for _ in $(seq 200); do
        [ -n "$pid1" ] || break
        [ -S "/proc/$pid1/root/run/systemd/private" ] && { booted=0; break; }
        kill -0 "$pid1" 2>/dev/null || break
        sleep 0.05
done
[ $booted -ne 0 ] && diag <"$work/launcher.log"
ok $booted "systemd boots as PID 1 of private namespaces"
if [ $booted -ne 0 ]; then
        echo "1..$n"
        exit 1
fi
state=$(INSIDE_TIMEOUT=60 inside systemctl is-system-running --wait 2>&1)
[ "$state" = running ]
ok $? "the system reaches its target (state: $state) in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
[ "$state" = running ] || inside systemctl --failed --no-legend 2>&1 | diag

journal() {  # the daemon's journal, for diagnostics
        inside journalctl -u sectreed.service -b --no-pager -o short-monotonic 2>&1 | diag
}

# 5. Bus activation: the first call to org.sectree1 makes dbus-daemon start sectreed.service.
[ "$(inside systemctl is-active sectreed.service)" = inactive ]
ok $? "sectreed.service is not running before the first call"
version=$(INSIDE_TIMEOUT=60 inside busctl --timeout=50 get-property org.sectree1 /org/sectree1 org.sectree1.Manager Version 2>&1)
want_version=$("$BUILD/daemon/sectreed" --version | awk '{print $2}')
[ "$version" = "s \"$want_version\"" ]
ok $? "bus activation starts the daemon; Version is $version"
[ "$version" = "s \"$want_version\"" ] || inside systemctl status --no-pager dbus.socket dbus.service 2>&1 | diag
active=$(inside systemctl show -P ActiveState,SubState sectreed.service | paste -sd/)
[ "$active" = active/running ]
ok $? "sectreed.service is active (running): $active"
if [ "$active" != active/running ]; then
        journal
        echo "1..$n"
        exit 1
fi
[ "$(inside systemctl is-active sys-kernel-tracing.mount)" = active ]
ok $? "systemd mounted tracefs for it (Wants=sys-kernel-tracing.mount)"
backend=$(inside busctl get-property org.sectree1 /org/sectree1 org.sectree1.Manager Backend 2>&1)
[ "$backend" = 's "bpf"' ]
ok $? "Backend is $backend"

inside systemd-analyze security --no-pager sectreed.service 2>&1 | grep "Overall exposure" | diag

# 6. The hardening is really in force on the running daemon.
mainpid=$(inside systemctl show -P MainPID sectreed.service)
status=$(inside cat "/proc/$mainpid/status" 2>/dev/null)
capbnd=$(awk '/^CapBnd:/ {print $2}' <<<"$status")
# CAP_DAC_READ_SEARCH 2, CAP_SYS_PTRACE 19, CAP_SYS_ADMIN 21, CAP_PERFMON 38, CAP_BPF 39
want_capbnd=$(printf '%016x' $(( (1 << 2) | (1 << 19) | (1 << 21) | (1 << 38) | (1 << 39) )))
[ "$capbnd" = "$want_capbnd" ]
ok $? "the daemon's capability bounding set is the unit's CapabilityBoundingSet= ($capbnd)"
grep -qx 'Seccomp:[[:space:]]*2' <<<"$status" && grep -qx 'NoNewPrivs:[[:space:]]*1' <<<"$status"
ok $? "the daemon runs under its SystemCallFilter= (Seccomp: 2) with NoNewPrivileges="
memlock=$(inside cat "/proc/$mainpid/limits" 2>/dev/null | awk '/^Max locked memory/ {print $4 "/" $5}')
if (( (0x$(awk '/^CapBnd:/ {print $2}' /proc/self/status) >> 24) & 1 )); then
        [ "$memlock" = unlimited/unlimited ]
        ok $? "the daemon runs with the unit's LimitMEMLOCK=infinity ($memlock)"
else
        # Without CAP_SYS_RESOURCE, PID 1 cannot raise a hard limit, and systemd applies the
        # closest one: the hard limit it inherited from us. The daemon must work anyway (BPF
        # memory is charged to the memcg); the later checks show it does.
        hard=$(awk '/^Max locked memory/ {print $5}' /proc/self/limits)
        [ "${memlock#*/}" = "$hard" ]
        ok $? "the daemon runs with the highest memlock limit this machine allows ($memlock; no CAP_SYS_RESOURCE for LimitMEMLOCK=infinity)"
fi
nofile=$(inside cat "/proc/$mainpid/limits" 2>/dev/null | awk '/^Max open files/ {print $4}')
hard=$(awk '/^Max open files/ {print $5}' /proc/self/limits)
want_nofile=65536
if (( (0x$(awk '/^CapBnd:/ {print $2}' /proc/self/status) >> 24) & 1 )) || (( hard >= want_nofile )); then
        [ "$nofile" = "$want_nofile" ]
else
        [ "$nofile" = "$hard" ] # the closest systemd may apply without CAP_SYS_RESOURCE
fi
ok $? "the daemon runs with the unit's LimitNOFILE=$want_nofile (soft limit $nofile), which watching parents needs"
mounts=$(inside cat "/proc/$mainpid/mountinfo" 2>/dev/null)
awk '$5 == "/" && $6 ~ /^ro/ {f = 1} END {exit !f}' <<<"$mounts" &&
        awk '$5 == "/var/lib/sectree" && $6 ~ /^rw/ {f = 1} END {exit !f}' <<<"$mounts"
ok $? "the daemon sees / read-only and its StateDirectory= read-write (ProtectSystem=strict)"
modes=$(inside stat -c %a /var/lib/sectree /var/lib/sectree/state.db /var/lib/sectree/state.db-wal \
        /var/lib/sectree/state.db-shm 2>&1 | paste -sd' ')
[ "$modes" = "700 600 600 600" ]
ok $? "the daemon's state directory is 0700 and state.db, -wal and -shm 0600 ($modes)"
[ "$(inside readlink "/proc/$mainpid/ns/net")" != "$(inside readlink /proc/1/ns/net)" ]
ok $? "the daemon has a network namespace of its own (PrivateNetwork=)"
awk '$5 == "/proc" && $NF ~ /hidepid=invisible/ && $NF ~ /subset=pid/ {f = 1} END {exit !f}' <<<"$mounts"
ok $? "the daemon's /proc shows only processes, and only those it may ptrace (ProtectProc=invisible, ProcSubset=pid)"

# The daemon reads its own filter: the unit's SystemCallFilter= as the kernel runs it. It names
# tasks by their pids in its own pid namespace, as systemd, /proc and the callers inside do.
daemon=$mainpid
# SYSCALL [ARGS]=VERDICT: what each line of the unit makes of a call. 1 is EPERM
# (SystemCallErrorNumber=), 97 EAFNOSUPPORT (RestrictAddressFamilies=: AF_UNIX only, AF_NETLINK is
# the ptrace backend's); mprotect(PROT_EXEC) is MemoryDenyWriteExecute=, unshare(CLONE_NEWUSER)
# RestrictNamespaces=.
wrong=
for sc in "bpf=ALLOW" "perf_event_open=ALLOW" "ptrace=ALLOW" "kcmp=ALLOW" "pidfd_getfd=ALLOW" \
        "fchown=ALLOW" "socket 1 1 0=ALLOW" "socket 16 3 11=ERRNO(97: EAFNOSUPPORT)" \
        "setrlimit=ERRNO(1: EPERM)" "sched_setaffinity=ERRNO(1: EPERM)" "setresuid=ERRNO(1: EPERM)" \
        "setgroups=ERRNO(1: EPERM)" "mount=ERRNO(1: EPERM)" "reboot=ERRNO(1: EPERM)" \
        "init_module=ERRNO(1: EPERM)" "settimeofday=ERRNO(1: EPERM)" "socket 2 1 0=ERRNO(97: EAFNOSUPPORT)" \
        "socket 10 2 0=ERRNO(97: EAFNOSUPPORT)" "mprotect 0 4096 4=ERRNO(1: EPERM)" \
        "unshare 268435456=ERRNO(1: EPERM)"; do
        # shellcheck disable=SC2086 # the arguments are words
        out=$(inside sectreectl check "$daemon" ${sc%%=*} 2>&1)
        [[ $out == "${sc#*=} "* ]] || wrong+=" ${sc%%=*}: $out;"
done
[ -n "$daemon" ] && [ -z "$wrong" ]
ok $? "the daemon's own filter chain, as sectreectl check reads it, is the unit's${wrong:+:$wrong}"

# 7. The bus API answers.
out=$(inside busctl --json=short call org.sectree1 /org/sectree1 org.sectree1.Manager ListFilters 2>&1)
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["type"]=="a(ttusuas)"' "$out" 2>/dev/null
ok $? "ListFilters answers"
out=$(inside busctl --json=short call org.sectree1 /org/sectree1 org.sectree1.Manager ListTasks 2>&1)
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["type"]=="a(uuusstu)"' "$out" 2>/dev/null
ok $? "ListTasks answers"

# The bus policy lets anyone call; the daemon itself decides what a caller may do.
out=$(inside setpriv --reuid=65534 --regid=65534 --clear-groups \
        busctl get-property org.sectree1 /org/sectree1 org.sectree1.Manager Version 2>&1)
[ "$out" = "$version" ]
ok $? "an unprivileged caller may read Version (bus policy): $out"
out=$(inside setpriv --reuid=65534 --regid=65534 --clear-groups \
        dbus-send --system --print-reply --dest=org.sectree1 /org/sectree1 org.sectree1.Manager.Rescan 2>&1)
# the daemon's own refusal, not the bus policy's ("Rejected send message")
[[ $out == *"Error org.freedesktop.DBus.Error.AccessDenied: Only root may ask for a rescan"* ]]
ok $? "an unprivileged caller's Rescan is refused by the daemon: $out"
inside busctl call org.sectree1 /org/sectree1 org.sectree1.Manager Rescan
ok $? "root's Rescan (a full pass under the unit's hardening) succeeds"

# 8. A service started now with a SystemCallFilter= of its own shows up, live.
inside systemd-run --quiet --unit=sectree-probe.service -p SystemCallFilter=~@mount sleep 120
# The bpf backend names tasks by their pids in the daemon's pid namespace (its iterators read the
# pid at that level), not by the kernel's task->pid of the initial namespace, the host's here.
probe_ns=$(inside systemctl show -P MainPID sectree-probe.service)
probe_host=$(head -n1 "$cg/system.slice/sectree-probe.service/cgroup.procs" 2>/dev/null)
[ -n "$probe_host" ] && [ "$probe_ns" != 0 ] && [ "$probe_host" != "$probe_ns" ] &&
        grep -q "^NSpid:[[:space:]]*${probe_host}[[:space:]]*${probe_ns}\$" "/proc/$probe_host/status"
ok $? "a transient service with SystemCallFilter=~@mount runs (pid $probe_ns inside, $probe_host outside)"
probe=$probe_ns
seen=1
for _ in $(seq 100); do
        out=$(inside busctl --json=short call org.sectree1 /org/sectree1 org.sectree1.Manager ListTasks 2>&1)
        if python3 -c '
import json, sys
tasks = json.loads(sys.argv[1])["data"][0]
sys.exit(0 if any(t[0] == int(sys.argv[2]) and t[4] == "filter" and t[5] != 0 for t in tasks) else 1)
' "$out" "$probe" 2>/dev/null; then
                seen=0
                break
        fi
        sleep 0.1
done
ok $seen "ListTasks shows the probe's pid $probe in filter mode with a head filter, without a Rescan"
[ $seen -eq 0 ] || head -c 2000 <<<"$out" | diag
tree=$(inside sectreectl --no-legend tree 2>&1)
status=$?
[ $status -eq 0 ] && grep -qw "$probe" <<<"$tree"
ok $? "sectreectl tree works and shows the probe"
[ $status -eq 0 ] || head -n 20 <<<"$tree" | diag

# 9. Snapshots: CreateSnapshot, then ExportSnapshot into a file that reads back.
snap=$(inside sectreectl snapshot 2>&1)
[[ $snap =~ ^[0-9]+$ ]]
ok $? "sectreectl snapshot (CreateSnapshot) stores snapshot $snap"
inside sectreectl export "$snap" /root/sectree-snapshot.db >/dev/null 2>"$work/export.err"
status=$?
diag <"$work/export.err"
[ $status -eq 0 ] && inside test -s /root/sectree-snapshot.db
ok $? "sectreectl export (ExportSnapshot) writes the snapshot into a file"
out=$(inside sectreectl validate /root/sectree-snapshot.db 2>&1)
status=$?
[ $status -eq 0 ] && [[ $out == valid* ]]
ok $? "the exported file is a valid snapshot: $out"
inside sectreectl --no-legend tree --file /root/sectree-snapshot.db 2>&1 | grep -qw "$probe"
ok $? "the exported snapshot holds the probe"

# 10. Restores. The confined daemon does not fork the executor (its tasks would inherit the
#     daemon's filters as the head of every restored chain, its no_new_privs, mounts and bounding
#     set): PID 1 starts it as the transient service sectree-restore-DAEMONPID-ID.service.
chain_of() {  # chain_of TID: "id digest" per filter of the daemon's view of TID's chain
        inside sectreectl --json=short chain "$1" 2>/dev/null | python3 -c '
import json, sys
def walk(v):
    if isinstance(v, dict):
        if "id" in v and "digest" in v:
            print(v["id"], v["digest"])
        else:
            for x in v.values():
                walk(x)
    elif isinstance(v, list):
        for x in v:
            walk(x)
walk(json.load(sys.stdin))'
}
status_field() {  # status_field PID FIELD: a line of /proc/PID/status inside
        inside cat "/proc/$1/status" 2>/dev/null | awk -v f="$2:" '$1 == f {print $2}'
}
psnap=$(inside sectreectl snapshot "$probe" 2>&1)
[[ $psnap =~ ^[0-9]+$ ]]
ok $? "sectreectl snapshot $probe (the probe, by its pid inside) stores snapshot $psnap"
rjson=$(INSIDE_TIMEOUT=90 inside sectreectl --json=short restore "$psnap" 2>"$work/restore.err")
status=$?
read -r rid verified rpid < <(python3 -c '
import json, sys
d = json.loads(sys.argv[1])
p = [x["pid"] for x in d["processes"] if x["snapshot_pid"] == int(sys.argv[2])]
print(d["restore_id"], str(d["verified"]).lower(), p[0] if p else 0)' "$rjson" "$probe" 2>/dev/null)
[ $status -eq 0 ] && [ "${verified:-}" = true ] && [ "${rpid:-0}" -gt 0 ]
ok $? "sectreectl restore $psnap: restore ${rid:-?} verified (${verified:-?}), the probe restored as pid ${rpid:-?}"
[ $status -eq 0 ] || { diag <"$work/restore.err"; journal; }
rid=${rid:-0}
rpid=${rpid:-0}
runit=sectree-restore-$mainpid-$rid.service
state=$(inside systemctl show -P ActiveState "$runit" 2>&1)
collect=$(inside systemctl show -P CollectMode "$runit" 2>&1)
[ "$state" = active ] && [ "$collect" = inactive-or-failed ] &&
        inside grep -q "/user.slice/user-0.slice/$runit\$" "/proc/$rpid/cgroup"
ok $? "the executor runs as the transient service $runit ($state, CollectMode=$collect) in the caller's user-0.slice, the restored task in its cgroup"
want=$(status_field "$probe" Seccomp_filters)
got=$(status_field "$rpid" Seccomp_filters)
[ "$(status_field "$rpid" Seccomp)" = 2 ] && [ -n "$want" ] && [ "$got" = "$want" ] &&
        [ "$(status_field "$rpid" NoNewPrivs)" = "$(status_field "$probe" NoNewPrivs)" ]
ok $? "/proc/$rpid/status: filter mode with $got filters, the probe's $want, and its no_new_privs"
chain_probe=$(chain_of "$probe")
chain_restored=$(chain_of "$rpid")
chain_daemon=$(chain_of "$mainpid")
[ -n "$chain_restored" ] && [ -n "$chain_daemon" ] &&
        [ "$(awk '{print $2}' <<<"$chain_restored")" = "$(awk '{print $2}' <<<"$chain_probe")" ] &&
        [ -z "$(comm -12 <(awk '{print $1}' <<<"$chain_restored" | sort) <(awk '{print $1}' <<<"$chain_probe" | sort))" ]
ok $? "the daemon's view: pid $rpid's chain has the probe's digests, in new filter objects: $(wc -l <<<"$chain_restored") filters"
[ -n "$chain_restored" ] && [ -n "$chain_daemon" ] &&
        [ -z "$(comm -12 <(awk '{print $1}' <<<"$chain_restored" | sort) <(awk '{print $1}' <<<"$chain_daemon" | sort))" ] &&
        [ -z "$(comm -12 <(awk '{print $2}' <<<"$chain_restored" | sort) <(awk '{print $2}' <<<"$chain_daemon" | sort))" ]
ok $? "no filter of sectreed's own SystemCallFilter= chain ($(wc -l <<<"$chain_daemon") filters) is in the restored chain, by id or by digest"
inside sectreectl release "$rid" >/dev/null 2>&1
status=$?
gone=1
for _ in $(seq 100); do
        if ! inside test -e "/proc/$rpid" && [ "$(inside systemctl show -P ActiveState "$runit")" != active ]; then
                gone=0
                break
        fi
        sleep 0.1
done
[ $status -eq 0 ] && [ $gone -eq 0 ]
ok $? "sectreectl release $rid ends the restored task and the unit"

# run --like through a unit: the command reads sectreectl's stdin, writes its stdout, and
# sectreectl exits with the command's status.
out=$(echo hello | INSIDE_TIMEOUT=90 inside sectreectl run --like "$probe" -- /bin/sh -c \
        'read x; echo "got $x"; grep Seccomp_filters: /proc/self/status; exit 3' 2>"$work/run.err")
status=$?
[ $status -eq 3 ] && [ "$out" = "$(printf 'got hello\nSeccomp_filters:\t%s' "$want")" ]
ok $? "sectreectl run --like $probe -- sh: exit status $status, output: $(tr '\n\t' '  ' <<<"$out")"
[ $status -eq 3 ] || diag <"$work/run.err"

# An unprivileged caller: the executor runs as its User= and Group=, so do the restored tasks.
inside systemd-run --quiet --unit=sectree-probe-nobody.service -p User=nobody -p SystemCallFilter=~@swap sleep 120
nprobe=$(inside systemctl show -P MainPID sectree-probe-nobody.service)
as_nobody() {
        inside setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
}
nsnap=$(as_nobody sectreectl snapshot "$nprobe" 2>&1)
njson=$(INSIDE_TIMEOUT=90 as_nobody prlimit --nproc=900:901 --nofile=200:300 sectreectl --json=short restore "$nsnap" \
        2>"$work/restore.err")
status=$?
read -r nid nverified npid < <(python3 -c '
import json, sys
d = json.loads(sys.argv[1])
print(d["restore_id"], str(d["verified"]).lower(), d["processes"][0]["pid"])' "$njson" 2>/dev/null)
nunit=sectree-restore-$mainpid-${nid:-0}.service
[ $status -eq 0 ] && [ "${nverified:-}" = true ] &&
        [ "$(inside systemctl show -P User "$nunit")" = 65534 ] &&
        [ "$(status_field "${npid:-0}" Uid)" = 65534 ] && [ "$(status_field "${npid:-0}" Gid)" = 65534 ]
ok $? "nobody's restore ${nid:-?} of snapshot $nsnap: verified, $nunit runs as User=65534, pid ${npid:-?} as uid and gid 65534"
# ... in the caller's slice (its TasksMax= and accounting apply), with the caller's limits
nlimits=$(inside grep -E "^Max (processes|open files) " "/proc/${npid:-0}/limits" 2>/dev/null |
        sed -E 's/^Max (processes|open files) +//' | awk '{print $1, $2}' | tr '\n' ' ')
[ "$(inside systemctl show -P Slice "$nunit")" = user-65534.slice ] &&
        inside grep -q "/user.slice/user-65534.slice/$nunit\$" "/proc/${npid:-0}/cgroup" &&
        { [ "$nlimits" = "900 901 300 300 " ] || [ "$nlimits" = "900 901 200 300 " ]; }
ok $? "$nunit is in user-65534.slice, pid ${npid:-?} in its cgroup with the caller's limits (processes, open files: $nlimits)"
[ $status -eq 0 ] || diag <"$work/restore.err"
as_nobody sectreectl release "${nid:-0}" >/dev/null 2>&1
ok $? "nobody releases its restore"
inside systemctl stop sectree-probe-nobody.service >/dev/null 2>&1

# Starts that systemd refuses. The name of the next restore is taken by a unit already: the call
# itself fails. A supplementary group without a group entry cannot be a service's
# SupplementaryGroups=: the start job fails.
next=$(( ${nid:-0} + 1 ))
inside systemd-run --quiet --unit="sectree-restore-$mainpid-$next.service" sleep 120
out=$(INSIDE_TIMEOUT=90 as_nobody sectreectl restore "$nsnap" 2>&1)
[[ $out == *"sectreectl: Failed to restore the snapshot: systemd could not start sectree-restore-$mainpid-$next.service: org.freedesktop.systemd1.UnitExists"* ]]
ok $? "a unit name systemd refuses fails the restore, naming the unit and systemd's error: $out"
inside systemctl stop "sectree-restore-$mainpid-$next.service" >/dev/null 2>&1
out=$(INSIDE_TIMEOUT=90 inside setpriv --reuid=65534 --regid=65534 --groups=4343 sectreectl restore "$nsnap" 2>&1)
[[ $out == *"sectreectl: Failed to restore the snapshot: systemd could not start sectree-restore-$mainpid-$((next + 1)).service: its start job ended with: failed"* ]]
ok $? "a start job that fails fails the restore, naming the unit and the job's result: $out"
left=$(inside systemctl list-units --all --no-legend 'sectree-restore-*' 2>&1)
[ -z "$left" ]
ok $? "no sectree-restore unit is left (CollectMode=inactive-or-failed)${left:+: $left}"

# 11. Stop: a clean exit, well before TimeoutStopSec=.
t=$(date +%s%N)
inside systemctl stop sectreed.service
status=$?
ms=$(( ($(date +%s%N) - t) / 1000000 ))
[ $status -eq 0 ] && [ $ms -lt 10000 ]
ok $? "systemctl stop sectreed returns 0 in $ms ms"
# An inactive unit is unloaded at once, and its Result= and ExecMain*= with it: ask the journal.
# systemd logs "Unit succeeded" only when the main process exited 0 (or by SIGTERM, which the
# daemon catches), and "Unit process exited" / "Unit failed" otherwise.
journal_ids() {
        inside journalctl -b -q --no-pager -o cat _PID=1 UNIT=sectreed.service "$@" 2>/dev/null | wc -l
}
succeeded=$(journal_ids MESSAGE_ID=7ad2d189f7e94e70a38c781354912448)
bad=$(journal_ids MESSAGE_ID=98e322203f7a4ed290d09fe03c09fe15 MESSAGE_ID=d9b373ed55a64feb8242e02dbe79a49c)
[ "$(inside systemctl is-active sectreed.service)" = inactive ] && [ "$succeeded" -ge 1 ] && [ "$bad" -eq 0 ]
ok $? "the daemon exited cleanly: inactive, $succeeded \"Unit succeeded\", $bad \"Unit process exited\"/\"Unit failed\""

# Bus activation again: the state directory kept the stored snapshot across the restart. This
# run has a short watchdog (a drop-in; the shipped 30 s would make the test wait a minute): the
# daemon must keep feeding it, or systemd kills and restarts it (Restart=on-failure).
inside mkdir -p /run/systemd/system/sectreed.service.d &&
        printf '[Service]\nWatchdogSec=4s\n' | inside tee /run/systemd/system/sectreed.service.d/watchdog.conf >/dev/null &&
        inside systemctl daemon-reload
out=$(INSIDE_TIMEOUT=60 inside sectreectl --no-legend snapshots 2>&1)
awk -v id="$snap" '$1 == id {f = 1} END {exit !f}' <<<"$out"
ok $? "reactivated over the bus, the daemon still lists snapshot $snap"
prop() {  # systemctl show -P prints several properties in its own order: one at a time
        inside systemctl show -P "$1" sectreed.service
}
pid_before=$(prop MainPID)
wd_usec=$(prop WatchdogUSec)
ts_before=$(prop WatchdogTimestampMonotonic)
sleep 9
pid_after=$(prop MainPID)
restarts=$(prop NRestarts)
state_after=$(prop ActiveState)
ts_after=$(prop WatchdogTimestampMonotonic)
[ "$wd_usec" = 4s ] && [ "$pid_after" = "$pid_before" ] && [ "$restarts" = 0 ] &&
        [ "$state_after" = active ] && [ "${ts_after:-0}" -gt "${ts_before:-0}" ]
ok $? "the daemon feeds a 4 s watchdog for 9 s (pid $pid_before -> $pid_after, restarts $restarts, last ping at $ts_before -> $ts_after us)"
inside systemctl stop sectreed.service
ok $? "systemctl stop sectreed, the second time"
succeeded=$(journal_ids MESSAGE_ID=7ad2d189f7e94e70a38c781354912448)
bad=$(journal_ids MESSAGE_ID=98e322203f7a4ed290d09fe03c09fe15 MESSAGE_ID=d9b373ed55a64feb8242e02dbe79a49c)
[ "$succeeded" -eq 2 ] && [ "$bad" -eq 0 ]
ok $? "both runs ended in \"Unit succeeded\" ($succeeded), none in a failure ($bad)"

# 12. Nothing went wrong on the way, as far as the journal knows.
errors=$(inside journalctl -u sectreed.service -b -p err --no-pager -q 2>&1)
[ -z "$errors" ]
ok $? "the daemon's journal has no error messages"

# 13. The drop-in for the ptrace backend, as the README says to install it: the daemon runs under
#     no seccomp filter (PTRACE_SECCOMP_GET_FILTER would refuse) and works. (The proc connector
#     does not answer in this pid namespace: the daemon says so and reads changes at its periodic
#     passes, so this part comes after the check for error messages.)
dropin=$(find "$work/dest" -name sectreed-ptrace.conf | head -n1)
inside cp "${dropin#"$work/dest"}" /run/systemd/system/sectreed.service.d/ &&
        inside systemctl daemon-reload
ok $? "the drop-in sectreed-ptrace.conf is installed from ${dropin#"$work/dest"}"
backend=$(INSIDE_TIMEOUT=60 inside busctl --timeout=50 get-property org.sectree1 /org/sectree1 org.sectree1.Manager Backend 2>&1)
[ "$backend" = 's "ptrace"' ]
ok $? "with it, bus activation starts the ptrace backend: Backend is $backend"
mainpid=$(inside systemctl show -P MainPID sectreed.service)
inside grep -qx 'Seccomp:[[:space:]]*0' "/proc/$mainpid/status"
ok $? "the daemon runs under no seccomp filter"
seen=1
if inside busctl call org.sectree1 /org/sectree1 org.sectree1.Manager Rescan; then
        out=$(inside busctl --json=short call org.sectree1 /org/sectree1 org.sectree1.Manager ListTasks 2>&1)
        python3 -c '
import json, sys
tasks = json.loads(sys.argv[1])["data"][0]
sys.exit(0 if any(t[0] == int(sys.argv[2]) and t[4] == "filter" and t[5] != 0 for t in tasks) else 1)
' "$out" "$probe_ns" 2>/dev/null && seen=0
fi
# ptrace reads /proc, where pids are those of the namespace the daemon runs in
ok $seen "the ptrace backend reads the probe's filter (Rescan, ListTasks: pid $probe_ns inside)"
inside systemctl stop sectreed.service
ok $? "systemctl stop sectreed, the ptrace run"

echo "# journalctl -u sectreed.service:"
journal

inside systemctl stop sectree-probe.service >/dev/null 2>&1
echo "1..$n"
[ $failed -eq 0 ]
