// checkpoint.hpp - named tensors plus string metadata in one file, for
// resumable training (parameters, running statistics, optimizer state).
#ifndef SINGA_CHECKPOINT_HPP
#define SINGA_CHECKPOINT_HPP

#include <singa/tensor.hpp>

#include <map>
#include <string>

namespace singa {

struct Checkpoint {
  std::map<std::string, std::string> meta;
  std::map<std::string, Tensor> tensors;
};

// Writes to PATH.tmp, then renames over PATH, so an interrupted save never
// leaves a torn checkpoint.
void save_checkpoint(const Checkpoint& c, const std::string& path);
// Errors name the file (missing, truncated, not a checkpoint).
Checkpoint load_checkpoint(const std::string& path);

}  // namespace singa
#endif
