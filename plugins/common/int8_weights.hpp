// int8_weights.hpp - adds recovered 8-bit weights (int8_lattice.hpp) to a
// graph as the constants the int8 fusions' nodes read: the s8 values, a
// float scale per channel and an s8 zero point per channel.
#ifndef SINGA_PLUGINS_COMMON_INT8_WEIGHTS_HPP
#define SINGA_PLUGINS_COMMON_INT8_WEIGHTS_HPP

#include "int8_lattice.hpp"

#include <singa/graph_pass.hpp>

#include <string>
#include <vector>

namespace singa {
namespace int8 {

// A DLTensor over host memory that the caller keeps alive while the graph
// copies it (add_constant copies).
inline DLTensor host_tensor(void* data, std::vector<int64_t>& shape, DLDataType type) {
  DLTensor t{};
  t.data = data;
  t.device = {kDLCPU, 0};
  t.ndim = int32_t(shape.size());
  t.dtype = type;
  t.shape = shape.data();
  return t;
}

// The values of an 8-bit tensor t (u8 or s8) as int32 in out[0, numel),
// read with one type dispatch: a per-element Tensor::int_at cost more than
// the rest of a QDQ ResNet-50's prepare.
inline void widen_8bit(const sdk::Tensor& t, int32_t* out) {
  const int64_t n = t.numel();
  if (t.dtype() == SINGA_ONNX_UINT8) {
    const uint8_t* p = t.data<uint8_t>();
    for (int64_t i = 0; i < n; ++i) out[i] = int32_t(p[i]);
  } else {
    const int8_t* p = t.data<int8_t>();
    for (int64_t i = 0; i < n; ++i) out[i] = int32_t(p[i]);
  }
}

// Adds w as s8 of `shape` (its q laid out as w.view, in that shape), its
// scales [channels] and zero points [channels], named after `hint`; names
// gets {values, scale, zero point}. The zero point is left out ("") when
// every channel fits s8 as it is, unless `keep_zero_point`. False (nothing
// added) when a channel spans more than 256 values.
inline bool add_s8_weights(sdk::Graph& g, const std::string& hint, const ChannelInts& w, std::vector<int64_t> shape,
                           bool keep_zero_point, std::vector<std::string>& names) {
  std::vector<int8_t> stored, zp;
  if (!fit_s8(w, stored, zp)) return false;
  std::vector<int64_t> n{w.view.channels};
  std::vector<float> scale = w.scale;
  names.push_back(g.add_constant(hint + "_q8", host_tensor(stored.data(), shape, {kDLInt, 8, 1})));
  names.push_back(g.add_constant(hint + "_scale", host_tensor(scale.data(), n, {kDLFloat, 32, 1})));
  const bool with_zp = keep_zero_point || any_zero_point(zp);
  names.push_back(with_zp ? g.add_constant(hint + "_zp", host_tensor(zp.data(), n, {kDLInt, 8, 1})) : std::string());
  return true;
}

}  // namespace int8
}  // namespace singa
#endif
