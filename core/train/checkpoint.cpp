// A checkpoint is stored as an ONNX ModelProto whose graph holds only
// initializers: the tensor codec and the size checks already exist for it.
#include <singa/checkpoint.hpp>
#include <singa/error.hpp>
#include <singa/onnx.hpp>

#include <onnx/onnx_pb.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace singa {

namespace {
constexpr const char* kMagicKey = "singa.checkpoint";
}

void save_checkpoint(const Checkpoint& c, const std::string& path) {
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("singa");
  auto* magic = m.add_metadata_props();
  magic->set_key(kMagicKey);
  magic->set_value("1");
  for (const auto& [k, v] : c.meta) {
    auto* p = m.add_metadata_props();
    p->set_key(k);
    p->set_value(v);
  }
  auto* g = m.mutable_graph();
  g->set_name("checkpoint");
  for (const auto& [name, t] : c.tensors) *g->add_initializer() = onnx::to_proto(t.to_host(), name);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f || !m.SerializeToOstream(&f) || !f.flush())
      throw Error(SINGA_INVALID_ARGUMENT, "cannot write checkpoint '" + tmp + "'");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw Error(SINGA_INVALID_ARGUMENT, "cannot move checkpoint '" + tmp + "' to '" + path + "'");
}

Checkpoint load_checkpoint(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(SINGA_NOT_FOUND, "cannot open checkpoint '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  ::onnx::ModelProto m;
  if (!m.ParseFromString(ss.str())) throw Error(SINGA_INVALID_ARGUMENT, "'" + path + "' is truncated or not a checkpoint");
  Checkpoint c;
  bool magic = false;
  for (const auto& p : m.metadata_props()) {
    if (p.key() == kMagicKey)
      magic = true;
    else
      c.meta[p.key()] = p.value();
  }
  if (!magic) throw Error(SINGA_INVALID_ARGUMENT, "'" + path + "' is not a singa checkpoint");
  for (const auto& t : m.graph().initializer()) {
    try {
      c.tensors[t.name()] = onnx::from_proto(t);
    } catch (const std::exception& e) {
      throw Error(SINGA_INVALID_ARGUMENT, "'" + path + "': tensor '" + t.name() + "': " + e.what());
    }
  }
  return c;
}

}  // namespace singa
