// Core metadata of a distribution (the METADATA file of a wheel or an installed .dist-info,
// PKG-INFO of an .egg-info): RFC 822 style headers up to the first blank line, the long
// description after it. Only the fields cairn acts on are kept.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cairn::env {

struct CoreMetadata {
  std::string name;
  std::string version;
  std::string requires_python;             // a PEP 440 specifier set; empty: any
  std::vector<std::string> requires_dist;  // PEP 508 requirements, as written, in order
  std::vector<std::string> provides_extra;
};

// Never fails: headers it cannot read are skipped, and the caller checks what it needs (a
// wheel whose metadata has no name is an error there). Multi-line (folded) values are joined.
CoreMetadata ParseCoreMetadata(std::string_view text);

}  // namespace cairn::env
