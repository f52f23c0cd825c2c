// register.hpp - each source file of the ops_string pack registers its kernels.
#ifndef SINGA_OPS_STRING_REGISTER_HPP
#define SINGA_OPS_STRING_REGISTER_HPP

#include <singa/kernel.hpp>

namespace singa {
namespace text {

void register_tfidf_vectorizer(sdk::Registrar& reg);
void register_string_concat(sdk::Registrar& reg);
void register_string_split(sdk::Registrar& reg);
#ifdef SINGA_HAVE_RE2
void register_regex_full_match(sdk::Registrar& reg);
#endif

}  // namespace text
}  // namespace singa

#endif
