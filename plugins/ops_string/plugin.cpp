// plugin.cpp - the ops_string pack: text-processing ops on the CPU.
#include "register.hpp"

SINGA_PLUGIN("ops_string", "0.1.0", "text-processing ops: TfIdfVectorizer over integer tokens (CPU)") {
  singa::text::register_tfidf_vectorizer(reg);
}
