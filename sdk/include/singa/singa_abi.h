/*
 * singa_abi.h - the stable C ABI between the singa core and its plugins.
 *
 * Rules (see docs/abi.md for the rationale):
 *  - Plain C99. No exceptions, no STL, no ownership crosses without an explicit
 *    release function. Handles are opaque.
 *  - Every struct that crosses starts with `size_t struct_size`. Fields are only
 *    ever appended. A reader touches a field only when SINGA_HAS_FIELD says the
 *    writer knew it; otherwise the field takes its documented default.
 *  - A plugin exports exactly one symbol, `singa_plugin_init` (plain C name).
 *    Plugins never link against core symbols: everything comes through `host`.
 *  - SINGA_ABI_MAJOR must match between host and plugin; a mismatch is refused
 *    by the host with a message naming the file and both versions.
 *    SINGA_ABI_MINOR skew is negotiated through struct_size, never refused.
 *  - Every call that can fail returns `singa_status*`: NULL means success. A
 *    non-NULL status is created with host->status_new and released by whoever
 *    receives it (the host, for statuses returned by plugin callbacks).
 *  - Tensors are DLPack `DLTensor`s. For OpenCL the data pointer is a cl_mem.
 *    The stream lives in the kernel context, not in the tensor.
 */
#ifndef SINGA_ABI_H
#define SINGA_ABI_H

#include <stddef.h>
#include <stdint.h>
#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SINGA_ABI_MAJOR 1
#define SINGA_ABI_MINOR 2

/* True when a struct written by the other side (struct_size set by it)
 * contains `field`. */
#define SINGA_HAS_FIELD(ptr, type, field) \
  ((ptr) != NULL && (ptr)->struct_size >= offsetof(type, field) + sizeof(((type*)0)->field))

#if defined(_WIN32)
#define SINGA_EXPORT __declspec(dllexport)
#else
#define SINGA_EXPORT __attribute__((visibility("default")))
#endif

/* Booleans travel as DLPack code 6 with 8 bits (DLPack >= 0.8 calls it
 * kDLBool; Debian ships 0.6, which lacks the name but not the value). */
#define SINGA_DL_BOOL 6
/* Strings travel as an array of `const char*` (NUL-terminated, owned by the
 * tensor's buffer), code 129 in DLPack's vendor range, 64 bits. */
#define SINGA_DL_STRING 129

/* ---------------------------------------------------------------- status */

typedef enum singa_code {
  SINGA_OK = 0,
  SINGA_INVALID_ARGUMENT = 1, /* bad attribute, shape, dtype, input */
  SINGA_NOT_FOUND = 2,        /* missing value, kernel, file, symbol */
  SINGA_UNIMPLEMENTED = 3,    /* valid request this plugin cannot do */
  SINGA_OUT_OF_MEMORY = 4,
  SINGA_UNAVAILABLE = 5,      /* device or runtime not present */
  SINGA_ABI_MISMATCH = 6,
  SINGA_INTERNAL = 7
} singa_code;

typedef struct singa_status singa_status; /* opaque, host-owned */

/* ONNX TensorProto.DataType values, used for type constraints. */
typedef enum singa_onnx_dtype {
  SINGA_ONNX_UNDEFINED = 0, SINGA_ONNX_FLOAT = 1, SINGA_ONNX_UINT8 = 2,
  SINGA_ONNX_INT8 = 3, SINGA_ONNX_UINT16 = 4, SINGA_ONNX_INT16 = 5,
  SINGA_ONNX_INT32 = 6, SINGA_ONNX_INT64 = 7, SINGA_ONNX_STRING = 8,
  SINGA_ONNX_BOOL = 9, SINGA_ONNX_FLOAT16 = 10, SINGA_ONNX_DOUBLE = 11,
  SINGA_ONNX_UINT32 = 12, SINGA_ONNX_UINT64 = 13, SINGA_ONNX_COMPLEX64 = 14,
  SINGA_ONNX_COMPLEX128 = 15, SINGA_ONNX_BFLOAT16 = 16,
  /* ABI 1.2: ONNX's newer element types (docs/abi.md, "Float8, 4-bit and
   * 2-bit element types"). 21, 22, 23, 25 and 26 are packed: two 4-bit or
   * four 2-bit elements per byte, the first in the lowest bits. */
  SINGA_ONNX_FLOAT8E4M3FN = 17, SINGA_ONNX_FLOAT8E4M3FNUZ = 18,
  SINGA_ONNX_FLOAT8E5M2 = 19, SINGA_ONNX_FLOAT8E5M2FNUZ = 20,
  SINGA_ONNX_UINT4 = 21, SINGA_ONNX_INT4 = 22, SINGA_ONNX_FLOAT4E2M1 = 23,
  SINGA_ONNX_FLOAT8E8M0 = 24, SINGA_ONNX_UINT2 = 25, SINGA_ONNX_INT2 = 26
} singa_onnx_dtype;

