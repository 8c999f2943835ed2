// A file of retention rules (docs/retention.md): a YAML (or JSON) list, or a cairn.yaml whose
// `retention` section is that list, read into the JSON the server keeps (core/retention.h),
// checked on the way.
#pragma once

#include <string>
#include <vector>

#include "core/retention.h"
#include "util/status.h"

namespace cairn::cli {

// The rules in the file at `path` ("-": standard input) as their JSON text, checked. A mapping
// must have a `retention` key (InvalidArgument otherwise).
Result<std::string> ReadRetentionFile(const std::string& path);

// The cairn.yaml that `retention set` reads without a file: the nearest one from `start` up
// (NotFound naming `start` when there is none).
Result<std::string> NearestCairnYaml(const std::string& start);

}  // namespace cairn::cli
