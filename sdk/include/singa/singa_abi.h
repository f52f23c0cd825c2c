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
#define SINGA_ABI_MINOR 4

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
  /* ABI 1.4: optional capabilities of the device (singa_event_ext). The chain
   * must stay valid until the plugin's shutdown. */
  const struct singa_extension* extensions;
} singa_device_def;

/* ------------------------------------------- typed extensions (ABI 1.3) */

/* Optional capabilities hang off chains of typed structs, as PJRT's do. Each
 * starts with singa_extension: its own struct_size, a type and the next link.
 * A reader walks the chain, skips types it does not know and reads a known
 * one only within its struct_size, so either side may be older. */
typedef enum singa_extension_type {
  SINGA_EXTENSION_GRAPH_PASS = 1, /* singa_graph_pass_ext, on singa_plugin.extensions */
  SINGA_EXTENSION_GRADIENT = 2,   /* singa_gradient_ext, on singa_kernel_def.extensions */
  SINGA_EXTENSION_LAYOUT = 3,     /* ABI 1.4: singa_layout_ext, on singa_kernel_def.extensions */
  SINGA_EXTENSION_EVENTS = 4      /* ABI 1.4: singa_event_ext, on singa_device_def.extensions */
} singa_extension_type;

typedef struct singa_extension {
  size_t struct_size; /* of the whole extension struct that embeds this header */
  int32_t type;       /* singa_extension_type */
  const struct singa_extension* next;
} singa_extension;

/* SINGA_HAS_FIELD for an extension struct (its size is in base.struct_size). */
#define SINGA_EXTENSION_HAS_FIELD(ptr, type, field) \
  ((ptr) != NULL && (ptr)->base.struct_size >= offsetof(type, field) + sizeof(((type*)0)->field))

typedef struct singa_graph singa_graph;               /* a graph during a graph pass */
typedef struct singa_grad_builder singa_grad_builder; /* one backward, being built */

/* Attributes of a node a plugin writes (graph passes, gradient builders). */
typedef enum singa_attr_type {
  SINGA_ATTR_INT = 1, SINGA_ATTR_FLOAT = 2, SINGA_ATTR_STRING = 3,
  SINGA_ATTR_INTS = 4, SINGA_ATTR_FLOATS = 5, SINGA_ATTR_TENSOR = 6
} singa_attr_type;

typedef struct singa_attr {
  size_t struct_size;
  const char* name;
  int32_t type;            /* singa_attr_type */
  int64_t i;               /* INT */
  float f;                 /* FLOAT */
  const char* s;           /* STRING (s_len bytes) */
  size_t s_len;
  const int64_t* ints;     /* INTS (count) */
  const float* floats;     /* FLOATS (count) */
  size_t count;
  const DLTensor* tensor;  /* TENSOR, on the host; copied */
} singa_attr;

/* A node a plugin asks the host to insert. Values are named: existing values
 * by their names, new ones by names the plugin chooses (the host makes them
 * unique in a graph pass and reports nothing back: use the outputs' names
 * only within the same call). "" is an absent optional input or output. */
typedef struct singa_node_spec {
  size_t struct_size;
  const char* name;        /* NULL: derived from the first node it replaces */
  const char* domain;      /* "" for the default ONNX domain */
  const char* op_type;
  int64_t opset;           /* 0: the graph's opset for domain (1 where it has none) */
  const char* const* inputs;
  size_t num_inputs;
  const char* const* outputs;
  size_t num_outputs;
  const singa_node* attrs_from; /* NULL, or a node whose attributes are copied first */
  const singa_attr* attrs;      /* then these, replacing same-named ones */
  size_t num_attrs;
} singa_node_spec;

