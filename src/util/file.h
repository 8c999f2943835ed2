// File helpers. Writes that must survive a crash go through WriteFileAtomic: the bytes land in
// a temporary file beside the target, are fsynced, and are renamed over it, so a reader sees
// the old content or the new one, never a torn mix.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace cairn {

Result<std::string> ReadFile(const std::filesystem::path& path);
// kNoSync skips the fsyncs: still never torn for readers, but after a crash of the machine
// the file may be empty or missing. For records that are only worth keeping (cache entries).
enum class Sync { kDurable, kNoSync };
Status WriteFileAtomic(const std::filesystem::path& path, std::string_view bytes,
                       Sync sync = Sync::kDurable);
Status MakeDirs(const std::filesystem::path& path);
// fsyncs a directory so a rename inside it is durable.
Status SyncDir(const std::filesystem::path& dir);
// A unique name for a temporary file beside `path`.
std::filesystem::path TempPathFor(const std::filesystem::path& path);
// The bytes of the regular files at or under `paths` (files or directories; symlinks are not
// followed, missing paths count 0), each inode once: caches hard-link their files.
int64_t BytesUnder(const std::vector<std::string>& paths);
// Writes all of `bytes` to `fd` (retrying short writes and EINTR); errors name `path`. With
// `written`, it is advanced by each byte written, also when a later write fails. On failure
// errno is the failed write's.
Status WriteAll(int fd, std::string_view bytes, const std::filesystem::path& path,
                int64_t* written = nullptr);
// What CopyHashing copied.
struct HashedCopy {
  int64_t size = 0;
  std::string sha256;           // lowercase hex of the bytes copied
  bool source_changed = false;  // the source's size or time moved while it was copied
};
// Copies `from` to the new file `to` (made 0644), hashing what it copies; `to` is fsynced with
// Sync::kDurable, and removed on error.
Result<HashedCopy> CopyHashing(const std::string& from, const std::string& to, Sync sync);
// errno as text with the operation and path: "open /x: No such file or directory".
Status ErrnoStatus(std::string_view op, const std::filesystem::path& path);

}  // namespace cairn
