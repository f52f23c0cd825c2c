#!/bin/sh
# Seed corpora for the fuzz targets from the ONNX backend test data:
#   fuzz/seed.sh OUTDIR [DATA_DIR]   ->  OUTDIR/model/*.onnx  OUTDIR/tensor/*.pb
# DATA_DIR holds node/ (and simple/): Debian's ONNX 1.12 data by default, or ../shared/onnx-node-1.23.
# Files are copied under names made from their case, so the seeds stay readable. Large ones are
# left out: libFuzzer mutates small inputs far faster, and the node cases cover every op.
set -eu
out=$1
data=${2:-/usr/include/onnx/backend/test/data}
max_bytes=${SEED_MAX_BYTES:-65536}
mkdir -p "$out/model" "$out/tensor"
for m in "$data"/node/*/model.onnx "$data"/simple/*/model.onnx; do
  [ -f "$m" ] || continue  # a data folder without simple/ (ONNX 1.23's node suite)
  [ "$(stat -c %s "$m")" -le "$max_bytes" ] || continue
  cp "$m" "$out/model/$(basename "$(dirname "$m")").onnx"
done
for t in "$data"/node/*/test_data_set_0/*.pb; do
  [ -f "$t" ] || continue
  [ "$(stat -c %s "$t")" -le "$max_bytes" ] || continue
  case_name=$(basename "$(dirname "$(dirname "$t")")")
  cp "$t" "$out/tensor/${case_name}_$(basename "$t")"
done
echo "seeds: $(ls "$out/model" | wc -l) models, $(ls "$out/tensor" | wc -l) tensors in $out"