/* A graph pass: how a device plugin or an op pack optimizes the graph it
 * will run. The host calls `run` once per prepare, after its own
 * device-neutral passes (folding, dead nodes, shape simplification,
 * Conv+BatchNorm, MatMul+Add), when the graph is prepared for `device`. The
 * pass reads the graph and replaces the node groups it claims with ops of its
 * own domain (host->graph_replace), for which it registers kernels. A pass
 * whose name is switched off by the named option "pass.NAME=0" is not run.
 * Quantized weights: the host keeps a DequantizeLinear of constant weights
 * as written for the passes of priority SINGA_PASS_PRIORITY_QUANTIZED and
 * above (so they can claim the integer weights), and folds those left into
 * float constants before the first pass below it. */
#define SINGA_PASS_PRIORITY_QUANTIZED 1350
typedef struct singa_graph_pass_ext {
  singa_extension base;    /* type SINGA_EXTENSION_GRAPH_PASS */
  const char* name;        /* unique, e.g. "cpu.fusions": options, stats, errors */
  const char* device;      /* the device it optimizes for ("" = every device) */
  int32_t priority;        /* higher runs first among passes for one device */
  void* self;
  /* Sets *rewrites to the number of rewrites made. A non-NULL status fails
   * prepare, naming the pass. */
  singa_status* (*run)(void* self, singa_graph* graph, int32_t* rewrites);
} singa_graph_pass_ext;

/* A builder of backward nodes: the second form of an op's gradient (the
 * first is singa_gradient_def's backward kernel). `build` reads the forward
 * node through the builder (host->grad_*), emits backward nodes made of
 * registered ops, and names the value that holds each needed input's
 * gradient. Autograd finds an op's gradient only through these two hooks. */
typedef struct singa_gradient_ext {
  singa_extension base;    /* type SINGA_EXTENSION_GRADIENT */
  void* user;
  singa_status* (*build)(void* user, const singa_node* node, singa_grad_builder* builder);
} singa_gradient_ext;

/* ABI 1.4. Layouts. A value's shape is always its logical (ONNX) shape; its
 * layout names how the elements lie in memory. "" is plain: dense and
 * row-major in that shape, the only layout a kernel sees unless it declares
 * more. Other layouts are named by the plugin that defines them, prefixed
 * with its domain ("ai.singa.cpu.nChw16c"). A graph pass sets the layout of
 * a value its own nodes write (host->graph_set_layout) and inserts the
 * reorders as explicit nodes of its domain. The host refuses a graph in
 * which a kernel reads or writes a value in a layout that kernel did not
 * declare; a non-plain value never leaves its device, is never a graph
 * output, and never reaches the user (all_outputs and last_layers run the
 * plain graph). */
typedef struct singa_layout_accept {
  int32_t index;           /* input i >= 0, or output k as -1-k (as in singa_type_constraint) */
  const char* layout;      /* a layout it reads or writes there, besides plain */
} singa_layout_accept;

typedef struct singa_layout_ext {
  singa_extension base;    /* type SINGA_EXTENSION_LAYOUT */
  const singa_layout_accept* accepts;
  size_t num_accepts;
} singa_layout_ext;

/* ABI 1.4. Events, for devices with streams: the host orders work across
 * streams and devices without blocking (record on the producer's stream,
 * wait on the consumer's) where a device offers them, and falls back to
 * synchronize where it does not. */
