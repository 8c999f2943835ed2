#include "core/tree_manifest.h"

#include <algorithm>
#include <optional>
#include <unordered_set>

#include "util/hash.h"
#include "util/json_reader.h"
#include "util/utf8.h"

namespace cairn::core {
namespace {

constexpr size_t kMaxPathBytes = 4096;  // PATH_MAX: no longer relative path can be opened
constexpr std::string_view kManifestHead = "{\"cairn_manifest\":1,\"entries\":[\n";
constexpr std::string_view kManifestTail = "]}\n";

void AppendJsonString(std::string_view s, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (c < 0x20) {
          out->append("\\u00");
          out->push_back(kHex[c >> 4]);
          out->push_back(kHex[c & 15]);
        } else {
          out->push_back(ch);
        }
    }
  }
  out->push_back('"');
}

std::string_view ModeText(uint32_t mode) {
  switch (mode) {
    case kModeExecutable:
      return "100755";
    case kModeSymlink:
      return "120000";
    default:
      return "100644";
  }
}

// ModeText's inverse; 0 for any other text.
uint32_t ModeOf(std::string_view text) {
  for (uint32_t mode : {kModeFile, kModeExecutable, kModeSymlink}) {
    if (text == ModeText(mode)) return mode;
  }
  return 0;
}

// Why `path` is not a normalised relative path, or empty when it is one.
std::string BadRelativePath(std::string_view path) {
  if (path.empty()) return "is empty";
  if (path.size() > kMaxPathBytes) return "is longer than 4096 bytes";
  if (!IsValidUtf8(path)) return "is not valid UTF-8";
  if (path.find('\0') != std::string_view::npos) return "contains a NUL byte";
  if (path.front() == '/') return "is absolute";
  size_t start = 0;
  for (;;) {
    size_t end = path.find('/', start);
    std::string_view part = path.substr(start, end == std::string_view::npos ? end : end - start);
    if (part.empty()) return "has an empty component";
    if (part == "." || part == "..") return "has a '.' or '..' component";
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return "";
}

// Reads a manifest in exactly the form ManifestJson writes, without building a document: the
// form every manifest cairn makes has, read at the speed of a scan. nullopt for anything else
// (escapes in a path, other spacing or field order, an entry that is not valid), which the
// general reader then takes, and names the problem of.
std::optional<std::vector<FileEntry>> ScanCanonical(std::string_view text) {
  if (!text.starts_with(kManifestHead) || !text.ends_with(kManifestTail)) return std::nullopt;
  std::string_view rest = text.substr(kManifestHead.size());
  rest.remove_suffix(kManifestTail.size());
  std::vector<FileEntry> entries;
  entries.reserve(rest.size() / 120 + 1);
  auto take = [&rest](std::string_view literal) {
    if (!rest.starts_with(literal)) return false;
    rest.remove_prefix(literal.size());
    return true;
  };
  while (!rest.empty()) {
    FileEntry e;
    if (!take("{\"path\":\"")) return std::nullopt;
    size_t end = 0;
    while (end < rest.size() && rest[end] != '"') {
      const unsigned char c = static_cast<unsigned char>(rest[end]);
      if (c == '\\' || c < 0x20) return std::nullopt;
      ++end;
    }
    if (end == rest.size()) return std::nullopt;
    const std::string_view path = rest.substr(0, end);
    rest.remove_prefix(end);
    if (!BadRelativePath(path).empty()) return std::nullopt;
    if (!take("\",\"size\":")) return std::nullopt;
    size_t digits = 0;
    int64_t size = 0;
    while (digits < rest.size() && digits < 18 && rest[digits] >= '0' && rest[digits] <= '9') {
      size = size * 10 + (rest[digits] - '0');
      ++digits;
    }
    if (digits == 0 || (digits > 1 && rest[0] == '0')) return std::nullopt;
    rest.remove_prefix(digits);
    if (!take(",\"mode\":\"") || rest.size() < 6) return std::nullopt;
    e.mode = ModeOf(rest.substr(0, 6));
    if (e.mode == 0) return std::nullopt;
    rest.remove_prefix(6);
    if (!take("\",\"sha256\":\"") || rest.size() < 64) return std::nullopt;
    const std::string_view sha = rest.substr(0, 64);
    if (!IsSha256Hex(sha)) return std::nullopt;
    rest.remove_prefix(64);
    if (!take("\"}")) return std::nullopt;
    if (!take(",\n")) {
      if (rest != "\n") return std::nullopt;
      rest = {};
    } else if (rest.empty()) {
      return std::nullopt;  // a comma after the last entry
    }
    if (!entries.empty() && !(entries.back().path < path)) return std::nullopt;
    e.path = std::string(path);
    e.size = size;
    e.sha256 = std::string(sha);
    entries.push_back(std::move(e));
  }
  return entries;
}

// kInvalidArgument when a path in `entries` (sorted) lies under another listed as a file: that
// tree could not exist on disk. The paths that start with a path P sort together, right after
// P, so one pass keeps the chain of earlier paths that prefix the current one.
Status CheckNoFileIsADirectory(const std::vector<FileEntry>& entries) {
  std::vector<std::string_view> chain;  // each a prefix of the next
  for (const FileEntry& e : entries) {
    while (!chain.empty() && !std::string_view(e.path).starts_with(chain.back())) chain.pop_back();
    for (std::string_view file : chain) {
      if (e.path[file.size()] == '/') {
        return InvalidArgument("manifest: \"" + e.path + "\" is inside \"" + std::string(file) +
                               "\", which is listed as a file");
      }
    }
    chain.push_back(e.path);
  }
  return Status::Ok();
}

}  // namespace

