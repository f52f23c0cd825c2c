/* peak.c - the machine's FP32 multiply-add peak, measured: each thread runs
 * 16 independent chains of 16-float fused multiply-adds (enough in flight to
 * fill two FMA units of 4-cycle latency) from registers only. bench/run.sh
 * compiles it with -march=native and reports each model's GFLOP/s against
 * this figure instead of one derived from a nominal clock, which these VMs
 * under-report (the cores boost past /proc/cpuinfo's "cpu MHz").
 *
 *   peak THREADS   prints one line: GFLOP/s over all threads
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef float v16 __attribute__((vector_size(64)));

enum { kChains = 16 };
static const long kIters = 40 * 1000 * 1000;
static volatile float sink;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void* chains(void* unused) {
  (void)unused;
  v16 acc[kChains];
  v16 x, y;
  for (int l = 0; l < 16; ++l) x[l] = 0.9999999f, y[l] = 1e-7f;
  for (int c = 0; c < kChains; ++c)
    for (int l = 0; l < 16; ++l) acc[c][l] = (float)(c + l);
  for (long n = 0; n < kIters; ++n) {
#pragma GCC unroll 16
    for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * x + y;
  }
  float s = 0;
  for (int c = 0; c < kChains; ++c) s += acc[c][0];
  sink = s;
  return NULL;
}

int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  if (threads < 1 || threads > 256) threads = 1;
  pthread_t* t = malloc(sizeof(pthread_t) * (size_t)threads);
  chains(NULL); /* warm the clock up */
  const double t0 = now();
  for (int i = 0; i < threads; ++i) pthread_create(&t[i], NULL, chains, NULL);
  for (int i = 0; i < threads; ++i) pthread_join(t[i], NULL);
  const double secs = now() - t0;
  printf("%.1f\n", (double)threads * (double)kIters * kChains * 16 * 2 / secs / 1e9);
  free(t);
  return 0;
}
