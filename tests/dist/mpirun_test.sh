#!/bin/sh
# Runs a test program on 2 ranks with mpirun (and once as a single rank);
# skips (exit 77) when mpirun is absent.
#   mpirun_test.sh PROGRAM [ARGS...]
if ! command -v mpirun >/dev/null 2>&1; then
  echo "SKIP: mpirun not found (apt-get install openmpi-bin libopenmpi-dev)"
  exit 77
fi
"$@" || exit $?
# Open MPI refuses root without these flags; the timeout keeps a hang from stalling CI.
exec timeout 300 mpirun --allow-run-as-root --oversubscribe -np 2 "$@"