std::string PrintablePath(std::string_view path) {
  Utf8Decoder d;
  std::string out = d.Feed(path);
  out += d.Finish();
  return out;
}

std::string ManifestJson(const std::vector<FileEntry>& sorted_entries) {
  std::string out(kManifestHead);
  out.reserve(kManifestHead.size() + kManifestTail.size() + sorted_entries.size() * 140);
  for (size_t i = 0; i < sorted_entries.size(); ++i) {
    const FileEntry& e = sorted_entries[i];
    out += "{\"path\":";
    AppendJsonString(e.path, &out);
    out += ",\"size\":";
    out += std::to_string(e.size);
    out += ",\"mode\":\"";
    out += ModeText(e.mode);
    out += "\",\"sha256\":\"";
    out += e.sha256;
    out += i + 1 < sorted_entries.size() ? "\"},\n" : "\"}\n";
  }
  out += kManifestTail;
  return out;
}

Result<std::vector<FileEntry>> ParseManifestJson(std::string_view text) {
  if (std::optional<std::vector<FileEntry>> entries = ScanCanonical(text)) {
    CAIRN_RETURN_IF_ERROR(CheckNoFileIsADirectory(*entries));
    return std::move(*entries);
  }
  // Only three levels are valid (the object, its entries array, an entry): a hostile manifest
  // cannot make the parser build a deep tree.
  JsonDocument::Error error = JsonDocument::Error::kNone;
  Result<JsonDocument> parsed = JsonDocument::Parse(text, 3, &error);
  if (!parsed.ok()) {
    if (error == JsonDocument::Error::kTooDeep) {
      return InvalidArgument("manifest: nests deeper than an entry's fields");
    }
    return InvalidArgument("manifest: not valid JSON: " + parsed.status().message());
  }
  const JsonValue doc = parsed->root();
  if (!doc.is_object()) return InvalidArgument("manifest: not a JSON object");
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.key() != "cairn_manifest" && it.key() != "entries") {
      return InvalidArgument("manifest: unknown field \"" + PrintablePath(it.key()) + "\"");
    }
  }
  const JsonValue version = doc.Find("cairn_manifest");
  if (!version.exists() || !version.is_int() || version.int_value() != 1) {
    return InvalidArgument("manifest: \"cairn_manifest\" must be 1 (the only version)");
  }
  const JsonValue list = doc.Find("entries");
  if (!list.exists() || !list.is_array()) {
    return InvalidArgument("manifest: \"entries\" must be an array");
  }
  std::vector<FileEntry> entries;
  entries.reserve(list.size());
  size_t i = 0;
  for (const JsonValue item : list) {
    std::string where = "manifest entry " + std::to_string(i++);
    if (!item.is_object()) return InvalidArgument(where + ": not an object");
    JsonValue path, size, mode, sha;
    for (auto it = item.begin(); it != item.end(); ++it) {
      const std::string_view key = it.key();
      if (key == "path") {
        path = *it;
      } else if (key == "size") {
        size = *it;
      } else if (key == "mode") {
        mode = *it;
      } else if (key == "sha256") {
        sha = *it;
      } else {
        return InvalidArgument(where + ": unknown field \"" + PrintablePath(key) + "\"");
      }
    }
    FileEntry e;
    if (!path.exists() || !path.is_string()) {
      return InvalidArgument(where + ": \"path\" must be a string");
    }
    e.path = std::string(path.str());
    if (std::string why = BadRelativePath(e.path); !why.empty()) {
      return InvalidArgument(where + ": path \"" + PrintablePath(e.path) + "\" " + why);
    }
    where += " (" + e.path + ")";
    if (!size.exists() || !size.is_int() || size.int_value() < 0) {
      return InvalidArgument(where + ": \"size\" must be an integer >= 0");
    }
    e.size = size.int_value();
    const std::string_view mode_text =
        mode.exists() && mode.is_string() ? mode.str() : std::string_view();
    e.mode = ModeOf(mode_text);
    if (e.mode == 0) {
      return InvalidArgument(where + ": \"mode\" must be \"100644\", \"100755\" or \"120000\"");
    }
    if (!sha.exists() || !sha.is_string() || !IsSha256Hex(sha.str())) {
      return InvalidArgument(where + ": \"sha256\" must be 64 lowercase hex digits");
    }
    e.sha256 = std::string(sha.str());
    if (!entries.empty() && !(entries.back().path < e.path)) {
      return InvalidArgument(where + ": entries must be sorted by path, each path once (after \"" +
                             entries.back().path + "\")");
    }
    entries.push_back(std::move(e));
  }
  CAIRN_RETURN_IF_ERROR(CheckNoFileIsADirectory(entries));
  return entries;
}

ManifestDiff DiffManifests(const std::vector<FileEntry>& from, const std::vector<FileEntry>& to) {
  ManifestDiff d;
  size_t i = 0, j = 0;
  while (i < from.size() || j < to.size()) {
    if (j == to.size() || (i < from.size() && from[i].path < to[j].path)) {
      d.removed.push_back(from[i++]);
    } else if (i == from.size() || to[j].path < from[i].path) {
      d.added.push_back(to[j++]);
    } else {
      if (from[i].sha256 != to[j].sha256 || from[i].mode != to[j].mode) {
        d.changed.emplace_back(from[i], to[j]);
      }
      ++i;
      ++j;
    }
  }
  return d;
}

}  // namespace cairn::core
