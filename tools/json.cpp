#include "json.hpp"

#include <cmath>
#include <cstdio>

namespace singa {
namespace cli {

std::string json_quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += char(c);
        }
    }
  }
  return out + "\"";
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string json_array(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + items[i];
  return out + "]";
}

std::string json_string_array(const std::vector<std::string>& items) {
  std::vector<std::string> q;
  for (const auto& s : items) q.push_back(json_quote(s));
  return json_array(q);
}

std::string json_int_array(const std::vector<int64_t>& items) {
  std::vector<std::string> q;
  for (int64_t v : items) q.push_back(std::to_string(v));
  return json_array(q);
}

JsonObject& JsonObject::raw(const std::string& key, const std::string& json) {
  if (!body_.empty()) body_ += ",";
  body_ += json_quote(key) + ":" + json;
  return *this;
}

}  // namespace cli
}  // namespace singa