typedef struct singa_event_ext {
  singa_extension base;    /* type SINGA_EXTENSION_EVENTS */
  singa_status* (*event_create)(void* self, int32_t device_id, void** event);
  void (*event_destroy)(void* self, int32_t device_id, void* event);
  /* Marks the point `stream` has reached with the work queued on it so far. */
  singa_status* (*event_record)(void* self, int32_t device_id, void* event, void* stream);
  /* Work queued on `stream` after this call starts only once the event is reached. */
  singa_status* (*stream_wait_event)(void* self, int32_t device_id, void* stream, void* event);
  /* Blocks the calling thread until the event is reached. */
  singa_status* (*event_synchronize)(void* self, int32_t device_id, void* event);
} singa_event_ext;

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
  /* ABI 1.3: optional capabilities of this kernel (singa_gradient_ext). */
  const singa_extension* extensions;
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

  /* ABI 1.3. Value names of a node's inputs and outputs ("" when absent):
   * at create time and in graph passes. */
  const char* (*node_input_name)(const singa_node* node, size_t i);
  const char* (*node_output_name)(const singa_node* node, size_t i);
  /* A named option of the prepare (PrepareOptions::options, the config file,
   * --option key=value), or NULL when not set. At create time and in passes. */
  const char* (*node_option)(const singa_node* node, const char* key);

  /* ABI 1.3. Graphs, during a graph pass. Nodes are in topological order; a
   * node handle stays valid until that node is replaced. Node handles answer
   * every node_* call above. */
  size_t (*graph_num_nodes)(const singa_graph* graph);
  const singa_node* (*graph_node)(const singa_graph* graph, size_t i);
  const char* (*graph_device)(const singa_graph* graph); /* the device prepared for */
  const char* (*graph_option)(const singa_graph* graph, const char* key);
  /* The node producing `value`, or NULL (graph input, constant, unknown). */
  const singa_node* (*graph_producer)(const singa_graph* graph, const char* value);
  /* The nodes reading `value` (a node reading it twice is listed once). */
  size_t (*graph_num_consumers)(const singa_graph* graph, const char* value);
  const singa_node* (*graph_consumer)(const singa_graph* graph, const char* value, size_t i);
  /* 1 when `value` is an output of the graph (callers outside read it). */
  int32_t (*graph_is_output)(const singa_graph* graph, const char* value);
  /* 1 when `value` is known, filling its type and shape. */
  int32_t (*graph_value_info)(const singa_graph* graph, const char* value, singa_value_info* out);
  /* A constant value (initializer or folded) on the host, or NULL. */
  const DLTensor* (*graph_constant)(const singa_graph* graph, const char* value);
  /* Adds a constant (copied) under a new unique name derived from `hint`;
   * the name is written to `name` (capacity `cap`, NUL-terminated). */
  singa_status* (*graph_add_constant)(singa_graph* graph, const char* hint, const DLTensor* value, char* name,
                                      size_t cap);
  /* Replaces `nodes` with `specs`, in one step. Every output of the replaced
   * nodes that something else reads (another node, the graph's outputs) must
   * be an output of a spec; the host re-sorts the graph, checks that each
   * new node has a kernel on some loaded device, and refuses the edit (a
   * status, the graph unchanged) otherwise. */
  singa_status* (*graph_replace)(singa_graph* graph, const singa_node* const* nodes, size_t num_nodes,
                                 const singa_node_spec* specs, size_t num_specs);
  /* 1 when a kernel for op_type/domain at `opset` is registered for `device`
   * ("" = any device): a pass rewrites to a standard op only where one runs. */
  int32_t (*graph_has_kernel)(const singa_graph* graph, const char* domain, const char* op_type, int64_t opset,
                              const char* device);

  /* ABI 1.3. Gradient builders (singa_gradient_ext). The forward node's
   * values are named: grad_input_name(b, i) (input i, "" when absent),
   * grad_output_name(b, i) (output i, "" when not kept) and
   * grad_output_grad_name(b, i) (the gradient reaching output i, "" when
   * none does). */
  const char* (*grad_input_name)(singa_grad_builder* builder, size_t i);
  const char* (*grad_output_name)(singa_grad_builder* builder, size_t i);
  const char* (*grad_output_grad_name)(singa_grad_builder* builder, size_t i);
  /* 1 when input i needs a gradient. */
  int32_t (*grad_input_needed)(singa_grad_builder* builder, size_t i);
  /* Shape and type of a named value of this backward. */
  int32_t (*grad_value_info)(singa_grad_builder* builder, const char* value, singa_value_info* out);
  /* Appends a backward node, run at once; its outputs become named values.
   * Here a spec's opset 0 means opset 17 for the default domain (autograd's
   * eager opset) and 1 for other domains, whatever the forward node's opset. */
  singa_status* (*grad_emit)(singa_grad_builder* builder, const singa_node_spec* spec);
  /* Names the value that is the gradient of input i. */
  singa_status* (*grad_set_input_grad)(singa_grad_builder* builder, size_t i, const char* value);

  /* ABI 1.4. Layouts (singa_layout_ext): the layout of a node's input or
   * output ("" plain), at create time and in graph passes. */
  const char* (*node_input_layout)(const singa_node* node, size_t i);
  const char* (*node_output_layout)(const singa_node* node, size_t i);
  /* In a graph pass: the layout of `value` from now on. Refused (a status,
   * nothing changed) for graph inputs, outputs and constants. */
  singa_status* (*graph_set_layout)(singa_graph* graph, const char* value, const char* layout);
  /* ABI 1.4. A named option of the runtime (LoadOptions::options, the config
   * file's [options], --option key=value, SINGA_OPTIONS), or NULL when not
   * set. Callable at any time, singa_plugin_init included: device-level
   * switches ("cpu.spin_us") are read here; prepare-level ones through
   * node_option, which sees these too. */
  const char* (*runtime_option)(const char* key);
} singa_host_api;

