// Directory listings over a flat artifact index. Files are keyed by full path; a directory is
// implied by the paths under it. Both backends feed sorted paths through ListingBuilder.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "store/metadata_store.h"

namespace cairn::store {

// "a/b" -> "a/b/", "" -> "".
std::string DirPrefix(std::string_view dir);

class ListingBuilder {
 public:
  explicit ListingBuilder(std::string_view dir) : prefix_(DirPrefix(dir)) {}
  // Files must arrive in ascending path order and lie under the directory.
  void Add(const ArtifactFile& file);
  // The entries sorted by name.
  std::vector<ArtifactEntry> Take();
  const std::string& prefix() const { return prefix_; }

 private:
  std::string prefix_;
  std::vector<ArtifactEntry> entries_;
};

}  // namespace cairn::store
