/* allreduce_bench.c - MPI_Allreduce bandwidth and latency on this machine.
 *
 *   mpicc -O2 allreduce_bench.c -o allreduce_bench
 *   mpirun -np 2 ./allreduce_bench [max_mib]
 *
 * For each message size (float32 sum, in place) it prints the median time of
 * repeated all-reduces, the algorithm bandwidth (bytes / time) and the bus
 * bandwidth (algbw * 2 (n - 1) / n: what each link carries in a ring), as
 * NCCL's tests report them. One JSON line per size on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const long max_bytes = (argc > 1 ? atol(argv[1]) : 64) << 20;
  float* buf = malloc((size_t)max_bytes);
  for (long i = 0; i < max_bytes / 4; ++i) buf[i] = 1.0f;
  for (long bytes = 4; bytes <= max_bytes; bytes *= 4) {
    const int count = (int)(bytes / 4);
    const int reps = bytes < (1 << 20) ? 200 : bytes < (16 << 20) ? 20 : 5;
    double t[200];
    MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); /* warm-up */
    for (int r = 0; r < reps; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      double dt = MPI_Wtime() - t0, worst;
      MPI_Allreduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      t[r] = worst;
    }
    qsort(t, (size_t)reps, sizeof(double), cmp);
    const double med = t[reps / 2], algbw = (double)bytes / med / 1e9;
    if (rank == 0)
      printf("{\"ranks\":%d,\"bytes\":%ld,\"seconds\":%.3e,\"algbw_GBps\":%.3f,\"busbw_GBps\":%.3f}\n", n, bytes, med,
             algbw, algbw * 2.0 * (n - 1) / n);
  }
  free(buf);
  MPI_Finalize();
  return 0;
}
