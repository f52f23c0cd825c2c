// `singa export CHECKPOINT -o MODEL.onnx`: writes the model of a `singa
// train` checkpoint as ONNX through the frontend (to_onnx).
#include "cli.hpp"

#include <singa/runtime.hpp>

#include <iostream>

namespace singa {
namespace cli {

// cmd_train.cpp knows the architectures of its stages.
std::string export_checkpoint(const std::string& checkpoint, const std::string& out, int64_t opset);

namespace {

int cmd_export(const std::vector<std::string>& args) {
  CommandSpec spec{"export", "CHECKPOINT -o MODEL.onnx [options]",
                   "Rebuilds the model saved in a checkpoint of `singa train --checkpoint FILE` (any stage), traces it\n"
                   "in evaluation mode and writes it as an ONNX model with a dynamic batch dimension. The result passes\n"
                   "onnx::checker and strict shape inference."};
  po::options_description own("Options");
  own.add_options()
      ("output,o", po::value<std::string>()->value_name("FILE"), "the ONNX model to write (required)")
      ("opset", po::value<int64_t>()->value_name("N")->default_value(17), "opset of the default domain (13-17)");
  Parsed p = parse_command(spec, args, own, "checkpoint");
  if (p.help) {
    print_command_help(spec, own);
    return kExitOk;
  }
  if (!p.vm.count("checkpoint")) throw UsageError("export: a CHECKPOINT file is required");
  auto files = p.vm["checkpoint"].as<std::vector<std::string>>();
  if (files.size() != 1) throw UsageError("export: give exactly one CHECKPOINT");
  if (!p.vm.count("output")) throw UsageError("export: -o FILE is required");
  const int64_t opset = p.vm["opset"].as<int64_t>();
  if (opset < 13 || opset > 17) throw UsageError("--opset must be 13 to 17");
  load_runtime(p.global);
  const std::string out = p.vm["output"].as<std::string>();
  std::string what = export_checkpoint(files[0], out, opset);
  std::cout << "wrote " << out << " (" << what << ", opset " << opset << ")\n";
  return kExitOk;
}

}  // namespace

const CommandRegistrar kExport("export", cmd_export, "write the model of a `singa train` checkpoint as ONNX");

}  // namespace cli
}  // namespace singa
