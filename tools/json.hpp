// json.hpp - just enough JSON writing for --json output (one object per line).
#ifndef SINGA_TOOLS_JSON_HPP
#define SINGA_TOOLS_JSON_HPP

#include <cstdint>
#include <string>
#include <vector>

namespace singa {
namespace cli {

std::string json_quote(const std::string& s);
// Non-finite numbers have no JSON form: they become null.
std::string json_number(double v);
// Items are JSON texts already.
std::string json_array(const std::vector<std::string>& items);
std::string json_string_array(const std::vector<std::string>& items);
std::string json_int_array(const std::vector<int64_t>& items);

// Builds one object; keys keep insertion order.
class JsonObject {
 public:
  JsonObject& raw(const std::string& key, const std::string& json);
  JsonObject& str(const std::string& key, const std::string& value) { return raw(key, json_quote(value)); }
  JsonObject& num(const std::string& key, double value) { return raw(key, json_number(value)); }
  JsonObject& integer(const std::string& key, int64_t value) { return raw(key, std::to_string(value)); }
  JsonObject& boolean(const std::string& key, bool value) { return raw(key, value ? "true" : "false"); }
  std::string dump() const { return "{" + body_ + "}"; }

 private:
  std::string body_;
};

}  // namespace cli
}  // namespace singa
#endif
