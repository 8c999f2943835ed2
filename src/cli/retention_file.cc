#include "cli/retention_file.h"

#include <charconv>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "env/project_env.h"
#include "env/yaml_document.h"
#include "util/file.h"

namespace cairn::cli {
namespace {

nlohmann::json ToJson(const YAML::Node& node) {
  if (node.IsMap()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& kv : node) out[kv.first.Scalar()] = ToJson(kv.second);
    return out;
  }
  if (node.IsSequence()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& item : node) out.push_back(ToJson(item));
    return out;
  }
  if (!node.IsScalar()) return nullptr;
  const std::string& text = node.Scalar();
  int64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (!text.empty() && ec == std::errc() && end == text.data() + text.size() &&
      node.Tag() != "!") {  // a quoted "10" stays a string
    return n;
  }
  return text;
}

}  // namespace

Result<std::string> ReadRetentionFile(const std::string& path) {
  std::string text;
  if (path == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    CAIRN_ASSIGN_OR_RETURN(text, ReadFile(path));
  }
  CAIRN_ASSIGN_OR_RETURN(YAML::Node doc, env::LoadYamlDocument(text, path));
  if (doc.IsMap()) {
    if (!doc["retention"]) {
      return InvalidArgument(path +
                             " has no retention section (a cairn.yaml lists its rules "
                             "under `retention:`)");
    }
    doc = doc["retention"];
  }
  const std::string json = ToJson(doc).dump();
  Result<std::vector<core::RetentionRule>> rules = core::ParseRetentionRules(json);
  if (!rules.ok()) return rules.status().WithContext(path);
  return json;
}

Result<std::string> NearestCairnYaml(const std::string& start) {
  const std::filesystem::path file =
      std::filesystem::path(env::FindProjectDir(start)) / "cairn.yaml";
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) {
    return NotFound("no cairn.yaml in " + start + " or above it: name a file of rules");
  }
  return file.string();
}

}  // namespace cairn::cli
