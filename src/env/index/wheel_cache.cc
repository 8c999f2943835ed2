#include "env/index/wheel_cache.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>

#include "util/file.h"
#include "util/hash.h"
#include "util/strings.h"

namespace cairn::env {
namespace {

namespace fs = std::filesystem;

// Copies `from` to the new file `to`, hashing what it copies; `to` is fsynced, or removed on
// error.
Result<Downloaded> CopyHashing(const std::string& from, const std::string& to) {
  CAIRN_ASSIGN_OR_RETURN(HashedCopy copy, cairn::CopyHashing(from, to, Sync::kDurable));
  return Downloaded{std::move(copy.sha256), copy.size};
}

std::string Describe(const std::string& sha256, int64_t size) {
  return "sha256 " + sha256 + (size >= 0 ? " (" + std::to_string(size) + " bytes)" : "");
}

}  // namespace

std::string DefaultCacheRoot() {
  if (const char* c = std::getenv("CAIRN_CACHE_DIR"); c != nullptr && *c != '\0') return c;
  // The XDG spec says to ignore a relative XDG_CACHE_HOME.
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x == '/') {
    return (fs::path(x) / "cairn").string();
  }
  std::string home;
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') {
    home = h;
  } else if (const passwd* pw = getpwuid(getuid()); pw != nullptr && pw->pw_dir != nullptr) {
    home = pw->pw_dir;
  } else {
    home = fs::temp_directory_path().string();
  }
  return (fs::path(home) / ".cache" / "cairn").string();
}

WheelCache::WheelCache(std::string root) : root_(std::move(root)) {}

std::string WheelCache::PathOf(const std::string& sha256) const {
  return (fs::path(root_) / "wheels" / sha256.substr(0, 2) / (sha256 + ".whl")).string();
}

std::string WheelCache::UnpackedDir(const std::string& sha256) const {
  const std::string hex = AsciiLower(sha256);
  return (fs::path(root_) / "unpacked" / hex.substr(0, 2) / hex).string();
}

std::optional<std::string> WheelCache::Find(const std::string& sha256, int64_t size) const {
  const std::string hex = AsciiLower(sha256);
  if (!IsSha256Hex(hex)) return std::nullopt;
  const std::string path = PathOf(hex);
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  if (size >= 0 && st.st_size != size) {
    unlink(path.c_str());
    return std::nullopt;
  }
  // Its time is its last use, which `cairn env gc` goes by.
  utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
  return path;
}

Result<std::string> WheelCache::Fetch(const std::string& sha256, int64_t size,
                                      const std::string& url, const std::string& path,
                                      const std::string& what, const FetchOptions& options,
                                      std::function<void(int64_t, int64_t)> progress) {
  const std::string expected = AsciiLower(sha256);
  if (!IsSha256Hex(expected)) {
    return InvalidArgument(what + ": \"" + sha256 + "\" is not a SHA-256 to check it by");
  }
  if (std::optional<std::string> hit = Find(expected, size)) return *hit;
  if (path.empty() && url.empty()) {
    return InvalidArgument(what + ": neither a URL nor a file to fetch it from");
  }
  const std::string dest = PathOf(expected);
  CAIRN_RETURN_IF_ERROR(MakeDirs(fs::path(dest).parent_path()));
  const std::string tmp = dest + ".tmp-" + RandomHex(8);
  const std::string source = !path.empty() ? path : RedactUrl(url);
  Result<Downloaded> got =
      !path.empty() ? CopyHashing(path, tmp) : HttpDownload(url, tmp, options, std::move(progress));
  if (!got.ok()) return got.status().WithContext(what);
  if ((size >= 0 && got->size != size) || got->sha256 != expected) {
    unlink(tmp.c_str());
    return FailedPrecondition(what + " from " + source + ": expected " + Describe(expected, size) +
                              ", got " + Describe(got->sha256, got->size) +
                              "; the file was discarded");
  }
  if (std::rename(tmp.c_str(), dest.c_str()) != 0) {
    Status s = ErrnoStatus("rename", tmp);
    unlink(tmp.c_str());
    return s;
  }
  return dest;
}

Result<std::tuple<std::string, int64_t, std::string>> WheelCache::AddLocal(
    const std::string& path) {
  // The hash is known only once the bytes are read, so they go to a neutral name first.
  const fs::path staging = fs::path(root_) / "wheels";
  CAIRN_RETURN_IF_ERROR(MakeDirs(staging));
  const std::string tmp = (staging / ("add-" + RandomHex(8) + ".tmp")).string();
  CAIRN_ASSIGN_OR_RETURN(Downloaded d, CopyHashing(path, tmp));
  const std::string dest = PathOf(d.sha256);
  if (Status made = MakeDirs(fs::path(dest).parent_path()); !made.ok()) {
    unlink(tmp.c_str());
    return made;
  }
  if (std::rename(tmp.c_str(), dest.c_str()) != 0) {
    Status s = ErrnoStatus("rename", tmp);
    unlink(tmp.c_str());
    return s;
  }
  return std::make_tuple(d.sha256, d.size, dest);
}

}  // namespace cairn::env