/* ------------------------------------------------------ struct sizes */

/* The size of a struct up to and including `last_field`: what struct_size
 * says for a writer that knew the struct up to that field (as PJRT does). */
#define SINGA_STRUCT_SIZE(type, last_field) (offsetof(type, last_field) + sizeof(((type*)0)->last_field))

#define SINGA_VALUE_INFO_STRUCT_SIZE SINGA_STRUCT_SIZE(singa_value_info, dims)
#define SINGA_DEVICE_DEF_STRUCT_SIZE SINGA_STRUCT_SIZE(singa_device_def, extensions)
#define SINGA_GRADIENT_DEF_STRUCT_SIZE SINGA_STRUCT_SIZE(singa_gradient_def, backward)
#define SINGA_KERNEL_DEF_STRUCT_SIZE SINGA_STRUCT_SIZE(singa_kernel_def, extensions)
#define SINGA_HOST_API_STRUCT_SIZE SINGA_STRUCT_SIZE(singa_host_api, runtime_option)
#define SINGA_EXTENSION_STRUCT_SIZE SINGA_STRUCT_SIZE(singa_extension, next)
#define SINGA_ATTR_STRUCT_SIZE SINGA_STRUCT_SIZE(singa_attr, tensor)
#define SINGA_NODE_SPEC_STRUCT_SIZE SINGA_STRUCT_SIZE(singa_node_spec, num_attrs)
#define SINGA_GRAPH_PASS_EXT_STRUCT_SIZE SINGA_STRUCT_SIZE(singa_graph_pass_ext, run)
#define SINGA_GRADIENT_EXT_STRUCT_SIZE SINGA_STRUCT_SIZE(singa_gradient_ext, build)
#define SINGA_LAYOUT_EXT_STRUCT_SIZE SINGA_STRUCT_SIZE(singa_layout_ext, num_accepts)
#define SINGA_EVENT_EXT_STRUCT_SIZE SINGA_STRUCT_SIZE(singa_event_ext, event_synchronize)

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
  /* ABI 1.3: optional capabilities of the plugin (singa_graph_pass_ext). The
   * chain must stay valid until shutdown. */
  const singa_extension* extensions;
} singa_plugin;

#define SINGA_PLUGIN_STRUCT_SIZE SINGA_STRUCT_SIZE(singa_plugin, extensions)

/* The one exported symbol. Register devices and kernels through host and
 * plugin->handle; a non-NULL status means the plugin is not usable and
 * everything it registered is discarded. */
typedef singa_status* (*singa_plugin_init_fn)(const singa_host_api* host, singa_plugin* plugin);
#define SINGA_PLUGIN_INIT_SYMBOL "singa_plugin_init"

#ifdef __cplusplus
}
#endif
#endif /* SINGA_ABI_H */
