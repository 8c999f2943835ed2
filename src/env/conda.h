// Conda packages imported into a lock's [tool.cairn] table, so that they are part of the lock's
// hash, of `cairn env diff` and of snapshots: from `conda list --explicit` output (CEP 23) or a
// conda environment's conda-meta records. Building conda environments is not done here.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "env/lock.h"
#include "util/status.h"

namespace cairn::env {

// A "@EXPLICIT" line, then one package URL per line (https:// or file://, ending in .conda or
// .tar.bz2), each optionally followed by #<md5> or #sha256:<hex>; comments and blank lines are
// skipped. Name, version and build come from the file name, the channel from the URL.
// InvalidArgument naming `source` and the line for anything else.
Result<std::vector<CondaPackage>> ParseCondaExplicit(std::string_view text, std::string_view source);

// The conda-meta/*.json records of the conda environment at `prefix`, sorted by name. NotFound
// when it has no conda-meta directory.
Result<std::vector<CondaPackage>> ReadCondaMeta(const std::string& prefix);

// [[tool.cairn.conda]] tables for the packages (appended to a snapshot's TOML).
std::string CondaTomlTables(const std::vector<CondaPackage>& packages);

}  // namespace cairn::env
