// error.hpp - the one exception type of the C++ API.
#ifndef SINGA_ERROR_HPP
#define SINGA_ERROR_HPP

#include <singa/singa_abi.h>

#include <stdexcept>
#include <string>

namespace singa {

// Every failure of the C++ API is an Error whose message names the file,
// node, op or value involved. code() is the ABI's status code.
class Error : public std::runtime_error {
 public:
  Error(singa_code code, const std::string& message) : std::runtime_error(message), code_(code) {}
  singa_code code() const { return code_; }

 private:
  singa_code code_;
};

const char* code_name(singa_code code);

}  // namespace singa
#endif
