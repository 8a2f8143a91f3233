#!/usr/bin/env bash
# Regenerates the README's configuration reference (between the
# config-reference markers) from the binaries' --help-config.
#   scripts/update-readme-reference.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
ref=$(mktemp)
trap 'rm -f "$ref"' EXIT
"$build/ps-scheduler" --help-config >"$ref"
python3 - "$ref" <<'PY'
import sys
ref = open(sys.argv[1]).read()
text = open("README.md").read()
begin, end = "<!-- config-reference:begin -->\n", "<!-- config-reference:end -->"
a, b = text.index(begin) + len(begin), text.index(end)
open("README.md", "w").write(text[:a] + ref + text[b:])
PY
echo "README.md: configuration reference regenerated from $build/ps-scheduler"
