#!/usr/bin/env bash
# Sets up, builds and runs the projector on Debian 12 (as root), from any working directory.
#   bash tools/bootstrap.sh run    install what is missing, build Release, run the default scenario
#   bash tools/bootstrap.sh test   install what is missing, build Release, run the whole test suite
# Idempotent: packages already present are not reinstalled, the build directory is reused.
set -euo pipefail
mode="${1:-run}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${PROJECTOR_BUILD_DIR:-$root/build}"

packages=(build-essential cmake ninja-build pkg-config libabsl-dev nlohmann-json3-dev
          libcxxopts-dev libeigen3-dev libgtest-dev libgmock-dev libbenchmark-dev
          libyaml-cpp-dev python3-dev python3-pybind11 python3-pytest protobuf-compiler
          libprotobuf-dev libopenmpi-dev openmpi-bin)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

jobs="$(nproc 2>/dev/null || echo 2)"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPROJECTOR_WERROR=ON >/dev/null
cmake --build "$build" -j "$jobs"

case "$mode" in
  run)
    shift || true
    "$build/cli/project" "$@"
    ;;
  test)
    ctest --test-dir "$build" --output-on-failure -j "$jobs" -LE slow
    ;;
  *)
    echo "usage: bash tools/bootstrap.sh run|test" >&2
    exit 2
    ;;
esac
