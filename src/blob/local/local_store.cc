#include "blob/local/local_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "blob/local/small_blobs.h"
#include "util/file.h"
#include "util/hash.h"
#include "util/parallel.h"

namespace cairn::blob {
namespace {

namespace fs = std::filesystem;

bool IsLowerHexPair(const char* s) {
  auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); };
  return hex(s[0]) && hex(s[1]);
}

// Large blobs move past the page cache (O_DIRECT): filling cache pages costs more than the
// disk's own time on the machines measured (docs/benchmarks.md), and a blob written or read once
// need not push other data out of memory.
constexpr int64_t kDirectFromBytes = 8 << 20;
constexpr size_t kAlign = 4096;          // O_DIRECT's unit on the disks cairn runs on
constexpr size_t kStageBytes = 2 << 20;  // a multiple of kAlign

struct FreeAligned {
  void operator()(char* p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<char, FreeAligned>;

AlignedBuffer NewAligned(size_t bytes) {
  return AlignedBuffer(static_cast<char*>(std::aligned_alloc(kAlign, bytes)));
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

fs::path BlobPath(const fs::path& root, std::string_view digest) {
  return root / std::string(digest.substr(0, 2)) / std::string(digest.substr(2));
}

// Writes a blob. A small one is held in memory and committed as a row of the small-blob
// database; once a blob outgrows that, it goes into a temporary file that is fsynced and
// renamed to the blob's path at commit. Past kDirectFromBytes, the rest of it goes past the page
// cache (O_DIRECT) from two aligned stages, one written by a thread beside while the caller
// fills and hashes the other: a large upload then costs the disk's time rather than
// the kernel's copying into page-cache pages that nobody reads soon, and it does not fill memory
// with dirty pages. Where the file system refuses O_DIRECT, writes stay buffered.
class LocalWriter : public BlobWriter {
 public:
  LocalWriter(fs::path root, SmallBlobs* small) : root_(std::move(root)), small_(small) {}
  ~LocalWriter() override {
    (void)WaitFlush();  // the write beside uses fd_
    if (fd_ >= 0) ::close(fd_);
    if (!committed_ && !tmp_.empty()) ::unlink(tmp_.c_str());
  }

  Status Write(std::string_view bytes) override {
    if (fd_ < 0) {
      if (static_cast<int64_t>(held_.size() + bytes.size()) <= SmallBlobs::kMaxBytes) {
        size_ += static_cast<int64_t>(bytes.size());
        hasher_.Update(bytes);
        held_.append(bytes);
        return Status::Ok();
      }
      CAIRN_RETURN_IF_ERROR(Spill());
    }
    size_ += static_cast<int64_t>(bytes.size());
    hasher_.Update(bytes);
    return Put(bytes);
  }

  Result<BlobInfo> Commit() override {
    if (fd_ < 0) return CommitSmall();
    CAIRN_RETURN_IF_ERROR(WaitFlush());
    CAIRN_RETURN_IF_ERROR(WriteStage(stage_.get(), staged_, /*last=*/true));
    staged_ = 0;
    if (::fsync(fd_) != 0) return ErrnoStatus("fsync", tmp_);
    ::close(fd_);
    fd_ = -1;
    BlobInfo info{hasher_.HexDigest(), size_};
    fs::path final_path = BlobPath(root_, info.digest);
    fs::path dir = final_path.parent_path();
    CAIRN_RETURN_IF_ERROR(MakeDirs(dir));
    if (::rename(tmp_.c_str(), final_path.c_str()) != 0) return ErrnoStatus("rename", final_path);
    committed_ = true;
    CAIRN_RETURN_IF_ERROR(SyncDir(dir));
    return info;
  }

 private:
  Result<BlobInfo> CommitSmall() {
    BlobInfo info{hasher_.HexDigest(), size_};
    // The same bytes kept whole as a file (by a store from before small blobs had a database)
    // stay the one copy; writing them again renews the file's time, as a rename over it would.
    // Anything else at that path (damaged bytes, a link) gives way to the row.
    const fs::path file = BlobPath(root_, info.digest);
    switch (LegacyFile(file)) {
      case Legacy::kWhole:
        return info;
      case Legacy::kNone:
        CAIRN_RETURN_IF_ERROR(small_->Put(info.digest, held_, NowMs()));
        break;
      case Legacy::kOther:
        CAIRN_RETURN_IF_ERROR(small_->Put(info.digest, held_, NowMs()));
        if (::unlink(file.c_str()) != 0 && errno != ENOENT) return ErrnoStatus("unlink", file);
        break;
    }
    committed_ = true;
    return info;
  }

  enum class Legacy { kNone, kWhole, kOther };

  // What the blob's file path holds: nothing, exactly the bytes held (whose time it then
  // renews), or something else.
  Legacy LegacyFile(const fs::path& file) const {
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return errno == ENOENT ? Legacy::kNone : Legacy::kOther;
    struct stat st {};
    std::string bytes;
    bool whole = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
                 st.st_size == static_cast<off_t>(held_.size());
    if (whole) {
      bytes.resize(held_.size());
      whole = ::pread(fd, bytes.data(), bytes.size(), 0) == static_cast<ssize_t>(bytes.size()) &&
              bytes == held_ && ::futimens(fd, nullptr) == 0;
    }
    ::close(fd);
    return whole ? Legacy::kWhole : Legacy::kOther;
  }

  // The blob is too large for the database: what is held so far goes into a temporary file.
  Status Spill() {
    tmp_ = root_ / "tmp" / ("blob-" + RandomHex(12));
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ < 0) return ErrnoStatus("create", tmp_);
    std::string held = std::move(held_);
    held_ = std::string();
    return Put(held);
  }

  // Buffered until the blob is large, then staged and written directly: a full stage by a
  // thread beside while the next one fills, so that the disk's time and the hashing overlap.
  Status Put(std::string_view bytes) {
    if (stage_ == nullptr && written_ + static_cast<int64_t>(bytes.size()) >= kDirectFromBytes &&
        !buffered_only_) {
      // The direct part starts at an aligned offset.
      const size_t pad = (kAlign - static_cast<size_t>(written_) % kAlign) % kAlign;
      const size_t head = std::min(pad, bytes.size());
      CAIRN_RETURN_IF_ERROR(WriteAll(bytes.substr(0, head)));
      bytes.remove_prefix(head);
      if (static_cast<size_t>(written_) % kAlign == 0) StartDirect();
    }
    if (stage_ == nullptr) return WriteAll(bytes);
    while (!bytes.empty()) {
      const size_t take = std::min(bytes.size(), kStageBytes - staged_);
      std::memcpy(stage_.get() + staged_, bytes.data(), take);
      staged_ += take;
      bytes.remove_prefix(take);
      if (staged_ == kStageBytes) CAIRN_RETURN_IF_ERROR(SendStage());
    }
    return Status::Ok();
  }

  // Hands the full stage to the thread beside, once it has written the one before, and fills
  // the other. Without memory for a second stage, writes it here.
  Status SendStage() {
    CAIRN_RETURN_IF_ERROR(WaitFlush());
    if (spare_ == nullptr) spare_ = NewAligned(kStageBytes);
    if (spare_ == nullptr) {
      CAIRN_RETURN_IF_ERROR(WriteStage(stage_.get(), staged_, /*last=*/false));
      staged_ = 0;
      return Status::Ok();
    }
    std::swap(stage_, spare_);
    const size_t full = staged_;
    staged_ = 0;
    if (flusher_ == nullptr) flusher_ = std::make_unique<SideThread>();
    flushing_ = true;
    flusher_->Start([this, full] { flushed_ = WriteStage(spare_.get(), full, /*last=*/false); });
    return Status::Ok();
  }

  // The outcome of the write beside, once it is done.
  Status WaitFlush() {
    if (!flushing_) return Status::Ok();
    flusher_->Wait();
    flushing_ = false;
    return flushed_;
  }

  void StartDirect() {
    const int flags = ::fcntl(fd_, F_GETFL);
    AlignedBuffer stage = NewAligned(kStageBytes);
    if (flags < 0 || stage == nullptr || ::fcntl(fd_, F_SETFL, flags | O_DIRECT) != 0) {
      buffered_only_ = true;
      return;
    }
    stage_ = std::move(stage);
  }

  // Writes `size` staged bytes from `stage`: the aligned part directly, and on the last write
  // the rest through the page cache. A file system that takes the flag but refuses the write
  // gets it buffered.
  Status WriteStage(const char* stage, size_t size, bool last) {
    if (stage == nullptr || size == 0) return Status::Ok();
    const size_t aligned = size - size % kAlign;
    std::string_view all(stage, size);
    if (aligned > 0) {
      const int64_t start = written_;
      Status s = WriteAll(all.substr(0, aligned));
      if (!s.ok() && direct_failed_ && StopDirect()) {
        const size_t done = static_cast<size_t>(written_ - start);
        s = WriteAll(all.substr(done, aligned - done));
      }
      CAIRN_RETURN_IF_ERROR(s);
    }
    if (aligned < size) {
      if (!last) return Internal("a partial stage flushed before the end");
      if (!StopDirect()) return ErrnoStatus("fcntl", tmp_);
      CAIRN_RETURN_IF_ERROR(WriteAll(all.substr(aligned)));
    }
    return Status::Ok();
  }

  // Back to buffered writes; false when the flag cannot be cleared.
  bool StopDirect() {
    const int flags = ::fcntl(fd_, F_GETFL);
    direct_failed_ = false;
    return flags >= 0 && ::fcntl(fd_, F_SETFL, flags & ~O_DIRECT) == 0;
  }

  Status WriteAll(std::string_view bytes) {
    Status s = cairn::WriteAll(fd_, bytes, tmp_, &written_);
    direct_failed_ = !s.ok() && stage_ != nullptr && errno == EINVAL;
    return s;
  }

  fs::path root_;
  SmallBlobs* small_;
  std::string held_;  // a small blob's bytes, until it outgrows SmallBlobs::kMaxBytes
  fs::path tmp_;      // then its file
  int fd_ = -1;
  Sha256Hasher hasher_;
  int64_t size_ = 0;                    // bytes given
  int64_t written_ = 0;                 // bytes written to the file
  AlignedBuffer stage_;                 // once writes are direct: the one filling
  AlignedBuffer spare_;                 // the one the thread beside writes
  size_t staged_ = 0;
  std::unique_ptr<SideThread> flusher_;  // made for the first full stage
  bool flushing_ = false;
  Status flushed_;
  bool buffered_only_ = false;  // O_DIRECT was refused
  bool direct_failed_ = false;  // the last write was refused as a direct one
  bool committed_ = false;
};

// Reads a blob. A large blob's large reads go past the page cache, through a second descriptor
// opened with O_DIRECT and an aligned buffer; where that cannot be opened or is refused, reads
// stay buffered.
class LocalReader : public BlobReader {
 public:
  LocalReader(int fd, int64_t size, fs::path path) : fd_(fd), size_(size), path_(std::move(path)) {
    if (size_ >= kDirectFromBytes) {
      direct_fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_DIRECT);
    }
  }
  ~LocalReader() override {
    ::close(fd_);
    if (direct_fd_ >= 0) ::close(direct_fd_);
  }
  int64_t size() const override { return size_; }
  Result<size_t> ReadAt(int64_t offset, char* buf, size_t n) override {
    if (direct_fd_ >= 0 && n >= kDirectReadBytes && offset >= 0 && offset < size_) {
      Result<size_t> got = ReadDirect(offset, buf, n);
      if (got.ok() || !direct_refused_) return got;
      ::close(direct_fd_);
      direct_fd_ = -1;
    }
    for (;;) {
      ssize_t got = ::pread(fd_, buf, n, offset);
      if (got >= 0) return static_cast<size_t>(got);
      if (errno != EINTR) return ErrnoStatus("read", path_);
    }
  }

 private:
  static constexpr size_t kDirectReadBytes = 64 << 10;

  // Reads the aligned span around [offset, offset + n), up to kStageBytes of it, and copies
  // out the part asked for.
  Result<size_t> ReadDirect(int64_t offset, char* buf, size_t n) {
    if (bounce_ == nullptr) bounce_ = NewAligned(kStageBytes);
    if (bounce_ == nullptr) return ResourceExhausted("no memory for a read buffer");
    const int64_t start = offset - offset % static_cast<int64_t>(kAlign);
    const size_t skip = static_cast<size_t>(offset - start);
    const size_t want = std::min(n, kStageBytes - skip);
    const size_t span = (skip + want + kAlign - 1) / kAlign * kAlign;
    ssize_t got;
    do {
      got = ::pread(direct_fd_, bounce_.get(), span, start);
    } while (got < 0 && errno == EINTR);
    if (got < 0) {
      direct_refused_ = errno == EINVAL;
      return ErrnoStatus("read", path_);
    }
    if (static_cast<size_t>(got) <= skip) return size_t{0};
    const size_t out = std::min(want, static_cast<size_t>(got) - skip);
    std::memcpy(buf, bounce_.get() + skip, out);
    return out;
  }

  int fd_;
  int direct_fd_ = -1;
  int64_t size_;
  fs::path path_;
  AlignedBuffer bounce_;
  bool direct_refused_ = false;
};

class LocalContentStore : public ContentStore {
 public:
  LocalContentStore(fs::path root, std::unique_ptr<SmallBlobs> small)
      : root_(std::move(root)), small_(std::move(small)) {}

