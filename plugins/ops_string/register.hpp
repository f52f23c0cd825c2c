// register.hpp - each source file of the ops_string pack registers its kernels.
#ifndef SINGA_OPS_STRING_REGISTER_HPP
#define SINGA_OPS_STRING_REGISTER_HPP

#include <singa/kernel.hpp>

namespace singa {
namespace text {

void register_tfidf_vectorizer(sdk::Registrar& reg);

}  // namespace text
}  // namespace singa

#endif
