# scripts/lib.sh: what the set-up scripts share: installing Debian packages, building, tracefs.
# Sourced, not run.

SECTREE_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SECTREE_BUILD=${SECTREE_BUILD:-$SECTREE_SRC/build}

# Everything the build, the daemon and the tests need, as Debian 12 package names.
SECTREE_PACKAGES=(
        meson ninja-build pkg-config gcc clang llvm bpftool
        libbpf-dev libsystemd-dev libsqlite3-dev sqlite3 libseccomp-dev libgcrypt20-dev libjansson-dev
        libglib2.0-dev libdbus-1-dev libsmartcols-dev dbus util-linux procps
        systemd golang-github-containers-common firejail bubblewrap crun
        openssh-server tor chrony vsftpd
        graphviz bash-completion zsh scdoc man-db
)

die() {
        echo "error: $*" >&2
        exit 1
}

require_root() {
        [ "$(id -u)" = 0 ] || die "run this as root (it installs packages, loads BPF programs and uses ptrace)"
}

# The packages of SECTREE_PACKAGES that are not installed. dpkg counts a package whose triggers
# are still to run (triggers-pending, triggers-awaiting: another apt is finishing its work) as
# installed, and so do we; anything else (not installed, half-configured, unpacked) is missing.
# It must work under the callers' `set -euo pipefail`: dpkg-query exits 1 as soon as one name is
# unknown to dpkg (never installed: exactly the case that matters), so its status is not an error
# here; what it printed is the answer.
missing_packages() {
        local status installed
        command -v dpkg-query >/dev/null || { echo "error: dpkg-query not found (sectree's set-up scripts are for Debian)" >&2; return 1; }
        status=$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${SECTREE_PACKAGES[@]}" 2>/dev/null) || true
        installed=$(awk '$2 == "installed" || $2 == "triggers-pending" || $2 == "triggers-awaiting" { print $1 }' \
                <<<"$status")
        local p
        for p in "${SECTREE_PACKAGES[@]}"; do
                grep -qxF "$p" <<<"$installed" || echo "$p"
        done
}

# How long apt waits for another apt or dpkg to finish (SECTREE_APT_LOCK_TIMEOUT seconds).
APT_LOCK_TIMEOUT=${SECTREE_APT_LOCK_TIMEOUT:-600}

# apt-get with the dpkg lock waited for. `apt-get update` takes the lists lock, which that option
# does not cover: it is retried while another apt holds it.
apt_get() {
        local deadline=$((SECONDS + APT_LOCK_TIMEOUT)) err
        err=$(mktemp)
        while :; do
                if apt-get -o DPkg::Lock::Timeout="$APT_LOCK_TIMEOUT" "$@" 2>"$err"; then
                        rm -f "$err"
                        return 0
                fi
                if grep -q "Could not get lock" "$err" && [ $SECONDS -lt $deadline ]; then
                        echo "Waiting for another apt to finish..." >&2
                        sleep 5
                        continue
                fi
                cat "$err" >&2
                rm -f "$err"
                return 1
        done
}

install_packages() {
        local list missing
        # not `mapfile < <(...)`: a failure inside a process substitution is lost, and an empty
        # list would then mean "nothing to install"
        list=$(missing_packages) || die "could not tell which packages are installed (dpkg-query)"
        mapfile -t missing <<<"$list"
        [ -n "$list" ] || missing=()
        [ ${#missing[@]} -eq 0 ] && return 0
        echo "Installing: ${missing[*]}" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt_get update -qq || die "apt-get update failed"
        apt_get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || die "apt-get install failed"
}

build() {
        if [ ! -f "$SECTREE_BUILD/build.ninja" ]; then
                meson setup "$SECTREE_BUILD" "$SECTREE_SRC" >/dev/null || die "meson setup failed"
        fi
        ninja -C "$SECTREE_BUILD" >/dev/null || { ninja -C "$SECTREE_BUILD"; die "build failed"; }
}

mount_tracefs() {
        if ! mountpoint -q /sys/kernel/tracing; then
                mount -t tracefs tracefs /sys/kernel/tracing || echo "warning: could not mount tracefs" >&2
        fi
}
