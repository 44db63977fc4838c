#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs gaia on the embedded default
# against the example stack in examples/. Pass --no-setup to skip the install and build.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${GAIA_BUILD_DIR:-$ROOT/build}"
if [ "${1:-}" != "--no-setup" ]; then
  bash "$ROOT/scripts/setup.sh"
  bash "$ROOT/scripts/build.sh"
fi
GAIA="$BUILD/cli/gaia"
export GAIA_REPO="$ROOT/examples"
# A state dir of its own, so the demo never touches a user's real state.
export XDG_STATE_HOME="${GAIA_DEMO_STATE:-$(mktemp -d)}"
export XDG_CACHE_HOME="$XDG_STATE_HOME/cache"

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

step "$GAIA" validate "$ROOT"/examples/*/
step "$GAIA" deps "$ROOT/examples/web"
step "$GAIA" render "$ROOT/examples/web" -o yaml
