#!/bin/bash
# scripts/fuzz.sh: build the snapshot readers' libFuzzer targets with clang, ASan and UBSan into
# build-fuzz/ and run each for FUZZ_SECONDS (default 60) from the committed seed corpus. Every
# snapshot a reader accepts is also planned for a restore (plan_build(), as root and unprivileged):
# planned or refused with a reason, never a crash. Exits 1
# if a target crashed, leaked, hit undefined behaviour or broke a property (its input is kept in
# build-fuzz/artifacts-NAME/); the last line is "fuzz targets: N passed, N failed".
#
#   scripts/fuzz.sh                       run every target
#   scripts/fuzz.sh json|sqlite           run one
#   scripts/fuzz.sh json|sqlite FILE...   run one target on the given inputs only (reproduce)
#
# Environment: FUZZ_SECONDS, FUZZ_BUILD (default build-fuzz), FUZZ_JOBS (parallel workers per
# target, default 1), FUZZ_QUIET=1 (one line per target; the logs' tails only for a failure, as
# .ci/run wants it).
#
# Run as root on a machine without them, it installs clang and its libFuzzer and sanitizer
# runtimes (libclang-rt-N-dev, only recommended by clang and so left out by scripts/lib.sh).
set -uo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${FUZZ_BUILD:-$SRC/build-fuzz}
SECONDS_PER_TARGET=${FUZZ_SECONDS:-60}
JOBS=${FUZZ_JOBS:-1}
QUIET=${FUZZ_QUIET:-0}
TARGETS=(json sqlite)

die() {
        echo "error: $*" >&2
        exit 1
}

installed() {
        dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

apt_install() {
        [ "$(id -u)" = 0 ] || die "$* missing: install them (apt-get install $*) or run this as root"
        echo "Installing: $*" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq || die "apt-get update failed"
        apt-get install -y -qq --no-install-recommends "$@" >/dev/null || die "apt-get install $* failed"
}

# clang, and the runtimes -fsanitize=fuzzer,address,undefined links (of clang's own version).
install_clang() {
        command -v dpkg-query >/dev/null || { command -v clang >/dev/null || die "clang is not installed"; return 0; }
        installed clang || apt_install clang
        local major
        major=$(clang -dumpversion | cut -d. -f1)
        installed "libclang-rt-$major-dev" || apt_install "libclang-rt-$major-dev"
}

setup() {
        install_clang
        command -v clang >/dev/null || die "clang is not installed (apt-get install clang)"
        if [ ! -f "$BUILD/build.ninja" ]; then
                CC=clang meson setup "$BUILD" "$SRC" -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false \
                        >"$BUILD.setup.log" 2>&1 || { cat "$BUILD.setup.log"; die "meson setup failed"; }
                rm -f "$BUILD.setup.log"
        fi
        ninja -C "$BUILD" tests/fuzz/fuzz-snapshot-json tests/fuzz/fuzz-snapshot-sqlite >/dev/null ||
                { ninja -C "$BUILD" tests/fuzz/fuzz-snapshot-json tests/fuzz/fuzz-snapshot-sqlite; die "build failed"; }
}

# UBSan findings must stop the run like ASan's do.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}

target_args() {
        local name=$1
        local args=(-timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1)
        args+=(-dict="$SRC/tests/fuzz/snapshot-$name.dict")
        echo "${args[@]}"
}

# The corpus grows in build-fuzz/corpus-NAME/ (seeded from the committed one); with FUZZ_JOBS > 1
# libFuzzer writes one fuzz-N.log per worker into the current directory: build-fuzz/logs-NAME/.
run_target() {
        local name=$1 bin="$BUILD/tests/fuzz/fuzz-snapshot-$1"
        local corpus="$BUILD/corpus-$name" artifacts="$BUILD/artifacts-$name/" logs="$BUILD/logs-$name"
        mkdir -p "$corpus" "$artifacts" "$logs"
        rm -f "$logs"/fuzz-*.log
        cp -n "$SRC/tests/fuzz/corpus-$name/"* "$corpus/"
        [ "$QUIET" = 1 ] ||
                echo "== fuzz-snapshot-$name: ${SECONDS_PER_TARGET}s x $JOBS, $(ls "$corpus" | wc -l) inputs in the corpus =="
        local args=()
        [ "$JOBS" -gt 1 ] && args=(-jobs="$JOBS" -workers="$JOBS")
        # shellcheck disable=SC2046
        (cd "$logs" && "$bin" $(target_args "$name") -max_total_time="$SECONDS_PER_TARGET" "${args[@]}" \
                -artifact_prefix="$artifacts" "$corpus") >"$logs/main.log" 2>&1
        local status=$?
        if [ "$QUIET" != 1 ] || [ $status -ne 0 ]; then
                for log in "$logs"/fuzz-*.log "$logs/main.log"; do
                        [ -f "$log" ] || continue
                        echo "-- ${log#"$BUILD"/}"
                        tail -n 12 "$log"
                done
        fi
        summary "$name" $status "$logs/main.log" "$corpus"
        return $status
}

# One line per target: "fuzz-snapshot-json: ok, 123456 runs in 60 s, 812 inputs in the corpus".
summary() {
        local name=$1 status=$2 log=$3 corpus=$4 runs
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
        if [ "$status" -eq 0 ]; then
                echo "fuzz-snapshot-$name: ok, ${runs:-?} runs in ${SECONDS_PER_TARGET} s, $(ls "$corpus" | wc -l) inputs in the corpus"
        else
                echo "fuzz-snapshot-$name: FAILED (exit $status) after ${runs:-?} runs"
        fi
}

setup
if [ $# -ge 2 ]; then
        name=$1
        shift
        # shellcheck disable=SC2046
        exec "$BUILD/tests/fuzz/fuzz-snapshot-$name" $(target_args "$name") "$@"
fi
[ $# -eq 1 ] && TARGETS=("$1")

passed=0 failed=0
for t in "${TARGETS[@]}"; do
        [ -x "$BUILD/tests/fuzz/fuzz-snapshot-$t" ] || die "no such target: $t (json or sqlite)"
        if run_target "$t"; then
                passed=$((passed + 1))
        else
                failed=$((failed + 1))
                echo "fuzz-snapshot-$t FAILED: inputs in $BUILD/artifacts-$t/; reproduce with scripts/fuzz.sh $t FILE"
        fi
done
echo "fuzz targets: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
