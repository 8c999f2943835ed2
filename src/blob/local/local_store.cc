#include "blob/local/local_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "util/file.h"
#include "util/hash.h"

namespace cairn::blob {
namespace {

namespace fs = std::filesystem;

class LocalWriter : public BlobWriter {
 public:
  LocalWriter(fs::path root, fs::path tmp, int fd)
      : root_(std::move(root)), tmp_(std::move(tmp)), fd_(fd) {}
  ~LocalWriter() override {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(tmp_.c_str());
  }

  Status Write(std::string_view bytes) override {
    hasher_.Update(bytes);
    size_ += static_cast<int64_t>(bytes.size());
    while (!bytes.empty()) {
      ssize_t n = ::write(fd_, bytes.data(), bytes.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus("write", tmp_);
      }
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return Status::Ok();
  }

  Result<BlobInfo> Commit() override {
    if (::fsync(fd_) != 0) return ErrnoStatus("fsync", tmp_);
    ::close(fd_);
    fd_ = -1;
    BlobInfo info{hasher_.HexDigest(), size_};
    fs::path dir = root_ / info.digest.substr(0, 2);
    fs::path final_path = dir / info.digest.substr(2);
    CAIRN_RETURN_IF_ERROR(MakeDirs(dir));
    if (::rename(tmp_.c_str(), final_path.c_str()) != 0) return ErrnoStatus("rename", final_path);
    committed_ = true;
    CAIRN_RETURN_IF_ERROR(SyncDir(dir));
    return info;
  }

 private:
  fs::path root_;
  fs::path tmp_;
  int fd_;
  Sha256Hasher hasher_;
  int64_t size_ = 0;
  bool committed_ = false;
};

class LocalReader : public BlobReader {
 public:
  LocalReader(int fd, int64_t size, fs::path path) : fd_(fd), size_(size), path_(std::move(path)) {}
  ~LocalReader() override { ::close(fd_); }
  int64_t size() const override { return size_; }
  Result<size_t> ReadAt(int64_t offset, char* buf, size_t n) override {
    for (;;) {
      ssize_t got = ::pread(fd_, buf, n, offset);
      if (got >= 0) return static_cast<size_t>(got);
      if (errno != EINTR) return ErrnoStatus("read", path_);
    }
  }

 private:
  int fd_;
  int64_t size_;
  fs::path path_;
};

class LocalContentStore : public ContentStore {
 public:
  explicit LocalContentStore(fs::path root) : root_(std::move(root)) {}

  Result<std::unique_ptr<BlobWriter>> NewWriter() override {
    fs::path tmp = root_ / "tmp" / ("blob-" + RandomHex(12));
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return ErrnoStatus("create", tmp);
    return std::unique_ptr<BlobWriter>(std::make_unique<LocalWriter>(root_, tmp, fd));
  }

  Result<std::unique_ptr<BlobReader>> Open(std::string_view digest) override {
    CAIRN_ASSIGN_OR_RETURN(fs::path path, PathOf(digest));
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
      if (errno == ENOENT) return NotFound("no blob " + std::string(digest));
      return ErrnoStatus("open", path);
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      Status s = ErrnoStatus("stat", path);
      ::close(fd);
      return s;
    }
    return std::unique_ptr<BlobReader>(std::make_unique<LocalReader>(fd, st.st_size, path));
  }

  Result<bool> Has(std::string_view digest) override {
    CAIRN_ASSIGN_OR_RETURN(fs::path path, PathOf(digest));
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
  }

  Status Delete(std::string_view digest) override {
    CAIRN_ASSIGN_OR_RETURN(fs::path path, PathOf(digest));
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoStatus("unlink", path);
    return Status::Ok();
  }

  // The fan-out directories ab/ and the files in them named by the rest of a digest; tmp/ and
  // anything else that is not a blob's name are passed over.
  Status ForEach(const std::function<Status(const BlobInfo&)>& visit) override {
    std::error_code ec;
    for (fs::directory_iterator dir(root_, ec), end; !ec && dir != end; dir.increment(ec)) {
      const std::string prefix = dir->path().filename().string();
      if (prefix.size() != 2 || !dir->is_directory(ec)) continue;
      for (fs::directory_iterator file(dir->path(), ec); !ec && file != end; file.increment(ec)) {
        const std::string digest = prefix + file->path().filename().string();
        if (!IsSha256Hex(digest)) continue;
        struct stat st {};
        if (::lstat(file->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
        const int64_t modified_ms =
            int64_t{st.st_mtim.tv_sec} * 1000 + st.st_mtim.tv_nsec / 1'000'000;
        CAIRN_RETURN_IF_ERROR(visit({digest, static_cast<int64_t>(st.st_size), modified_ms}));
      }
      if (ec) return Unavailable("listing " + dir->path().string() + ": " + ec.message());
    }
    if (ec) return Unavailable("listing " + root_.string() + ": " + ec.message());
    return Status::Ok();
  }

 private:
  Result<fs::path> PathOf(std::string_view digest) const {
    if (!IsSha256Hex(digest)) return InvalidArgument("not a SHA-256 digest: " + std::string(digest));
    return root_ / std::string(digest.substr(0, 2)) / std::string(digest.substr(2));
  }

  fs::path root_;
};

}  // namespace

Result<std::unique_ptr<ContentStore>> OpenLocalContentStore(const std::string& root) {
  fs::path dir(root);
  CAIRN_RETURN_IF_ERROR(MakeDirs(dir / "tmp"));
  // Temporary files of writers killed halfway are garbage: nothing refers to them.
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir / "tmp", ec)) fs::remove(entry.path(), ec);
  return std::unique_ptr<ContentStore>(std::make_unique<LocalContentStore>(dir));
}

}  // namespace cairn::blob
