# scripts/lib.sh: what the set-up scripts share: installing Debian packages, building, tracefs.
# Sourced, not run.

SECTREE_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SECTREE_BUILD=${SECTREE_BUILD:-$SECTREE_SRC/build}

# Everything the build, the daemon and the tests need, as Debian 12 package names.
SECTREE_PACKAGES=(
        meson ninja-build pkg-config gcc clang llvm bpftool
        libbpf-dev libsystemd-dev libsqlite3-dev sqlite3 libseccomp-dev libssl-dev libjansson-dev
        libglib2.0-dev libdbus-1-dev dbus util-linux procps
        systemd golang-github-containers-common firejail bubblewrap
)

die() {
        echo "error: $*" >&2
        exit 1
}

require_root() {
        [ "$(id -u)" = 0 ] || die "run this as root (it installs packages, loads BPF programs and uses ptrace)"
}

install_packages() {
        local missing=()
        for p in "${SECTREE_PACKAGES[@]}"; do
                dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
        done
        [ ${#missing[@]} -eq 0 ] && return 0
        echo "Installing: ${missing[*]}" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq || die "apt-get update failed"
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || die "apt-get install failed"
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
