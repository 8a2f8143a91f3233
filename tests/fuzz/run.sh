#!/usr/bin/env bash
# tests/fuzz/run.sh HARNESS SRC_DIR NAME WORK_DIR RUNS - one harness in the
# suite: first every input in regressions/NAME (each once: a crash or a
# leak found earlier must stay fixed), then RUNS executions (-runs, never
# a time limit) starting from the seed corpus corpus/NAME, with a fixed
# seed. New inputs go to WORK_DIR (the committed corpus is not touched).
set -euo pipefail
harness=$1 src=$2 name=$3 work=$4 runs=$5
rm -rf "$work" && mkdir -p "$work/corpus"
export TMPDIR=$work
opts=(-rss_limit_mb=2048 -timeout=60 -print_final_stats=1)
reg=$src/regressions/$name
if compgen -G "$reg/*" >/dev/null; then
	"$harness" "${opts[@]}" "$reg"/*
	echo "fuzz $name: $(ls "$reg" | wc -l) regression input(s) pass"
fi
"$harness" "${opts[@]}" -runs="$runs" -seed=1 "$work/corpus" "$src/corpus/$name"
