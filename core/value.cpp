#include <singa/value.hpp>

namespace singa {

std::string Value::describe() const {
  switch (kind_) {
    case Kind::kTensor: return std::string("a tensor(") + dtype_name(tensor_.dtype()) + ") " + shape_to_string(tensor_.shape());
    case Kind::kSequence: return "a sequence of " + std::to_string(elements().size()) + " values";
    case Kind::kMap: return "a map of " + std::to_string(tensor_.numel()) + " entries";
    default: return "an empty optional";
  }
}

}  // namespace singa
