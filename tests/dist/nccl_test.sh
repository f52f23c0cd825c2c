#!/bin/sh
# Runs the NCCL test (test_dist_nccl) as one rank, then on 2 ranks under
# mpirun where two GPUs are visible: one NCCL communicator cannot hold two
# ranks on the same GPU. Exit 77 (skip) comes from the program itself when
# there is no CUDA device or the NCCL module does not load.
#   nccl_test.sh PROGRAM
"$@" || exit $?
gpus=$("$1" --count-gpus) || exit 1
if [ "$gpus" -lt 2 ]; then
  echo "NCCL: $gpus GPU visible; the 2-rank case needs 2 GPUs and was not run"
  exit 0
fi
if ! command -v mpirun >/dev/null 2>&1; then
  echo "NCCL: mpirun not found; the 2-rank case was not run"
  exit 0
fi
# Open MPI refuses root without these flags; the timeout keeps a hang from stalling CI.
exec timeout 300 mpirun --allow-run-as-root --oversubscribe -np 2 "$@"
