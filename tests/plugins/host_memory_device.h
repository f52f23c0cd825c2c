/*
 * host_memory_device.h - the required callbacks of a device that keeps its
 * buffers in host memory, for the test plugins that check how the host reads
 * device definitions of other ABI minors. Everything is static: each plugin
 * gets its own copy.
 */
#ifndef SINGA_TEST_HOST_MEMORY_DEVICE_H
#define SINGA_TEST_HOST_MEMORY_DEVICE_H

#include "affine_kernel.h"

#include <stdlib.h>
#include <string.h>

static singa_status* hm_count(void* self, int32_t* count) {
  (void)self;
  *count = 1;
  return NULL;
}

static singa_status* hm_alloc(void* self, int32_t id, size_t bytes, size_t alignment, void** out) {
  (void)self;
  (void)id;
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  if (posix_memalign(out, alignment, bytes ? bytes : 1) != 0) {
    *out = NULL;
    return g_host->status_new(SINGA_OUT_OF_MEMORY, "test device: allocation failed");
  }
  return NULL;
}

static void hm_free(void* self, int32_t id, void* ptr) {
  (void)self;
  (void)id;
  free(ptr);
}

static singa_status* hm_copy(void* self, int32_t id, void* dst, size_t dst_offset, const void* src, size_t src_offset,
                             size_t bytes, singa_copy_kind kind, void* stream) {
  (void)self;
  (void)id;
  (void)kind;
  (void)stream;
  memcpy((char*)dst + dst_offset, (const char*)src + src_offset, bytes);
  return NULL;
}

static singa_status* hm_memset(void* self, int32_t id, void* ptr, size_t offset, int value, size_t bytes,
                               void* stream) {
  (void)self;
  (void)id;
  (void)stream;
  memset((char*)ptr + offset, value, bytes);
  return NULL;
}

static singa_status* hm_synchronize(void* self, int32_t id, void* stream) {
  (void)self;
  (void)id;
  (void)stream;
  return NULL;
}

/* A device definition with every required callback set and the optional ones
 * left NULL. */
static singa_device_def host_memory_device(const char* name) {
  singa_device_def d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.name = name;
  d.dl_device_type = kDLCPU;
  d.score = 1;
  d.device_count = hm_count;
  d.alloc = hm_alloc;
  d.free = hm_free;
  d.copy = hm_copy;
  d.memset = hm_memset;
  d.synchronize = hm_synchronize;
  return d;
}

#endif
