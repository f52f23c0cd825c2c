// ZipMap (ai.onnx.ml): one map per row of scores, from the class labels to
// that row's values: what skl2onnx puts after every classifier by default.
// The core runs it because plugin kernels only produce tensors.
#include "attrs.hpp"
#include "core_op.hpp"

namespace singa {
namespace control {

namespace {

class ZipMapOp : public CoreOp {
 public:
  ZipMapOp(const graph::Graph& g, const graph::Node& node) : where_(g.source + ": " + node.label) {
    for (const auto& a : node.proto.attribute()) {
      if (a.name() == "classlabels_int64s") ints_.assign(a.ints().begin(), a.ints().end());
      if (a.name() == "classlabels_strings") strings_.assign(a.strings().begin(), a.strings().end());
    }
    if (ints_.empty() == strings_.empty())
      throw Error(SINGA_INVALID_ARGUMENT, where_ + ": exactly one of classlabels_int64s and classlabels_strings must be given");
  }

  void run(CoreCall& c) const override {
    if (c.inputs.empty() || !c.inputs[0] || !c.inputs[0]->is_tensor())
      throw Error(SINGA_INVALID_ARGUMENT, where_ + ": input X must be a tensor");
    Tensor x = c.inputs[0]->tensor().to_host();
    if (x.dtype() != SINGA_ONNX_FLOAT) throw Error(SINGA_INVALID_ARGUMENT, where_ + ": X must be float, got " + dtype_name(x.dtype()));
    int64_t labels = int64_t(strings_.empty() ? ints_.size() : strings_.size());
    int64_t rows = x.ndim() == 1 ? 1 : x.ndim() == 2 ? x.shape()[0] : -1;
    if (rows < 0 || x.shape().back() != labels)
      throw Error(SINGA_INVALID_ARGUMENT, where_ + ": X has shape " + shape_to_string(x.shape()) + ", expected [N, " +
                                              std::to_string(labels) + "] for " + std::to_string(labels) + " class labels");
    Tensor keys = strings_.empty() ? Tensor::from_vector<int64_t>({labels}, SINGA_ONNX_INT64, ints_)
                                   : Tensor::from_strings({labels}, strings_);
    std::vector<Value> maps;
    maps.reserve(size_t(rows));
    for (int64_t r = 0; r < rows; ++r) {
      Tensor row({labels}, SINGA_ONNX_FLOAT);
      std::copy(x.data<float>() + r * labels, x.data<float>() + (r + 1) * labels, row.data<float>());
      maps.push_back(Value::map(keys, row));  // the keys are shared, never written
    }
    c.outputs.at(0) = Value::sequence_of(std::move(maps));
  }

 private:
  std::string where_;
  std::vector<int64_t> ints_;
  std::vector<std::string> strings_;
};

}  // namespace

std::unique_ptr<CoreOp> make_zip_map(const graph::Graph& g, const graph::Node& node) {
  return std::make_unique<ZipMapOp>(g, node);
}

}  // namespace control
}  // namespace singa