  Result<std::unique_ptr<BlobWriter>> NewWriter() override {
    return std::unique_ptr<BlobWriter>(std::make_unique<LocalWriter>(root_, small_.get()));
  }

  Result<std::unique_ptr<BlobReader>> Open(std::string_view digest) override {
    CAIRN_ASSIGN_OR_RETURN(fs::path path, PathOf(digest));
    Result<std::shared_ptr<const std::string>> small = small_->Get(digest);
    if (small.ok()) return NewBytesReader(*std::move(small));
    if (small.status().code() != StatusCode::kNotFound) return small.status();
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
    CAIRN_ASSIGN_OR_RETURN(bool small, small_->Has(digest));
    struct stat st {};
    return small || ::lstat(path.c_str(), &st) == 0;
  }

  Result<std::vector<bool>> HasMany(const std::vector<std::string>& digests) override {
    for (const std::string& digest : digests) CAIRN_RETURN_IF_ERROR(PathOf(digest).status());
    CAIRN_ASSIGN_OR_RETURN(std::vector<bool> out, small_->HasMany(digests));
    for (size_t i = 0; i < digests.size(); ++i) {
      struct stat st {};
      if (!out[i]) out[i] = ::lstat(BlobPath(root_, digests[i]).c_str(), &st) == 0;
    }
    return out;
  }

