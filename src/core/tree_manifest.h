// The manifest of a directory (docs/formats/manifest.md): a deterministic JSON list of every
// regular file and symlink under it (path, size, mode, sha256), sorted by path. The SHA-256 of
// its bytes names the directory, so two trees with the same files, modes and link targets hash
// alike wherever and whenever they were written. Empty directories, owners, timestamps and
// other mode bits are not part of it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/status.h"

namespace cairn::core {

inline constexpr uint32_t kModeFile = 0100644;
inline constexpr uint32_t kModeExecutable = 0100755;
inline constexpr uint32_t kModeSymlink = 0120000;

struct FileEntry {
  // Relative to the hashed directory, '/'-separated, no "./"; for a file hashed on its own:
  // its base name. Always valid UTF-8 (other names are rejected, as JSON cannot carry them).
  std::string path;
  int64_t size = 0;  // bytes; for a symlink, the length of its target text
  // kModeFile or kModeExecutable (only the owner-executable bit is kept, like git), or
  // kModeSymlink.
  uint32_t mode = 0;
  // Lowercase hex SHA-256 of the file's bytes; for a symlink, of its target text (symlinks are
  // never followed inside a directory).
  std::string sha256;

  bool operator==(const FileEntry&) const = default;
};

// The manifest of a directory: the exact bytes of docs/formats/manifest.md. `sorted_entries`
// must be sorted by path in byte order without duplicates (as TreeHash::files is).
std::string ManifestJson(const std::vector<FileEntry>& sorted_entries);

// Parses and validates a manifest (any JSON whitespace is accepted; the content must follow
// docs/formats/manifest.md: relative normalised paths, sorted and unique, no file inside
// another file, sizes >= 0, one of the three modes, 64 lowercase hex digits). Errors are
// kInvalidArgument naming the problem and, for an entry, its index and path.
Result<std::vector<FileEntry>> ParseManifestJson(std::string_view json);

// For messages: `path` with bytes that are not UTF-8 shown as U+FFFD.
std::string PrintablePath(std::string_view path);

// What changed from one manifest to another (both sorted by path, as parsed): the files only
// in `to`, those only in `from`, and those at the same path with other bytes or another mode,
// each list in path order.
struct ManifestDiff {
  std::vector<FileEntry> added;
  std::vector<FileEntry> removed;
  std::vector<std::pair<FileEntry, FileEntry>> changed;  // (from, to)
  bool empty() const { return added.empty() && removed.empty() && changed.empty(); }
};
ManifestDiff DiffManifests(const std::vector<FileEntry>& from, const std::vector<FileEntry>& to);

}  // namespace cairn::core
