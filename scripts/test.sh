#!/usr/bin/env bash
# One command from a fresh Debian bookworm machine to a full test run: installs what is
# missing, builds everything (gaia, the test executables, and gaia-bench: no test runs
# it, but building it here keeps it from rotting), runs the main job once (as a smoke
# test of the user's first command), then every test (ctest runs each Catch2 test case
# as its own entry).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${GAIA_BUILD_DIR:-$ROOT/build}"
bash "$ROOT/scripts/setup.sh"
bash "$ROOT/scripts/build.sh"
GAIA_BUILD_DIR="$BUILD" bash "$ROOT/scripts/demo.sh" --no-setup >/dev/null
# --no-tests=error: a build that configured no tests fails instead of passing empty.
ctest --test-dir "$BUILD" --no-tests=error --output-on-failure -j"${GAIA_JOBS:-$(nproc 2>/dev/null || echo 2)}" --timeout 600
