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

nlohmann::json InputsJson(const std::vector<core::DatasetInput>& inputs) {
  nlohmann::json datasets = nlohmann::json::array();
  for (const core::DatasetInput& in : inputs) {
    nlohmann::json tags = nlohmann::json::array();
    for (const core::Tag& t : in.tags) tags.push_back({{"key", t.key}, {"value", t.value}});
    const core::Dataset& d = in.dataset;
    nlohmann::json dataset = {{"name", d.name},
                              {"digest", d.digest},
                              {"source_type", d.source_type},
                              {"source", d.source}};
    if (!d.schema.empty()) dataset["schema"] = d.schema;
    if (!d.profile.empty()) dataset["profile"] = d.profile;
    datasets.push_back({{"tags", tags}, {"dataset", dataset}});
  }
  return datasets;
}

std::vector<core::DatasetInput> DecodeInputs(const nlohmann::json& datasets) {
  std::vector<core::DatasetInput> out;
  if (!datasets.is_array()) return out;
  for (const nlohmann::json& item : datasets) {
    if (!item.is_object()) continue;
    core::DatasetInput in;
    for (const nlohmann::json& t : item.value("tags", nlohmann::json::array())) {
      if (t.is_object()) in.tags.push_back({t.value("key", ""), t.value("value", "")});
    }
    const nlohmann::json d = item.value("dataset", nlohmann::json::object());
    in.dataset.name = d.value("name", "");
    in.dataset.digest = d.value("digest", "");
    in.dataset.source_type = d.value("source_type", "");
    in.dataset.source = d.value("source", "");
    in.dataset.schema = d.value("schema", "");
    in.dataset.profile = d.value("profile", "");
    out.push_back(std::move(in));
  }
  return out;
}

}  // namespace cairn::client