/* 0 for codes outside 0..63 (an unknown element type matches no mask). */
#define SINGA_DTYPE_BIT(onnx_dtype) \
  ((onnx_dtype) >= 0 && (onnx_dtype) < 64 ? UINT64_C(1) << (onnx_dtype) : UINT64_C(0))
#define SINGA_MAX_DIMS 16

/* Shape and element type of a value as known at prepare time.
 * ndim < 0: rank unknown. dims[i] < 0: that dimension unknown. */
typedef struct singa_value_info {
  size_t struct_size;
  int32_t onnx_dtype; /* singa_onnx_dtype, 0 when unknown */
  int32_t ndim;
  int64_t dims[SINGA_MAX_DIMS];
} singa_value_info;

/* ------------------------------------------------------ opaque handles */

typedef struct singa_node singa_node;                 /* a graph node, at create time */
typedef struct singa_kernel_context singa_kernel_context; /* one compute call */
typedef struct singa_plugin_handle singa_plugin_handle;   /* the plugin being loaded */

typedef void (*singa_parallel_fn)(void* user, int64_t begin, int64_t end);

typedef enum singa_copy_kind {
  SINGA_COPY_HOST_TO_DEVICE = 0,
  SINGA_COPY_DEVICE_TO_HOST = 1,
  SINGA_COPY_DEVICE_TO_DEVICE = 2
} singa_copy_kind;

typedef enum singa_log_level {
  SINGA_LOG_DEBUG = 0, SINGA_LOG_INFO = 1, SINGA_LOG_WARNING = 2, SINGA_LOG_ERROR = 3
} singa_log_level;

/* ---------------------------------------------------------- device API */

/* A device type registered by a device plugin. `self` is passed back to every
 * callback. Optional callbacks may be NULL. */
typedef struct singa_device_def {
  size_t struct_size;
  const char* name;        /* "cpu", "cuda", "opencl", ...: what --device names */
  int32_t dl_device_type;  /* DLDeviceType of tensors it holds */
  int32_t score;           /* highest score wins when several plugins register a name */
  void* self;

  /* Number of usable device ids. A device whose runtime is missing returns a
   * status with code SINGA_UNAVAILABLE and a reason (no driver, no GPU...). */
  singa_status* (*device_count)(void* self, int32_t* count);
  singa_status* (*alloc)(void* self, int32_t device_id, size_t bytes, size_t alignment, void** out);
  void (*free)(void* self, int32_t device_id, void* ptr);
  /* `stream` may be NULL (the default stream); copies on a NULL stream are synchronous. */
  singa_status* (*copy)(void* self, int32_t device_id, void* dst, size_t dst_offset,
                        const void* src, size_t src_offset, size_t bytes,
                        singa_copy_kind kind, void* stream);
  singa_status* (*memset)(void* self, int32_t device_id, void* ptr, size_t offset, int value,
                          size_t bytes, void* stream);
  singa_status* (*synchronize)(void* self, int32_t device_id, void* stream);
  /* optional: */
  singa_status* (*stream_create)(void* self, int32_t device_id, void** stream);
  void (*stream_destroy)(void* self, int32_t device_id, void* stream);
  singa_status* (*memory_info)(void* self, int32_t device_id, size_t* free_bytes, size_t* total_bytes);
  /* Host-addressable devices (the CPU) may offer an intra-op thread pool.
   * Calls fn(user, b, e) over disjoint ranges covering [0, n); returns when all
   * are done. `grain` is the smallest useful range. */
  void (*parallel_for)(void* self, int64_t n, int64_t grain, singa_parallel_fn fn, void* user);
  int32_t (*num_threads)(void* self);
  void (*set_num_threads)(void* self, int32_t n);
} singa_device_def;

