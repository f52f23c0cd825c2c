// frontend.hpp - the tape back to ONNX (SINGA's SingaFrontend / to_onnx): a
// model built with the layer and autograd API, or an imported one that was
// re-trained, is traced from its outputs back to its inputs and written as
// a ModelProto that other runtimes load.
#ifndef SINGA_FRONTEND_HPP
#define SINGA_FRONTEND_HPP

#include <singa/autograd.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace onnx {
class ModelProto;
}

namespace singa {
namespace onnx {

struct ExportOptions {
  int64_t opset = 17;          // of the default domain; 13 to 17
  bool dynamic_batch = true;   // dim 0 of the inputs (and of outputs sharing it) becomes "batch"
  std::string graph_name = "singa";
  // Names for the graph inputs and outputs (default: the Variables' names,
  // else input_<i> / output_<i>).
  std::vector<std::string> input_names, output_names;
  bool check = true;           // run onnx::checker and strict shape inference on the result
  // Names for initializers (e.g. a model's parameters() and buffers());
  // other leaves are named after their Variables.
  std::vector<std::pair<std::string, autograd::Variable>> initializer_names;
};

// Traces the ops recorded between `inputs` and `outputs`. Leaves that are not
// inputs become initializers. Training-only parts are written in inference
// form: BatchNormalization without training_mode, Dropout without its mask,
// unused optional outputs dropped. Throws an Error naming the op when a
// recorded op cannot be written at `opset` or the result fails the checker.
::onnx::ModelProto to_onnx(const std::vector<autograd::Variable>& inputs, const std::vector<autograd::Variable>& outputs,
                           const ExportOptions& options = {});
::onnx::ModelProto to_onnx(const std::vector<autograd::Variable>& inputs, const std::vector<autograd::Variable>& outputs,
                           int64_t opset);
// Writes a model file (binary protobuf).
void save_model(const ::onnx::ModelProto& model, const std::string& path);

}  // namespace onnx
}  // namespace singa
#endif
