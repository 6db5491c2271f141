#!/bin/bash
# A/B of builds of examples/profile.rs on a noisy machine: runs each binary
# RUNS chains of SCRIPT, ROUNDS times, alternating binaries, and prints the
# lowest and the middle of the per-batch medians (µs).
#   benches/ab.sh SCRIPT RUNS ROUNDS BIN1 BIN2 ... [-- extra profile args]
# Copy target/release/examples/profile aside per build to compare them.
script=$1; runs=$2; rounds=$3; shift 3
bins=(); extra=()
while [ $# -gt 0 ]; do if [ "$1" = "--" ]; then shift; extra=("$@"); break; fi; bins+=("$1"); shift; done
declare -A res
for r in $(seq $rounds); do for b in "${bins[@]}"; do
  m=$($b $script $runs "${extra[@]}" | sed -E 's/.*median ([0-9.]+)(µs|ms).*/\1 \2/'); 
  v=$(echo $m | awk '{ if ($2=="ms") print $1*1000; else print $1 }')
  res[$b]="${res[$b]} $v"
done; done
for b in "${bins[@]}"; do echo "$b: $(echo ${res[$b]} | tr ' ' '\n' | sort -n | awk '{a[NR]=$1} END {printf "min-of-medians %.1f  median-of-medians %.1f  (n=%d)", a[1], a[int((NR+1)/2)], NR}')"; done
