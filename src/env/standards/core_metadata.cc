#include "env/standards/core_metadata.h"

#include "util/strings.h"

namespace cairn::env {

CoreMetadata ParseCoreMetadata(std::string_view text) {
  CoreMetadata m;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  std::string key;
  std::string value;
  auto flush = [&] {
    if (key.empty()) return;
    const std::string v(Trim(value));
    if (EqualsIgnoreCase(key, "Name")) {
      if (m.name.empty()) m.name = v;
    } else if (EqualsIgnoreCase(key, "Version")) {
      if (m.version.empty()) m.version = v;
    } else if (EqualsIgnoreCase(key, "Requires-Python")) {
      m.requires_python = v;
    } else if (EqualsIgnoreCase(key, "Requires-Dist")) {
      if (!v.empty()) m.requires_dist.push_back(v);
    } else if (EqualsIgnoreCase(key, "Provides-Extra")) {
      if (!v.empty()) m.provides_extra.push_back(v);
    }
    key.clear();
    value.clear();
  };
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    std::string_view line =
        text.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
    pos = eol == std::string_view::npos ? text.size() : eol + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break;  // the description follows
    if (line[0] == ' ' || line[0] == '\t') {  // a folded header's continuation
      if (!key.empty()) value.append(" ").append(Trim(line));
      continue;
    }
    flush();
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    key = std::string(Trim(line.substr(0, colon)));
    value = std::string(line.substr(colon + 1));
  }
  flush();
  return m;
}

}  // namespace cairn::env
