#include <singa/error.hpp>

namespace singa {

const char* code_name(singa_code code) {
  switch (code) {
    case SINGA_OK: return "ok";
    case SINGA_INVALID_ARGUMENT: return "invalid argument";
    case SINGA_NOT_FOUND: return "not found";
    case SINGA_UNIMPLEMENTED: return "unimplemented";
    case SINGA_OUT_OF_MEMORY: return "out of memory";
    case SINGA_UNAVAILABLE: return "unavailable";
    case SINGA_ABI_MISMATCH: return "ABI mismatch";
    case SINGA_INTERNAL: return "internal error";
  }
  return "unknown error";
}

}  // namespace singa
