// Reading the YAML files of a project (cairn.yaml's environment section, pipeline specs): a
// document that is not YAML is an InvalidArgument naming the file and the line, the same way
// for every reader. Includes yaml-cpp: include it only from the .cc files that read YAML.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>

#include "util/status.h"

namespace cairn::env {

// The document in `text`; `source` names it in errors ("cairn.yaml").
inline Result<YAML::Node> LoadYamlDocument(std::string_view text, std::string_view source) {
  try {
    return YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return InvalidArgument(std::string(source) + ": not valid YAML at line " +
                           std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
}

}  // namespace cairn::env
