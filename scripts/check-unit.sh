#!/bin/bash
# scripts/check-unit.sh: check units/sectreed.service with `systemd-analyze verify` and print its
# `systemd-analyze security` exposure, then the same with the drop-in for the ptrace backend
# (units/sectreed-ptrace.conf). The unit is checked as built, with ExecStart pointed at the build
# tree's sectreed (verify insists the binary exists). Exits non-zero if verify complains.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

unit="$SECTREE_BUILD/units/sectreed.service"
[ -f "$unit" ] || die "$unit is not built"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
sed "s|^ExecStart=.*|ExecStart=$SECTREE_BUILD/daemon/sectreed|" "$unit" > "$dir/sectreed.service"

# Documentation= names the man pages: verify runs man for each, so let it find the built ones.
man=(--man=no)
if [ -d "$SECTREE_BUILD/man" ]; then
        for page in "$SECTREE_BUILD"/man/*.[0-9]; do
                mkdir -p "$dir/man/man${page##*.}" && ln -s "$page" "$dir/man/man${page##*.}/"
        done
        man=()
fi

# verify UNIT-DIR: systemd-analyze verify of the unit there (and of its drop-ins, if any)
verify() {
        local out status
        out=$(cd "$1" && MANPATH="$dir/man" SYSTEMD_UNIT_PATH="$1:" systemd-analyze verify "${man[@]}" sectreed.service 2>&1)
        status=$?
        # Without systemd as PID 1 there is no dbus.socket unit to resolve; that is the machine, not the unit.
        out=$(grep -v "dbus.socket" <<<"$out")
        if [ $status -ne 0 ] || [ -n "$out" ]; then
                echo "systemd-analyze verify found problems in sectreed.service${2:+ with $2}:" >&2
                echo "$out" >&2
                exit 1
        fi
        echo "systemd-analyze verify: sectreed.service${2:+ with $2} is clean"
}

verify "$dir"
systemd-analyze security --offline=true --no-pager "$dir/sectreed.service" | grep -E "Overall exposure|✗"

mkdir -p "$dir/ptrace/sectreed.service.d"
cp "$dir/sectreed.service" "$dir/ptrace/"
sed "s|^ExecStart=/.*|ExecStart=$SECTREE_BUILD/daemon/sectreed --backend=ptrace|" \
        "$SECTREE_BUILD/units/sectreed-ptrace.conf" > "$dir/ptrace/sectreed.service.d/sectreed-ptrace.conf"
verify "$dir/ptrace" "the drop-in sectreed-ptrace.conf"
echo -n "With sectreed-ptrace.conf (--backend=ptrace): "
systemd-analyze security --offline=true --no-pager "$dir/ptrace/sectreed.service" | grep -E "Overall exposure"
