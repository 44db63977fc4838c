#!/bin/bash
# Two gaia binaries (or one binary under two environments), each on its own copy of a
# filled 50,000-instance store, submitting in turn: CPU (user, system), page faults, wall
# time and peak RSS of each `gaia submit`, mean/median over N commands each. What the
# submit-cli-50k case's alternating mode (one store, shared kept files) cannot tell
# apart: both builds then read the kept files the other wrote.
#
#   GAIA_BENCH_SUBMIT_DIR=/tmp/filled build/bench/gaia-bench submit-cli-50k   # fills once
#   bench/ab_submit.sh /tmp/filled 16 build/cli/gaia /tmp/base/build/cli/gaia
#   bench/ab_submit.sh /tmp/filled 16 build/cli/gaia build/cli/gaia "GLIBC_TUNABLES=glibc.malloc.hugetlb=1" "X=1"
#
# Needs perf (linux-perf) and GNU time; each copy settles (starts the fill's copies) and
# renders once before the measured commands.
set -euo pipefail
FILLED=$(realpath "$1") N=$2 BIN_A=$(realpath "$3") BIN_B=$(realpath "$4") ENV_A=${5:-GAIA_AB=a} ENV_B=${6:-GAIA_AB=b}
WORK=$(mktemp -d /tmp/gaia-ab.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
run() {  # which, spec folder, release name, what to run it under...
  local which=$1 spec=$2 name=$3; shift 3
  local bin=$BIN_A env=$ENV_A
  if [ "$which" = b ]; then bin=$BIN_B env=$ENV_B; fi
  (cd "$WORK/$which" && env "$env" XDG_STATE_HOME="$WORK/$which/state" XDG_CACHE_HOME="$WORK/$which/cache" "$@" \
    "$bin" submit "$spec" --tenant t0 --name "$name" > /dev/null 2> "$WORK/err") || { cat "$WORK/err"; exit 1; }
}
for which in a b; do
  cp -r "$FILLED" "$WORK/$which"
  run "$which" app settle
  run "$which" app-cold cold
done
for i in $(seq 1 "$N"); do
  for which in a b; do
    run "$which" app "w$i" perf stat -x, -e task-clock,page-faults,user_time,system_time,duration_time \
      -o "$WORK/$which.$i.stat" /usr/bin/time -f "%M" -o "$WORK/$which.$i.rss"
  done
done
python3 - "$WORK" <<'PY'
import glob, statistics, sys
work = sys.argv[1]
for which in ("a", "b"):
    m = {}
    for f in glob.glob(f"{work}/{which}.*.stat"):
        for line in open(f):
            p = line.strip().split(",")
            if len(p) > 3 and p[0][:1].isdigit():
                m.setdefault(p[2], []).append(float(p[0]))
    rss = [int(open(f).read().split()[-1]) for f in glob.glob(f"{work}/{which}.*.rss")]
    scale = lambda k: 1e6 if k.endswith("_time") else 1
    print(which, " ".join(f"{k.replace('_time', '')} {statistics.mean(v) / scale(k):.1f}/{statistics.median(v) / scale(k):.1f}"
                          for k, v in sorted(m.items())), f"peak-rss-MB {statistics.mean(rss) / 1024:.0f}", "n", len(rss))
PY
