// plugin.cpp - the ops_string pack: text-processing ops on the CPU.
#include "register.hpp"

SINGA_PLUGIN("ops_string", "0.2.0",
             "text-processing ops: TfIdfVectorizer, StringConcat, StringSplit, RegexFullMatch (RE2) (CPU)") {
  singa::text::register_tfidf_vectorizer(reg);
  singa::text::register_string_concat(reg);
  singa::text::register_string_split(reg);
#ifdef SINGA_HAVE_RE2
  singa::text::register_regex_full_match(reg);
#endif
}
