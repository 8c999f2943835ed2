// A file of retention rules (docs/retention.md): a YAML (or JSON) list, read into the JSON the
// server keeps (core/retention.h), checked on the way.
#pragma once

#include <string>
#include <vector>

#include "core/retention.h"
#include "util/status.h"

namespace cairn::cli {

// The rules in the file at `path` ("-": standard input) as their JSON text, checked.
Result<std::string> ReadRetentionFile(const std::string& path);

}  // namespace cairn::cli
