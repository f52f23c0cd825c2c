/*
 * affine_kernel.h - a float kernel y = alpha * x + beta written against the
 * plain C ABI, shared by the C test plugins (each plugin compiles its own
 * private copy: everything here is static).
 *
 * The defaults of alpha and beta come from the kernel definition's `user`
 * pointer, so every plugin can register the same code under its own op name
 * and the tests can tell the ops apart by their results.
 */
#ifndef SINGA_TEST_AFFINE_KERNEL_H
#define SINGA_TEST_AFFINE_KERNEL_H

#include <singa/singa_abi.h>

#include <stdio.h>
#include <stdlib.h>

static const singa_host_api* g_host;

typedef struct affine_params {
  float alpha;
  float beta;
} affine_params;

typedef struct affine_range {
  const float* x;
  float* y;
  affine_params p;
} affine_range;

static singa_status* affine_error(singa_code code, const char* node, const char* what) {
  char msg[256];
  snprintf(msg, sizeof msg, "node '%s': %s", node ? node : "?", what);
  return g_host->status_new(code, msg);
}

static singa_status* affine_create(void* user, const singa_node* node, void** state) {
  const affine_params* defaults = (const affine_params*)user;
  affine_params* p;
  if (g_host->node_num_inputs(node) != 1 || g_host->node_num_outputs(node) != 1)
    return affine_error(SINGA_INVALID_ARGUMENT, g_host->node_name(node), "expects exactly 1 input and 1 output");
  p = (affine_params*)malloc(sizeof *p);
  if (!p) return g_host->status_new(SINGA_OUT_OF_MEMORY, "affine kernel state");
  *p = *defaults;
  g_host->node_attr_float(node, "alpha", &p->alpha);
  g_host->node_attr_float(node, "beta", &p->beta);
  *state = p;
  return NULL;
}

static void affine_range_fn(void* user, int64_t begin, int64_t end) {
  const affine_range* r = (const affine_range*)user;
  int64_t i;
  for (i = begin; i < end; ++i) r->y[i] = r->p.alpha * r->x[i] + r->p.beta;
}

static singa_status* affine_compute(void* state, singa_kernel_context* ctx) {
  const DLTensor* x = g_host->ctx_input(ctx, 0);
  DLTensor* y = NULL;
  affine_range r;
  int64_t n = 1;
  int32_t d;
  singa_status* st;
  if (!x) return affine_error(SINGA_INVALID_ARGUMENT, g_host->ctx_node_name(ctx), "input 0 is absent");
  if (x->dtype.code != kDLFloat || x->dtype.bits != 32 || x->dtype.lanes != 1)
    return affine_error(SINGA_INVALID_ARGUMENT, g_host->ctx_node_name(ctx), "input 0 must be float32");
  for (d = 0; d < x->ndim; ++d) n *= x->shape[d];
  st = g_host->ctx_output(ctx, 0, x->ndim, x->shape, x->dtype, &y);
  if (st) return st;
  r.x = (const float*)((const char*)x->data + x->byte_offset);
  r.y = (float*)((char*)y->data + y->byte_offset);
  r.p = *(const affine_params*)state;
  g_host->ctx_parallel_for(ctx, n, 4096, affine_range_fn, &r);
  return NULL;
}

static void affine_destroy(void* state) { free(state); }

static const singa_type_constraint affine_float_only[] = {{"T", 0, SINGA_DTYPE_BIT(SINGA_ONNX_FLOAT)}};

/* A complete current-ABI definition of the affine kernel for `op_type`. */
static singa_kernel_def affine_def(const char* op_type, int32_t since, int32_t end, const affine_params* defaults) {
  singa_kernel_def def = {0};
  def.struct_size = sizeof def;
  def.domain = "com.singa.test";
  def.op_type = op_type;
  def.since_version = since;
  def.end_version = end;
  def.device = "cpu";
  def.constraints = affine_float_only;
  def.num_constraints = 1;
  def.flags = 0;
  def.user = (void*)defaults;
  def.create = affine_create;
  def.compute = affine_compute;
  def.destroy = affine_destroy;
  return def;
}

/* The handshake every plugin starts with: say which ABI it was built for,
 * then refuse a host of another major before touching the rest of its table. */
static inline singa_status* affine_plugin_begin(const singa_host_api* host, singa_plugin* plugin, const char* name,
                                                uint32_t abi_major, uint32_t abi_minor) {
  g_host = host;
  if (SINGA_HAS_FIELD(plugin, singa_plugin, abi_minor)) {
    plugin->abi_major = abi_major;
    plugin->abi_minor = abi_minor;
  }
  if (SINGA_HAS_FIELD(plugin, singa_plugin, description)) {
    plugin->name = name;
    plugin->version = "0.0.1";
    plugin->description = "singa test plugin";
  }
  if (host->abi_major != abi_major) return host->status_new(SINGA_ABI_MISMATCH, "host ABI major differs");
  return NULL;
}

#endif
