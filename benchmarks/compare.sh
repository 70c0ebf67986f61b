#!/usr/bin/env bash
# compare.sh BASE [PATTERN] [COUNT]: runs the benchmarks module's benchmarks
# of the commit BASE and of the working tree side by side in one run: both
# test binaries are built first, then run in turn, one -count each round,
# so the machine's load falls on both alike; benchstat compares them.
set -euo pipefail
base=${1:?usage: benchmarks/compare.sh BASE [PATTERN] [COUNT]}
pattern=${2:-'^(BenchmarkSuccessPath|BenchmarkDriverLayer|BenchmarkDriverLayerConn|BenchmarkDriverLayerTx)$'}
count=${3:-6}
root=$(git rev-parse --show-toplevel)
work=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$work/base" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git -C "$root" worktree add --detach "$work/base" "$base" >/dev/null
(cd "$work/base/benchmarks" && go test -c -o "$work/base.test" .)
(cd "$root/benchmarks" && go test -c -o "$work/head.test" .)
for i in $(seq "$count"); do
	for side in base head; do
		(cd "$root/benchmarks" && "$work/$side.test" -test.run '^$' -test.bench "$pattern" -test.benchmem -test.count 1) \
			| grep -E '^Benchmark' >>"$work/$side.txt"
	done
done
go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da "base=$work/base.txt" "head=$work/head.txt"
