#!/usr/bin/env bash
# Installs the dependencies, builds ordo, and runs the demo job on this
# machine: 1 scheduler, 2 servers, 2 workers training an MLP.
# Extra arguments go to ps-launch (e.g. --set train.iterations=100).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DPS_BUILD_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)"
exec build/ps-launch --config conf/local.ini "$@"