  Status Delete(std::string_view digest) override {
    return DeleteMany(std::vector<std::string>{std::string(digest)});
  }

  // The small blobs go in one transaction. Removing a file waits on the disk (a journal write,
  // a discard) more than on a core, so the files are removed on several threads, spread over
  // the fan-out directories, which each take one removal at a time.
  Status DeleteMany(const std::vector<std::string>& digests) override {
    for (const std::string& digest : digests) CAIRN_RETURN_IF_ERROR(PathOf(digest).status());
    CAIRN_RETURN_IF_ERROR(small_->Delete(digests));
    // A row's digest may have a file too (a store from before small blobs had a database, with
    // its file left by a crash): every digest's path goes. One that holds nothing costs a
    // lookup, not a discard.
    std::vector<std::string_view> files(digests.begin(), digests.end());
    std::sort(files.begin(), files.end(),
              [](std::string_view a, std::string_view b) { return a.substr(2) < b.substr(2); });
    constexpr int kDeleteThreads = 8;
    return ParallelFor(files.size(), std::min<size_t>(kDeleteThreads, files.size()), [&](size_t i) {
      const fs::path path = BlobPath(root_, files[i]);
      if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
        return ErrnoStatus("unlink", path);
      }
      return Status::Ok();
    });
  }

  // The small blobs, then the files.
  // The fan-out directories ab/ and the files in them named by the rest of a digest; tmp/ and
  // anything else that is not a blob's name are passed over.
  Status ForEach(const std::function<Status(const BlobInfo&)>& visit) override {
    CAIRN_RETURN_IF_ERROR(small_->ForEach(visit));
    // readdir and fstatat on each fan-out directory's descriptor: a walk of a million blobs
    // spends its time in the kernel, not on building paths.
    DIR* top = ::opendir(root_.c_str());
    if (top == nullptr) return Unavailable("listing " + root_.string() + ": " + strerror(errno));
    std::vector<std::string> prefixes;
    while (dirent* d = ::readdir(top)) {
      if (std::strlen(d->d_name) == 2 && IsLowerHexPair(d->d_name)) prefixes.push_back(d->d_name);
    }
    ::closedir(top);
    BlobInfo info;
    info.digest.reserve(64);
    for (const std::string& prefix : prefixes) {
      const std::string dir_path = (root_ / prefix).string();
      DIR* dir = ::opendir(dir_path.c_str());
      if (dir == nullptr) {
        if (errno == ENOENT || errno == ENOTDIR) continue;
        return Unavailable("listing " + dir_path + ": " + strerror(errno));
      }
      Status status;
      std::vector<BlobInfo> small;  // files a row may stand for already: asked about together
      while (dirent* f = ::readdir(dir)) {
        if (std::strlen(f->d_name) != 62) continue;
        info.digest.assign(prefix).append(f->d_name);
        if (!IsSha256Hex(info.digest)) continue;
        struct stat st {};
        if (::fstatat(::dirfd(dir), f->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode)) {
          continue;
        }
        info.size = static_cast<int64_t>(st.st_size);
        info.modified_ms = int64_t{st.st_mtim.tv_sec} * 1000 + st.st_mtim.tv_nsec / 1'000'000;
        if (info.size <= SmallBlobs::kMaxBytes) {
          small.push_back(info);
          continue;
        }
        status = visit(info);
        if (!status.ok()) break;
      }
      ::closedir(dir);
      CAIRN_RETURN_IF_ERROR(status);
      CAIRN_RETURN_IF_ERROR(VisitUnlisted(small, visit));
    }
    return Status::Ok();
  }

