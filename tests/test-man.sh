#!/bin/bash
# tests/test-man.sh: `meson install` puts the manual pages and the shell completions where they
# belong, `man -l` renders every page without a warning, the unit's Documentation= names them,
# and the pages do not fall behind the programs: sectreectl(1) names every verb and option,
# sectreed(8) every option, org.sectree1(5) every member of the interface XML. TAP.
set -uo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${SECTREE_BUILD:?}
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; [ -n "${2:-}" ] && echo "$2" | sed 's/^/# /'; }

dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
prefix=$(meson introspect "$BUILD" --buildoptions | python3 -c 'import json,sys; print([o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"][0])')
pages=(sectreectl.1 sectreed.8 org.sectree1.5 sectree-snapshot.5)
echo "1..$((${#pages[@]} * 2 + 7))"

if out=$(meson install -C "$BUILD" --destdir "$dest" --no-rebuild --quiet 2>&1); then
        ok "meson install --destdir"
else
        not_ok "meson install --destdir" "$out"
fi
for p in "${pages[@]}"; do
        file=$dest$prefix/share/man/man${p##*.}/$p
        if [ -s "$file" ]; then ok "$p installed"; else not_ok "$p installed at $file"; fi
        err=$(MANWIDTH=80 man --warnings -l "$file" 2>&1 >"$dest/$p.txt")
        if [ $? -eq 0 ] && [ -z "$err" ] && grep -q '^NAME' "$dest/$p.txt" && grep -q '^SEE ALSO' "$dest/$p.txt"; then
                ok "man -l $p renders, without warnings"
        else
                not_ok "man -l $p renders, without warnings" "$err"
        fi
done

completions=("$dest$prefix"/share/bash-completion/completions/sectreectl "$dest$prefix"/share/zsh/vendor-completions/_sectreectl)
missing=
for c in "${completions[@]}"; do [ -s "$c" ] || missing+="$c "; done
if [ -z "$missing" ]; then ok "the bash and zsh completions installed"; else not_ok "completions installed" "$missing"; fi

unit=$(find "$dest" -name sectreed.service | head -n 1)
if grep -q '^Documentation=man:sectreed(8) man:sectreectl(1) man:org.sectree1(5) ' "$unit"; then
        ok "the unit's Documentation= names the man pages"
else
        not_ok "the unit's Documentation= names the man pages" "$(grep Documentation "$unit")"
fi

# Every verb and every option of sectreectl in its page.
ctl=$BUILD/client/sectreectl
page=$dest/sectreectl.1.txt
missing=
for v in $("$ctl" __complete verbs | cut -f1); do
        grep -qE "^       $v( |$)" "$page" || missing+="verb $v; "
        for o in $("$ctl" __complete options "$v" | cut -f1); do
                o=${o%=}
                grep -qF -- "$o" "$page" || missing+="option $o ($v); "
        done
done
if [ -z "$missing" ]; then ok "sectreectl(1) names every verb and option"; else not_ok "sectreectl(1) names every verb and option" "$missing"; fi

# Every long option of sectreed in its page.
missing=
for o in $("$BUILD/daemon/sectreed" --help | grep -oE -- '--[a-z-]+' | sort -u); do
        grep -qF -- "$o" "$dest/sectreed.8.txt" || missing+="$o "
done
if [ -z "$missing" ]; then ok "sectreed(8) names every option"; else not_ok "sectreed(8) names every option" "$missing"; fi

# Every method, signal and property of the interface in org.sectree1(5).
missing=
for m in $(grep -oE '<(method|signal|property) name="[A-Za-z]+"' "$SRC/dbus/org.sectree1.Manager.xml" | cut -d'"' -f2); do
        grep -qE "^       $m( |\\(|,)" "$dest/org.sectree1.5.txt" || grep -qE "^       .*\\b$m\\b.* \\((s|u|t)" "$dest/org.sectree1.5.txt" || missing+="$m "
done
if [ -z "$missing" ]; then ok "org.sectree1(5) names every member of the interface"; else not_ok "org.sectree1(5) names every member" "$missing"; fi

# The snapshot format's page names every top-level field of the JSON format.
missing=
for f in format version created_at snapshot host source root filters processes listeners; do
        grep -qw -- "$f" "$dest/sectree-snapshot.5.txt" || missing+="$f "
done
if [ -z "$missing" ]; then ok "sectree-snapshot(5) names every top-level field"; else not_ok "sectree-snapshot(5) fields" "$missing"; fi
[ $failed -eq 0 ]
