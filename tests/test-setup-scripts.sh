#!/bin/bash
# tests/test-setup-scripts.sh: the package check of scripts/lib.sh under the shell options of the
# scripts that source it (run.sh: set -euo pipefail; test.sh and .ci/run: set -uo pipefail), with
# packages that dpkg has never heard of, with installed ones, and with both. A package check that
# dies inside `set -e` before it prints once made run.sh install nothing on a bare machine. TAP.
set -uo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
check() { if eval "$2"; then ok "$1"; else not_ok "$1"; fi; }

# A name no Debian archive has, and two packages every sectree machine has (dpkg itself, bash).
absent=sectree-test-no-such-package
present="dpkg bash"

# The missing packages as the function prints them, run under shell options $1.
missing_under() {
        # shellcheck disable=SC2086 # $1 is a list of options
        bash $1 -c '. "$0/scripts/lib.sh"; SECTREE_PACKAGES=('"$2"'); missing_packages; echo "status=$?"' "$SRC" 2>&1
}

echo "1..8"
for opts in "-euo pipefail" "-uo pipefail"; do
        out=$(missing_under "$opts" "$absent $present")
        check "set $opts: an unknown package is reported, the installed ones are not" \
                '[ "$out" = "$(printf "%s\nstatus=0" "$absent")" ]'
        out=$(missing_under "$opts" "$present")
        check "set $opts: nothing is missing when everything is installed" '[ "$out" = "status=0" ]'
done

# install_packages under run.sh's options: with a package apt cannot install it must stop with an
# error, never go on as if nothing were missing. apt-get really runs (update included).
out=$(bash -euo pipefail -c '. "$0/scripts/lib.sh"; SECTREE_PACKAGES=('"$absent $present"'); install_packages; echo "went on"' \
        "$SRC" 2>&1)
status=$?
check "set -euo pipefail: install_packages tries to install the unknown package" '[[ $out == *"Installing: $absent"* ]]'
check "and fails with an error instead of going on" '[ $status -ne 0 ] && [[ $out != *"went on"* ]] && [[ $out == *"error: apt-get install failed"* ]]'

out=$(bash -euo pipefail -c '. "$0/scripts/lib.sh"; SECTREE_PACKAGES=('"$present"'); install_packages; echo "went on"' "$SRC" 2>&1)
check "set -euo pipefail: with nothing missing it installs nothing and goes on" '[ "$out" = "went on" ]'

# dpkg-query missing from PATH (every other command there): a clear error, not an empty list.
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
for f in /usr/local/bin/* /usr/bin/* /bin/*; do
        [ "${f##*/}" = dpkg-query ] || ln -sf "$f" "$bin/" 2>/dev/null
done
out=$(PATH=$bin bash -euo pipefail -c '. "$0/scripts/lib.sh"; SECTREE_PACKAGES=(bash); install_packages; echo "went on"' \
        "$SRC" 2>&1)
check "without dpkg-query it says so and stops" \
        '[[ $out != *"went on"* ]] && [[ $out == *"error: dpkg-query not found"* ]] && [[ $out == *"error: could not tell which packages"* ]]'
[ $failed -eq 0 ]