/* ---------------------------------------------------------- kernel API */

/* A type constraint such as ONNX's "T": the element type seen at `index`
 * (input index >= 0, or output -1-k for output k) must be one of `dtypes`
 * (a mask of SINGA_DTYPE_BIT(singa_onnx_dtype)). */
typedef struct singa_type_constraint {
  const char* name;
  int32_t index;
  uint64_t dtypes;
} singa_type_constraint;

enum {
  /* Output 0 may share input 0's buffer (same shape and dtype) when input 0
   * has no other reader: the kernel reads each element before writing it. */
  SINGA_KERNEL_MAY_INPLACE = 1u << 0,
  /* Outputs are not a pure function of the inputs (random ops): no folding. */
  SINGA_KERNEL_NONDETERMINISTIC = 1u << 1,
  /* Kernel reads input data on the host even on another device (shape ops):
   * listed inputs stay on the CPU. See cpu_inputs_mask. */
  SINGA_KERNEL_HOST_INPUTS = 1u << 2
};

/* Room for training. Either a backward kernel (compute-like: its context's
 * inputs are the forward inputs, then the forward outputs, then the gradients
 * of the outputs, absent ones NULL; its outputs are the gradients of the
 * forward inputs, in order) or a builder that emits backward nodes made of
 * other registered ops. Both optional. */
typedef struct singa_gradient_def {
  size_t struct_size;
  singa_status* (*backward)(void* state, singa_kernel_context* ctx);
} singa_gradient_def;

/* ABI 1.2. An end_version that means "until the op's next version": the host
 * keeps a table of every ONNX op's since-versions, so a kernel registered for
 * version N serves every later opset in which the op is unchanged. An explicit
 * end_version E likewise serves on until the op's first version after E
 * (E names the opset the kernel was written against, not a cap). For ops the
 * table does not know (custom domains) the range is taken literally and
 * SINGA_VERSION_OPEN means every later opset. */
#define SINGA_VERSION_OPEN INT32_MAX

typedef struct singa_kernel_def {
  size_t struct_size;
  const char* domain;      /* "" or "ai.onnx" for the default domain */
  const char* op_type;
  int32_t since_version;   /* inclusive opset range this kernel implements */
  int32_t end_version;     /* or SINGA_VERSION_OPEN; see below */
  const char* device;      /* a registered device name */
  const singa_type_constraint* constraints;
  size_t num_constraints;
  uint32_t flags;
  void* user;              /* passed to create and infer */

  /* Called once per node at prepare time: read attributes here, pre-pack
   * constant weights, reject what the kernel cannot do. `*state` is given to
   * compute and destroy. compute may run concurrently from several threads on
   * the same state: treat state as read-only in compute. */
  singa_status* (*create)(void* user, const singa_node* node, void** state);
  singa_status* (*compute)(void* state, singa_kernel_context* ctx);
  void (*destroy)(void* state);

  /* Optional output shape/type inference for ops ONNX has no schema for.
   * `in` and `out` are arrays of num_inputs / num_outputs. */
  singa_status* (*infer)(void* user, const singa_node* node, const singa_value_info* in,
                         size_t num_inputs, singa_value_info* out, size_t num_outputs);
  const singa_gradient_def* gradient; /* optional */
  /* With SINGA_KERNEL_HOST_INPUTS: bit i set = input i is read on the host. */
  uint64_t cpu_inputs_mask;
} singa_kernel_def;

/* ------------------------------------------------------------ host API */

