#!/usr/bin/env bash
# Configures and builds gaia into build/ (or $GAIA_BUILD_DIR). Used by demo.sh and test.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${GAIA_BUILD_DIR:-$ROOT/build}"
JOBS="${GAIA_JOBS:-$(nproc 2>/dev/null || echo 2)}"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE="${GAIA_BUILD_TYPE:-RelWithDebInfo}" >/dev/null
cmake --build "$BUILD" -j"$JOBS"
