#!/usr/bin/env bash
# The main job: installs what is missing, builds the gaia binary (only it: not the tests
# or the benchmarks, which scripts/test.sh builds), and runs gaia on the embedded default
# against the example stack in examples/. Pass --no-setup to skip the install and build.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${GAIA_BUILD_DIR:-$ROOT/build}"
if [ "${1:-}" != "--no-setup" ]; then
  bash "$ROOT/scripts/setup.sh" --main
  bash "$ROOT/scripts/build.sh" gaia
fi
GAIA="$BUILD/cli/gaia"
export GAIA_REPO="$ROOT/examples"
# A state dir of its own, so the demo never touches a user's real state.
export XDG_STATE_HOME="${GAIA_DEMO_STATE:-$(mktemp -d)}"
export XDG_CACHE_HOME="$XDG_STATE_HOME/cache"

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

# Every example app (examples/clusters/ holds cluster files, not apps).
APPS=()
for d in "$ROOT"/examples/*/; do [ -f "$d/app.yaml" ] && APPS+=("$d"); done
step "$GAIA" validate "${APPS[@]}"
step "$GAIA" deps "$ROOT/examples/web"
# A local cluster: 50 nodes in three racks with a GPU island, in the demo's own store.
step "$GAIA" cluster create -f "$ROOT/examples/clusters/bigdata-50.yaml"
# What a submit would do (placements and why, preemptions, pending), writing nothing.
step "$GAIA" plan "$ROOT/examples/web"
# The example stack: web's chain (zookeeper, hdfs, hbase, kafka) in dependency order,
# then spark and the trainer, which reuse the running hdfs.
step "$GAIA" submit "$ROOT/examples/web" --wait --timeout 2m
step "$GAIA" submit "$ROOT/examples/spark" "$ROOT/examples/trainer" --wait --timeout 2m
step "$GAIA" get apps
step "$GAIA" get instances
step "$GAIA" endpoints hdfs
step "$GAIA" status
# The cluster as a picture: nodes by rack, each cell as full as the node (docs/cli.md#gaia-map).
step "$GAIA" map
# The timeline: every decision the submits made, oldest first.
step "$GAIA" events

# The same gaia on real processes: a second store whose cluster runs on the process
# backend (its agent starts in the background), and the small stack of examples/local
# made of Debian programs: kv (redis-server) and hits (busybox httpd with a CGI script
# counting visits in kv). Each instance binds its own loopback address.
export GAIA_STORE="$XDG_STATE_HOME/local.db"
# Whatever happens below, no process of the demo outlives it: deleting the apps stops
# their processes (the command does it inline), then the agent goes.
cleanup() {
  "$GAIA" delete hits >/dev/null 2>&1 || true
  "$GAIA" delete kv >/dev/null 2>&1 || true
  "$GAIA" agent stop >/dev/null 2>&1 || true
}
trap cleanup EXIT
step "$GAIA" cluster create --backend process --nodes 2
GAIA_REPO="$ROOT/examples/local" step "$GAIA" submit "$ROOT/examples/local/hits" --wait --timeout 2m
step "$GAIA" endpoints hits
read -r ADDR PORTS < <("$GAIA" endpoints hits | awk '$1 ~ /^0\.web\.hits\./ {print $2, $3; exit}')
URL="http://$ADDR:${PORTS#http=}/cgi-bin/hits"
step busybox wget -qO- "$URL"
step busybox wget -qO- "$URL"
step "$GAIA" logs 0.server.kv.default --tail 3
# Deleting the apps stops their processes; then the agent goes too.
step "$GAIA" delete hits
step "$GAIA" delete kv
step "$GAIA" agent stop

