#include "client/json_fields.h"

#include <cmath>
#include <cstdlib>

namespace cairn::client {

using nlohmann::json;

std::string JsonStr(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

int64_t JsonInt(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_string()) return std::strtoll(it->get<std::string>().c_str(), nullptr, 10);
  return 0;
}

double JsonNumber(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return 0;
  if (it->is_number()) return it->get<double>();
  if (it->is_string()) {  // "NaN", "Infinity", "-Infinity"
    const std::string s = it->get<std::string>();
    if (s == "NaN") return std::nan("");
    if (s == "Infinity") return INFINITY;
    if (s == "-Infinity") return -INFINITY;
    return std::strtod(s.c_str(), nullptr);
  }
  return 0;
}

std::string JsonObjectText(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_object() && !it->empty() ? it->dump() : "";
}

std::vector<std::string> JsonStrings(const json& j, const char* key) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return out;
  for (const json& s : *it) {
    if (s.is_string()) out.push_back(s.get<std::string>());
  }
  return out;
}

}  // namespace cairn::client
