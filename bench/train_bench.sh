#!/bin/sh
# Training throughput of the seed CNN (Fashion-MNIST, batch 64, SGD momentum)
# in singa and in PyTorch, on 1 and 2 threads, run back to back on the same
# machine. Prints images/s of both and singa's ratio over PyTorch.
#
# Usage: bench/train_bench.sh [BUILD_DIR] [IMAGES]   (defaults: build, 12800)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
images=${2:-12800}
singa=$build/tools/singa
[ -x "$singa" ] || { echo "train_bench: no $singa (build first)" >&2; exit 1; }
/usr/bin/python3 -c "import torch" 2>/dev/null || { echo "train_bench: /usr/bin/python3 has no torch (apt install python3-torch)" >&2; exit 1; }
field() { sed -n "s/.*\"$1\": *\([0-9.e+-]*\).*/\1/p"; }
printf "%-8s %14s %14s %8s\n" threads singa_img/s torch_img/s ratio
for t in 1 2; do
  s=$(OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=$t "$singa" train --stages train --epochs 1 --limit-train "$images" \
        --limit-test 500 --threads "$t" --json | field images_per_second)
  p=$(OMP_NUM_THREADS=$t /usr/bin/python3 "$here/train_torch.py" --threads "$t" --images "$images" | field images_per_second)
  [ -n "$s" ] && [ -n "$p" ] || { echo "train_bench: a run failed (singa: '$s', torch: '$p')" >&2; exit 1; }
  printf "%-8s %14.0f %14.0f %8.2f\n" "$t" "$s" "$p" "$(echo "$s / $p" | bc -l)"
done
echo "(machine load: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores)"
