#!/usr/bin/env bash
# Rewrites the golden outputs (tests/golden/expected/) from the current build: run it only when
# a change of output is meant, and review `git diff tests/golden` with the change.
#   bash tools/update_goldens.sh [build-dir]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-${PROJECTOR_BUILD_DIR:-$root/build}}"
cmake --build "$build" --target projector
PROJECTOR_UPDATE_GOLDENS=ON ctest --test-dir "$build" -L golden -j "$(nproc 2>/dev/null || echo 2)"
