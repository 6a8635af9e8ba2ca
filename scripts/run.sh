#!/bin/bash
# scripts/run.sh: the main job on a fresh machine: install what is missing, build, and show this
# machine's seccomp filter forest. Extra arguments go to `sectreed scan` (e.g. --format=json).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
install_packages
build
mount_tracefs
exec "$SECTREE_BUILD/daemon/sectreed" scan "$@"
