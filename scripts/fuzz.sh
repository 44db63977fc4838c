#!/usr/bin/env bash
# Coverage-guided fuzzing of gaia's parsers with libFuzzer (docs/fuzzing.md).
#   bash scripts/fuzz.sh                      every target, 1,000,000 runs each
#   bash scripts/fuzz.sh --runs N TARGET...   the named targets (app_yaml, semver, ...)
#   bash scripts/fuzz.sh --seconds T          each target for T seconds instead
#   bash scripts/fuzz.sh --merge              afterwards, replace fuzz/corpus/ by the
#                                             smallest set covering it and the new finds
# Installs clang 19 and libFuzzer when missing (scripts/setup.sh --fuzz), builds the
# targets with AddressSanitizer and UndefinedBehaviorSanitizer into build-fuzz/ (or
# $GAIA_FUZZ_BUILD_DIR), and runs each from its checked-in corpus. New corpus inputs go
# to build-fuzz/corpus/TARGET; a crash, a leak, a sanitizer report, a broken invariant or
# an input slower than 10 s stops the run and leaves the input in build-fuzz/artifacts/.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${GAIA_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
JOBS="${GAIA_JOBS:-$(nproc 2>/dev/null || echo 2)}"
ALL=(app_yaml cluster_file overrides quantity duration semver selector)

RUNS=1000000
SECONDS_EACH=""
MERGE=0
TARGETS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS="$2"; shift 2 ;;
    --seconds) SECONDS_EACH="$2"; shift 2 ;;
    --merge) MERGE=1; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    -*) echo "fuzz: unknown option $1" >&2; exit 2 ;;
    *)
      if [[ ! " ${ALL[*]} " == *" $1 "* ]]; then
        echo "fuzz: unknown target $1 (targets: ${ALL[*]})" >&2
        exit 2
      fi
      TARGETS+=("$1"); shift ;;
  esac
done
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=("${ALL[@]}")

bash "$ROOT/scripts/setup.sh" --fuzz
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_CXX_COMPILER=clang++-19 -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGAIA_FUZZ=ON -DGAIA_BUILD_TESTS=OFF -DGAIA_BUILD_BENCH=OFF >/dev/null
BUILD_TARGETS=()
for t in "${TARGETS[@]}"; do BUILD_TARGETS+=(--target "fuzz_$t"); done
cmake --build "$BUILD" -j"$JOBS" "${BUILD_TARGETS[@]}"

mkdir -p "$BUILD/artifacts"
for t in "${TARGETS[@]}"; do
  work="$BUILD/corpus/$t"
  mkdir -p "$work"
  limit=(-runs="$RUNS")
  [ -n "$SECONDS_EACH" ] && limit=(-max_total_time="$SECONDS_EACH")
  echo "fuzz: $t (${limit[*]})"
  # The first corpus folder receives what libFuzzer finds; the checked-in one only seeds.
  "$BUILD/fuzz/fuzz_$t" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
    -dict="$ROOT/fuzz/dict/$t.dict" -artifact_prefix="$BUILD/artifacts/$t-" -print_final_stats=1 \
    "$work" "$ROOT/fuzz/corpus/$t" 2>"$BUILD/$t.log" || {
    tail -n 60 "$BUILD/$t.log" >&2
    echo "fuzz: $t failed; the input is in $BUILD/artifacts/ (reproduce: $BUILD/fuzz/fuzz_$t FILE)" >&2
    exit 1
  }
  grep -E "^(#[0-9]+ +DONE|Done|stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb)" \
    "$BUILD/$t.log" || true
  if [ "$MERGE" = 1 ]; then
    # The smallest set of inputs covering every feature of the old corpus and the new
    # finds; regress-* inputs (a bug's reproducer, named) are kept whatever they cover.
    merged="$BUILD/merged/$t"
    rm -rf "$merged" && mkdir -p "$merged"
    "$BUILD/fuzz/fuzz_$t" -set_cover_merge=1 -timeout=10 -max_len=4096 "$merged" "$ROOT/fuzz/corpus/$t" "$work" \
      2>>"$BUILD/$t.log"
    find "$ROOT/fuzz/corpus/$t" -type f ! -name 'regress-*' -delete
    cp "$merged"/* "$ROOT/fuzz/corpus/$t/"
    echo "fuzz: $t corpus now $(ls "$ROOT/fuzz/corpus/$t" | wc -l) inputs"
  fi
done
echo "fuzz: ${TARGETS[*]}: no crash, hang, leak or sanitizer report"
