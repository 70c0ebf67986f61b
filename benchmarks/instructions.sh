#!/usr/bin/env bash
# instructions.sh PATTERN [LOW] [HIGH] [FUNC]: the instructions one iteration of
# the benchmarks PATTERN selects costs, counted by valgrind's callgrind
# (times move with the machine's load; instruction counts do not): the
# whole program's count for HIGH iterations minus its count for LOW,
# divided by HIGH-LOW, the median of three such differences. One P, no
# GC and no async preemption, so that the count does not depend on the
# scheduler. PATTERN should select one benchmark row, e.g.
# '^BenchmarkDriverLayer$/^Exec$/^crl$'. FUNC, when given, counts only
# the instructions run inside that function (callgrind's --toggle-collect,
# e.g. the benchmark's closure of one statement,
# 'github.com/crl-go/crl/benchmarks.init.func2.1' for Query): the
# benchmark's loop and the runtime's background threads left out.
set -euo pipefail
pattern=${1:?usage: benchmarks/instructions.sh PATTERN [LOW] [HIGH]}
low=${2:-5000}
high=${3:-25000}
collect=()
if [ -n "${4:-}" ]; then
	collect=(--toggle-collect="$4")
fi
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$here" && go test -c -o "$work/b.test" .)
# count prints the instructions of a run of $1 iterations. The runtime's
# cputicks (its lock, under contention, as sysmon meets on a loaded
# machine) uses RDTSCP, which valgrind does not know (the run would die
# of SIGILL): cpu.rdtscp=off has it take its fenced RDTSC instead.
count() {
	(cd "$here" && GOMAXPROCS=1 GOGC=off GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off \
		valgrind --tool=callgrind "${collect[@]}" --callgrind-out-file="$work/out.$1" \
		"$work/b.test" -test.run '^$' -test.bench "$pattern" -test.benchtime "${1}x" >/dev/null 2>"$work/err") \
		|| { cat "$work/err" >&2; exit 1; }
	grep -E '^(summary|totals):' "$work/out.$1" | head -1 | awk '{print $2}'
}
diffs=()
for _ in 1 2 3; do
	a=$(count "$low")
	b=$(count "$high")
	diffs+=("$(( (b - a) / (high - low) ))")
done
printf '%s\n' "${diffs[@]}" | sort -n | sed -n 2p
