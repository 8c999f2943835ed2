#include "store/listing.h"

#include <algorithm>

namespace cairn::store {

std::string DirPrefix(std::string_view dir) {
  std::string prefix(dir);
  if (!prefix.empty() && prefix.back() != '/') prefix.push_back('/');
  return prefix;
}

void ListingBuilder::Add(const ArtifactFile& file) {
  std::string_view rest = std::string_view(file.path).substr(prefix_.size());
  size_t slash = rest.find('/');
  if (slash == std::string_view::npos) {
    entries_.push_back({std::string(rest), false, file.size});
    return;
  }
  std::string_view child = rest.substr(0, slash);
  if (!entries_.empty() && entries_.back().is_dir && entries_.back().name == child) return;
  entries_.push_back({std::string(child), true, 0});
}

std::vector<ArtifactEntry> ListingBuilder::Take() {
  std::sort(entries_.begin(), entries_.end(),
            [](const ArtifactEntry& a, const ArtifactEntry& b) { return a.name < b.name; });
  return std::move(entries_);
}

}  // namespace cairn::store
