#!/bin/sh
# Builds and runs the MPI all-reduce benchmark on NP ranks of this machine
# (default 2), writing one JSON line per message size.
#   bench/allreduce/run.sh [NP] [MAX_MIB]
set -e
cd "$(dirname "$0")"
mpicc -O2 allreduce_bench.c -o /tmp/singa_allreduce_bench
exec mpirun --allow-run-as-root --oversubscribe -np "${1:-2}" /tmp/singa_allreduce_bench "${2:-64}"
