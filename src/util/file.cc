#include "util/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <utility>

#include "util/hash.h"

namespace cairn {

namespace fs = std::filesystem;

Result<HashedCopy> CopyHashing(const std::string& from, const std::string& to, Sync sync) {
  const int in = open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return ErrnoStatus("open", from);  // kNotFound for a missing file
  const int out = open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (out < 0) {
    Status s = ErrnoStatus("create", to);
    close(in);
    return s;
  }
  struct stat before {};
  fstat(in, &before);
  Sha256Hasher hasher;
  HashedCopy copy;
  std::string buf(1 << 20, '\0');
  Status status;
  while (status.ok()) {
    const ssize_t n = read(in, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      status = ErrnoStatus("read", from);
      break;
    }
    if (n == 0) break;
    hasher.Update(std::string_view(buf.data(), static_cast<size_t>(n)));
    copy.size += n;
    status = WriteAll(out, std::string_view(buf.data(), static_cast<size_t>(n)), to);
  }
  struct stat after {};
  fstat(in, &after);
  close(in);
  if (status.ok() && sync == Sync::kDurable && fsync(out) != 0) status = ErrnoStatus("fsync", to);
  if (close(out) != 0 && status.ok()) status = ErrnoStatus("close", to);
  if (!status.ok()) {
    unlink(to.c_str());
    return status;
  }
  copy.sha256 = hasher.HexDigest();
  copy.source_changed = after.st_size != before.st_size ||
                        after.st_mtim.tv_sec != before.st_mtim.tv_sec ||
                        after.st_mtim.tv_nsec != before.st_mtim.tv_nsec;
  return copy;
}

Status ErrnoStatus(std::string_view op, const fs::path& path) {
  int err = errno;
  std::string m(op);
  m += " ";
  m += path.string();
  m += ": ";
  m += std::strerror(err);
  return {err == ENOENT ? StatusCode::kNotFound : StatusCode::kUnavailable, std::move(m)};
}

Result<std::string> ReadFile(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("open", path);
  std::string out;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      Status s = ErrnoStatus("read", path);
      ::close(fd);
      return s;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

fs::path TempPathFor(const fs::path& path) {
  fs::path tmp = path;
  tmp += ".tmp-" + RandomHex(6);
  return tmp;
}

Status SyncDir(const fs::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("open", dir);
  int rc = ::fsync(fd);
  Status s = rc == 0 ? Status::Ok() : ErrnoStatus("fsync", dir);
  ::close(fd);
  return s;
}

Status WriteAll(int fd, std::string_view bytes, const fs::path& path, int64_t* written) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      Status s = ErrnoStatus("write", path);
      errno = error;  // for a caller that tells errors apart
      return s;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
    if (written != nullptr) *written += n;
  }
  return Status::Ok();
}

Status WriteFileAtomic(const fs::path& path, std::string_view bytes, Sync sync) {
  fs::path tmp = TempPathFor(path);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus("create", tmp);
  if (Status s = WriteAll(fd, bytes, tmp); !s.ok()) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  }
  if (sync == Sync::kDurable && ::fsync(fd) != 0) {
    Status s = ErrnoStatus("fsync", tmp);
    ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status s = ErrnoStatus("rename", path);
    ::unlink(tmp.c_str());
    return s;
  }
  if (sync == Sync::kNoSync) return Status::Ok();
  fs::path parent = path.parent_path();
  return SyncDir(parent.empty() ? fs::path(".") : parent);
}

Status MakeDirs(const fs::path& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) return Unavailable("create directory " + path.string() + ": " + ec.message());
  return Status::Ok();
}

int64_t BytesUnder(const std::vector<std::string>& paths) {
  std::set<std::pair<dev_t, ino_t>> seen;
  int64_t bytes = 0;
  auto count = [&](const std::filesystem::path& p) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        seen.insert({st.st_dev, st.st_ino}).second) {
      bytes += st.st_size;
    }
  };
  for (const std::string& path : paths) {
    count(path);
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(
             path, std::filesystem::directory_options::skip_permission_denied, ec);
         !ec && it != std::filesystem::end(it); it.increment(ec)) {
      count(it->path());
    }
  }
  return bytes;
}

}  // namespace cairn
