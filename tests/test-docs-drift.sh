#!/bin/bash
# tests/test-docs-drift.sh: the man pages and the help say what the code does: org.sectree1(5) has an
# entry for every method and signal of dbus/org.sectree1.Manager.xml with its exact arguments, each
# entry a paragraph of its own; sectreed(8) names every environment variable the daemon reads;
# `sectreectl run --help` says the command's stdio is the caller's, as it is. TAP.
set -uo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
echo "1..4"

# The entry lines the interface file calls for: *Name*(in args) -> out args, or *Name*(args).
expected_entries() {
        python3 - "$SRC/dbus/org.sectree1.Manager.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
iface = ET.parse(sys.argv[1]).getroot().find("interface")
def args(el, direction):
    return ", ".join(f'{a.get("type")} {a.get("name")}' for a in el.findall("arg")
                     if a.get("direction", "out" if el.tag == "signal" else "in") == direction)
for el in iface:
    if el.tag == "method":
        outs = args(el, "out")
        print(f'*{el.get("name")}*({args(el, "in")})' + (f" -> {outs}" if outs else ""))
    elif el.tag == "signal":
        print(f'*{el.get("name")}*({args(el, "out")})')
PY
}

man5=$SRC/man/org.sectree1.5.scd
missing=$(expected_entries | while IFS= read -r line; do grep -qxF -- "$line" "$man5" || echo "$line"; done)
if [ -z "$missing" ]; then ok "org.sectree1(5) has every method and signal with its arguments"
else not_ok "org.sectree1(5) has every method and signal with its arguments"; printf '# missing: %s\n' "$missing"; fi

# every entry line ("*Name*(...") follows a blank line, or the page runs two entries together
joined=$(awk '/^\*[A-Za-z]+\*\(/ && prev != "" { print FNR ": " $0 } { prev = $0 }' "$man5")
if [ -z "$joined" ]; then ok "each entry of org.sectree1(5) is a paragraph of its own"
else not_ok "each entry of org.sectree1(5) is a paragraph of its own"; printf '# after a non-blank line: %s\n' "$joined"; fi

# the variables: getenv("X"), secure_getenv("X") and the BPF ring sizes' names in daemon/ and lib/
vars=$(grep -rhoE '(secure_)?getenv\("[A-Z_]+"\)|_from_env\([^,]+, "[A-Z_]+"' "$SRC/daemon" "$SRC/lib" |
        grep -oE '"[A-Z_]+"' | tr -d '"' | sort -u)
undocumented=$(for v in $vars; do grep -qF "*$v*" "$SRC/man/sectreed.8.scd" || echo "$v"; done)
if [ -n "$vars" ] && [ -z "$undocumented" ]; then ok "sectreed(8) names every environment variable the daemon reads"
else not_ok "sectreed(8) names every environment variable the daemon reads"; printf '# not in sectreed(8): %s\n' $undocumented; fi
# run hands the command sectreectl's own stdin, stdout and stderr (the stdio option of Restore;
# test-restore-daemon reads the command's output from sectreectl's)
help=$("$SECTREE_BUILD/client/sectreectl" run --help 2>&1)
if [[ $help == *"stdout and stderr are sectreectl's own"* ]]; then ok "run --help says the command's stdio is the caller's"
else not_ok "run --help says the command's stdio is the caller's"; printf '# %s\n' "$help"; fi
[ $failed -eq 0 ]
