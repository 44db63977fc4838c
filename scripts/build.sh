#!/usr/bin/env bash
# Configures and builds gaia into build/ (or $GAIA_BUILD_DIR). Used by demo.sh and test.sh.
#   bash scripts/build.sh            everything: gaia, the test executables, gaia-bench
#   bash scripts/build.sh gaia ...   only the named CMake targets (and what they need)
# Both use the same configuration and build folder, so building more later reuses what
# is built. Building gaia also generates the shell completion scripts into
# $BUILD/completions/; run as root, this installs them where bash-completion, zsh and
# fish look for them (set GAIA_NO_COMPLETIONS=1 to skip), and otherwise prints how to
# load them.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${GAIA_BUILD_DIR:-$ROOT/build}"
JOBS="${GAIA_JOBS:-$(nproc 2>/dev/null || echo 2)}"
TARGETS=()
for t in "$@"; do TARGETS+=(--target "$t"); done
CONFIG=(-DCMAKE_BUILD_TYPE="${GAIA_BUILD_TYPE:-RelWithDebInfo}")
# Everything means the tests and the benchmarks too: a package they need that is missing
# is then an error at configure time (CMakeLists.txt).
if [ ${#TARGETS[@]} -eq 0 ]; then CONFIG+=(-DGAIA_BUILD_TESTS=ON -DGAIA_BUILD_BENCH=ON); fi
cmake -S "$ROOT" -B "$BUILD" "${CONFIG[@]}" >/dev/null
cmake --build "$BUILD" -j"$JOBS" "${TARGETS[@]}"

COMPLETIONS="$BUILD/completions"
if [ "${GAIA_NO_COMPLETIONS:-0}" = 1 ] || [ ! -f "$COMPLETIONS/gaia.bash" ]; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
  installed="bash"
  install -D -m 644 "$COMPLETIONS/gaia.bash" /usr/share/bash-completion/completions/gaia
  # zsh and fish only when installed, so no folders of absent shells are created.
  if command -v zsh >/dev/null 2>&1; then
    install -D -m 644 "$COMPLETIONS/_gaia" /usr/share/zsh/vendor-completions/_gaia
    installed="$installed, zsh"
  fi
  if command -v fish >/dev/null 2>&1; then
    install -D -m 644 "$COMPLETIONS/gaia.fish" /usr/share/fish/vendor_completions.d/gaia.fish
    installed="$installed, fish"
  fi
  echo "build: shell completions installed ($installed); they complete the command \`gaia\` on PATH"
else
  echo "build: for tab completion, with $BUILD/cli/gaia on PATH as gaia:"
  echo "  bash: source $COMPLETIONS/gaia.bash"
  echo "  zsh:  fpath=($COMPLETIONS \$fpath) before compinit (file _gaia)"
  echo "  fish: source $COMPLETIONS/gaia.fish"
fi
