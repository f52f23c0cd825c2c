#!/bin/sh
# Training throughput of the seed CNN (Fashion-MNIST, batch 64, SGD momentum)
# in singa and in PyTorch, on 1 and 2 threads, run back to back on the same
# machine. Prints images/s of both and singa's ratio over PyTorch.
#
# Usage: bench/train_bench.sh [BUILD_DIR] [IMAGES] [ROUNDS]   (defaults: build, 12800, 1)
#
# With ROUNDS > 1 the two alternate round by round (so that load from other
# jobs drifting over time hits both) and each row shows the medians, with
# the per-round ratios after it.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
images=${2:-12800}
rounds=${3:-1}
singa=$build/tools/singa
[ -x "$singa" ] || { echo "train_bench: no $singa (build first)" >&2; exit 1; }
/usr/bin/python3 -c "import torch" 2>/dev/null || { echo "train_bench: /usr/bin/python3 has no torch (apt install python3-torch)" >&2; exit 1; }
field() { sed -n "s/.*\"$1\": *\([0-9.e+-]*\).*/\1/p"; }
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
printf "%-8s %14s %14s %8s\n" threads singa_img/s torch_img/s ratio
for t in 1 2; do
  ss="" ps="" rs=""
  r=0
  while [ "$r" -lt "$rounds" ]; do
    # Both leave their first 10 steps out of the timing (train_torch.py runs
    # 10 warm-up steps before its timed pass).
    s=$(OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=$t "$singa" train --stages train --epochs 1 --limit-train "$images" \
          --limit-test 500 --threads "$t" --warmup-steps 10 --json | field images_per_second)
    p=$(OMP_NUM_THREADS=$t /usr/bin/python3 "$here/train_torch.py" --threads "$t" --images "$images" | field images_per_second)
    [ -n "$s" ] && [ -n "$p" ] || { echo "train_bench: a run failed (singa: '$s', torch: '$p')" >&2; exit 1; }
    ss="$ss $s" ps="$ps $p" rs="$rs $(echo "$s / $p" | bc -l)"
    r=$((r + 1))
  done
  s=$(echo "$ss" | tr ' ' '\n' | grep . | median)
  p=$(echo "$ps" | tr ' ' '\n' | grep . | median)
  ratio=$(echo "$rs" | tr ' ' '\n' | grep . | median)
  extra=""
  [ "$rounds" -gt 1 ] && extra="   (ratios:$(for x in $rs; do printf ' %.2f' "$x"; done))"
  printf "%-8s %14.0f %14.0f %8.2f%s\n" "$t" "$s" "$p" "$ratio" "$extra"
done
echo "(machine load: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores)"
