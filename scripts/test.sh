#!/bin/bash
# scripts/test.sh: install what is missing, build, run the whole test suite, and end with the line
# "N passed, N failed". Extra arguments go to `meson test` (e.g. a test name, or --suite unit).
set -uo pipefail
. "$(dirname "$0")/lib.sh"

log="$SECTREE_BUILD/meson-logs/testlog.json"

# The closing line even when nothing could run: what failed counts as one failure.
not_run() {
        echo "error: $1: no test ran" >&2
        echo "0 passed, 1 failed"
        exit 1
}

require_root
( install_packages ) || not_run "installing the packages failed"
( build ) || not_run "the build failed"
mount_tracefs

# A log left by an earlier run must not be counted if meson writes none this time.
rm -f "$log"
meson test -C "$SECTREE_BUILD" --print-errorlogs "$@"
status=$?
[ -s "$log" ] || not_run "meson test exited with status $status and wrote no log"

# meson's summary is not a test runner's closing line: count the TAP results of every test
# program ourselves from the log meson wrote.
python3 - "$log" "$status" <<'PY'
import json, re, sys
passed = failed = skipped = 0
for line in open(sys.argv[1]):
    t = json.loads(line)
    out = t.get("stdout") or ""
    oks = re.findall(r"^(not ok|ok)\b[^\n]*", out, re.M)
    if not oks:
        # a program that printed no TAP at all counts as one result by its exit
        if t["result"] in ("OK",):
            passed += 1
        elif t["result"] == "SKIP":
            skipped += 1
        else:
            failed += 1
        continue
    for m in re.finditer(r"^(not ok|ok)\b([^\n]*)", out, re.M):
        verdict, rest = m.group(1), m.group(2)
        if "# SKIP" in rest.upper():
            skipped += 1
        elif verdict == "ok" or "# TODO" in rest.upper():
            passed += 1
        else:
            failed += 1
    if t["result"] not in ("OK", "SKIP", "EXPECTEDFAIL") and not re.search(r"^not ok", out, re.M):
        failed += 1  # crashed or timed out after its last TAP line
if int(sys.argv[2]) != 0 and failed == 0:
    failed = 1  # meson failed although every result it logged passed: say so
if skipped:
    print(f"({skipped} skipped)")
print(f"{passed} passed, {failed} failed")
PY
[ $? -eq 0 ] || { echo "0 passed, 1 failed"; exit 1; }
exit $status
