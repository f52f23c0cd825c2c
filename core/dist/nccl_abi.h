/* nccl_abi.h - the C functions of libsinga_dist_nccl.so, which the core finds
 * with dlsym. Each returns 0 on success, else writes a message to `err`. */
#ifndef SINGA_CORE_DIST_NCCL_ABI_H
#define SINGA_CORE_DIST_NCCL_ABI_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SINGA_NCCL_ID_BYTES 128
/* A new unique id (on one rank; the others receive it). */
typedef int (*singa_nccl_id_fn)(unsigned char* id, char* err, size_t errlen);
/* A communicator of `nranks` on CUDA device `device`. */
typedef int (*singa_nccl_init_fn)(void** comm, const unsigned char* id, int nranks, int rank, int device, char* err,
                                  size_t errlen);
/* Enqueues an in-place average of n float32 buffers (one NCCL group). */
typedef int (*singa_nccl_allreduce_avg_fn)(void* comm, void* const* bufs, const size_t* counts, int n, char* err,
                                           size_t errlen);
/* Waits for the enqueued work, aborting the communicator after timeout_s. */
typedef int (*singa_nccl_wait_fn)(void* comm, double timeout_s, char* err, size_t errlen);
typedef void (*singa_nccl_destroy_fn)(void* comm);

#ifdef __cplusplus
}
#endif
#endif
