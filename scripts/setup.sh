#!/usr/bin/env bash
# Installs the Debian packages gaia needs. Idempotent: packages already present are
# skipped, and apt is not touched at all when nothing is missing. Must run as root (or
# with sudo available) on Debian bookworm.
#   bash scripts/setup.sh          what the build, the tests and the benchmarks need
#   bash scripts/setup.sh --main   only what the main job needs (scripts/demo.sh): the
#                                  compiler, the libraries the gaia binary links, and the
#                                  two programs of the process demo; a newcomer waits for
#                                  this one, so it leaves out the test-only packages
#   bash scripts/setup.sh --fuzz   everything, and clang 19 with libFuzzer (scripts/fuzz.sh)
set -euo pipefail

# What the gaia binary needs to build (scripts/build.sh gaia) and the demo to run.
MAIN_PACKAGES=(
  g++ cmake make pkg-config ca-certificates
  libjsonnet-dev libyaml-cpp-dev libcli11-dev libcurl4-openssl-dev
  libboost-dev libboost-filesystem-dev libfmt-dev libsqlite3-dev
  nlohmann-json3-dev libxxhash-dev
  # mimalloc: the allocator of a render's child (render/render_heap.hpp), a third of
  # an uncached render's time.
  libmimalloc-dev
  # The example stack of examples/local runs these on the process backend (the main
  # job sends a request through it; the end-to-end tests kill and restart them).
  redis-server busybox
)
# The tests, the benchmarks and the stand-ins need these as well.
PACKAGES=(
  "${MAIN_PACKAGES[@]}"
  build-essential git catch2 librapidcheck-dev libbenchmark-dev
  libcpp-httplib-dev libspdlog-dev sqlite3
  # The Kubernetes tests make TLS certificates for the stand-in API server with it.
  openssl libssl-dev
  # The completion tests run the generated scripts in each shell; `script` (bsdutils)
  # gives the terminal tests a pseudo-terminal.
  zsh fish bsdutils
  # `gaia sim replay --plot` and `gaia sim compact --plot` run gnuplot; their tests draw.
  gnuplot-nox
  # The etcd store's tests (tests/store/etcd_store_test.cpp) start their own etcd from
  # /usr/bin/etcd on free ports with scratch data dirs; the package's own service is
  # not needed by gaia and may stay stopped.
  etcd-server
)
# The coverage-guided fuzz build (docs/fuzzing.md) needs clang with libFuzzer; clang 19
# is the first of Debian's clangs that compiles libstdc++ 12's <expected>. The test
# suite's short fuzz pass does not need it: it runs the same targets built with g++.
case "${1:-}" in
  --fuzz) PACKAGES+=(clang-19 libclang-rt-19-dev) ;;
  --main) PACKAGES=("${MAIN_PACKAGES[@]}") ;;
  "") ;;
  *) echo "setup: unknown option $1 (expected --main or --fuzz)" >&2; exit 2 ;;
esac

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "setup: missing packages (${missing[*]}) and not root; run as root" >&2
    exit 1
  fi
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
