#include "env/wheel_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "util/file.h"
#include "util/hash.h"

namespace cairn::env {
namespace {

namespace fs = std::filesystem;

// Copies `from` to `to` (a new file), hashing what it copies.
Result<Downloaded> CopyHashing(const std::string& from, const std::string& to) {
  int in = open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return ErrnoStatus("open", from);
  int out = open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (out < 0) {
    Status s = ErrnoStatus("create", to);
    close(in);
    return s;
  }
  Sha256Hasher hasher;
  Downloaded d;
  std::string buf(1 << 20, '\0');
  Status status;
  for (;;) {
    ssize_t n = read(in, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      status = ErrnoStatus("read", from);
      break;
    }
    if (n == 0) break;
    hasher.Update(std::string_view(buf.data(), static_cast<size_t>(n)));
    d.size += n;
    for (ssize_t off = 0; off < n;) {
      ssize_t w = write(out, buf.data() + off, static_cast<size_t>(n - off));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) {
        status = ErrnoStatus("write", to);
        break;
      }
      off += w;
    }
    if (!status.ok()) break;
  }
  close(in);
  if (close(out) != 0 && status.ok()) status = ErrnoStatus("close", to);
  if (!status.ok()) {
    unlink(to.c_str());
    return status;
  }
  d.sha256 = hasher.HexDigest();
  return d;
}

}  // namespace

std::string DefaultCacheRoot() {
  if (const char* c = std::getenv("CAIRN_CACHE_DIR"); c != nullptr && *c != '\0') return c;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x == '/') {
    return std::string(x) + "/cairn";
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : "/tmp") + "/.cache/cairn";
}

WheelCache::WheelCache(std::string root) : root_(std::move(root)) {}

std::string WheelCache::PathOf(const std::string& sha256) const {
  return (fs::path(root_) / "wheels" / sha256.substr(0, 2) / (sha256 + ".whl")).string();
}

std::string WheelCache::UnpackedDir(const std::string& sha256) const {
  return (fs::path(root_) / "unpacked" / sha256.substr(0, 2) / sha256).string();
}

std::optional<std::string> WheelCache::Find(const std::string& sha256, int64_t size) const {
  if (!IsSha256Hex(sha256)) return std::nullopt;
  const std::string path = PathOf(sha256);
  struct stat st{};
  if (stat(path.c_str(), &st) != 0) return std::nullopt;
  if (size >= 0 && st.st_size != size) {
    unlink(path.c_str());
    return std::nullopt;
  }
  return path;
}

Result<std::string> WheelCache::Fetch(const std::string& sha256, int64_t size,
                                      const std::string& url, const std::string& path,
                                      const std::string& what, const FetchOptions& options,
                                      std::function<void(int64_t, int64_t)> progress) {
  if (!IsSha256Hex(sha256)) return InvalidArgument(what + ": no valid sha256 to check it by");
  if (std::optional<std::string> hit = Find(sha256, size)) return *hit;
  const std::string dest = PathOf(sha256);
  CAIRN_RETURN_IF_ERROR(MakeDirs(fs::path(dest).parent_path()));
  const std::string tmp = dest + ".tmp-" + RandomHex(6);
  Result<Downloaded> got = !path.empty() ? CopyHashing(path, tmp)
                                         : HttpDownload(url, tmp, options, std::move(progress));
  const std::string source = !path.empty() ? path : RedactUrl(url);
  if (!got.ok()) return got.status().WithContext(what);
  auto reject = [&](const std::string& why) {
    unlink(tmp.c_str());
    return FailedPrecondition(what + " from " + source + ": " + why +
                              "; the file is not what the lock pinned");
  };
  if (size >= 0 && got->size != size) {
    return reject("size " + std::to_string(got->size) + " bytes, the lock says " +
                  std::to_string(size));
  }
  if (got->sha256 != sha256) {
    return reject("sha256 " + got->sha256 + ", the lock says " + sha256);
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
  CAIRN_RETURN_IF_ERROR(MakeDirs(fs::path(root_) / "wheels"));
  const std::string tmp = (fs::path(root_) / "wheels" / ("add-" + RandomHex(8))).string();
  CAIRN_ASSIGN_OR_RETURN(Downloaded d, CopyHashing(path, tmp));
  const std::string dest = PathOf(d.sha256);
  Status made = MakeDirs(fs::path(dest).parent_path());
  if (!made.ok() || std::rename(tmp.c_str(), dest.c_str()) != 0) {
    unlink(tmp.c_str());
    return made.ok() ? ErrnoStatus("rename", tmp) : made;
  }
  return std::make_tuple(d.sha256, d.size, dest);
}

}  // namespace cairn::env