typedef struct singa_host_api {
  size_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;

  /* status */
  singa_status* (*status_new)(singa_code code, const char* message);
  singa_code (*status_code)(const singa_status* status);
  const char* (*status_message)(const singa_status* status);
  void (*status_free)(singa_status* status);
  void (*log)(singa_log_level level, const char* message);

  /* registration, only during singa_plugin_init */
  singa_status* (*register_device)(singa_plugin_handle* plugin, const singa_device_def* def);
  singa_status* (*register_kernel)(singa_plugin_handle* plugin, const singa_kernel_def* def);

  /* node, at create/infer time. Attribute getters return 1 when present. */
  const char* (*node_name)(const singa_node* node);
  const char* (*node_op_type)(const singa_node* node);
  const char* (*node_domain)(const singa_node* node);
  int64_t (*node_opset)(const singa_node* node); /* model's opset for the node's domain */
  size_t (*node_num_inputs)(const singa_node* node);
  size_t (*node_num_outputs)(const singa_node* node);
  /* 0 when input i is absent (optional input left empty) */
  int32_t (*node_input_info)(const singa_node* node, size_t i, singa_value_info* out);
  int32_t (*node_output_info)(const singa_node* node, size_t i, singa_value_info* out);
  /* Constant input (initializer or folded constant) on the host, or NULL. */
  const DLTensor* (*node_input_constant)(const singa_node* node, size_t i);
  int32_t (*node_attr_int)(const singa_node* node, const char* name, int64_t* out);
  int32_t (*node_attr_float)(const singa_node* node, const char* name, float* out);
  int32_t (*node_attr_string)(const singa_node* node, const char* name, const char** data, size_t* len);
  int32_t (*node_attr_ints)(const singa_node* node, const char* name, const int64_t** data, size_t* n);
  int32_t (*node_attr_floats)(const singa_node* node, const char* name, const float** data, size_t* n);
  int32_t (*node_attr_num_strings)(const singa_node* node, const char* name, size_t* n);
  int32_t (*node_attr_string_at)(const singa_node* node, const char* name, size_t i, const char** data, size_t* len);
  int32_t (*node_attr_tensor)(const singa_node* node, const char* name, const DLTensor** out);

  /* kernel context, during compute */
  size_t (*ctx_num_inputs)(singa_kernel_context* ctx);
  const DLTensor* (*ctx_input)(singa_kernel_context* ctx, size_t i); /* NULL when absent */
  size_t (*ctx_num_outputs)(singa_kernel_context* ctx);
  /* Allocates output i on the node's device (or reuses input 0 in place). */
  singa_status* (*ctx_output)(singa_kernel_context* ctx, size_t i, int32_t ndim, const int64_t* shape,
                              DLDataType dtype, DLTensor** out);
  /* Scratch memory on the node's device, valid until compute returns. */
  singa_status* (*ctx_workspace)(singa_kernel_context* ctx, size_t bytes, void** out);
  void* (*ctx_stream)(singa_kernel_context* ctx);
  /* The CPU device's intra-op pool (serial when none). */
  void (*ctx_parallel_for)(singa_kernel_context* ctx, int64_t n, int64_t grain, singa_parallel_fn fn, void* user);
  int32_t (*ctx_num_threads)(singa_kernel_context* ctx);
  const char* (*ctx_node_name)(singa_kernel_context* ctx);

  /* ABI 1.1. String tensors (SINGA_ONNX_STRING): element i of the data is a
   * NUL-terminated `const char*` owned by the tensor; kernels read inputs
   * directly. New text goes into an allocated string output through this call
   * (copied). Element pointers copied from an input tensor are also fine: the
   * host copies their text when compute returns. Check SINGA_HAS_FIELD first. */
  singa_status* (*ctx_set_string)(singa_kernel_context* ctx, size_t output, int64_t element, const char* data, size_t len);
} singa_host_api;

/* ---------------------------------------------------------- the plugin */

/* Filled by singa_plugin_init. The host sets struct_size (its own size) and
 * handle before the call; the plugin sets the rest (within struct_size). */
typedef struct singa_plugin {
  size_t struct_size;
  singa_plugin_handle* handle;
  uint32_t abi_major;        /* what the plugin was built with */
  uint32_t abi_minor;
  const char* name;          /* static storage */
  const char* version;
  const char* description;
  void (*shutdown)(void);    /* optional, called before unload */
} singa_plugin;

/* The one exported symbol. Register devices and kernels through host and
 * plugin->handle; a non-NULL status means the plugin is not usable and
 * everything it registered is discarded. */
typedef singa_status* (*singa_plugin_init_fn)(const singa_host_api* host, singa_plugin* plugin);
#define SINGA_PLUGIN_INIT_SYMBOL "singa_plugin_init"

#ifdef __cplusplus
}
#endif
#endif /* SINGA_ABI_H */