 private:
  // Visits those of `files` (small blobs kept as files) that no row already stood for.
  Status VisitUnlisted(const std::vector<BlobInfo>& files,
                       const std::function<Status(const BlobInfo&)>& visit) {
    if (files.empty()) return Status::Ok();
    std::vector<std::string> digests;
    digests.reserve(files.size());
    for (const BlobInfo& f : files) digests.push_back(f.digest);
    CAIRN_ASSIGN_OR_RETURN(std::vector<bool> listed, small_->HasMany(digests));
    for (size_t i = 0; i < files.size(); ++i) {
      if (!listed[i]) CAIRN_RETURN_IF_ERROR(visit(files[i]));
    }
    return Status::Ok();
  }

  Result<fs::path> PathOf(std::string_view digest) const {
    if (!IsSha256Hex(digest)) return InvalidArgument("not a SHA-256 digest: " + std::string(digest));
    return BlobPath(root_, digest);
  }

  fs::path root_;
  std::unique_ptr<SmallBlobs> small_;
};

}  // namespace

Result<std::unique_ptr<ContentStore>> OpenLocalContentStore(const std::string& root) {
  fs::path dir(root);
  CAIRN_RETURN_IF_ERROR(MakeDirs(dir / "tmp"));
  // Temporary files of writers killed halfway are garbage: nothing refers to them.
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir / "tmp", ec)) fs::remove(entry.path(), ec);
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<SmallBlobs> small,
                         SmallBlobs::Open((dir / "small.db").string()));
  return std::unique_ptr<ContentStore>(std::make_unique<LocalContentStore>(dir, std::move(small)));
}

}  // namespace cairn::blob
