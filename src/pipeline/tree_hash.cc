#include "pipeline/tree_hash.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <iterator>
#include <thread>
#include <tuple>
#include <unordered_set>

#include "util/file.h"
#include "util/hash.h"
#include "util/parallel.h"
#include "util/utf8.h"

namespace cairn::pipeline {
namespace {

constexpr size_t kReadBuffer = 1 << 20;

Status FileError(std::string_view op, const std::string& path) {
  int err = errno;
  return Unavailable(std::string(op) + " " + PrintablePath(path) + ": " + std::strerror(err));
}

Status ChangedWhileHashing(const std::string& path) {
  return Unavailable(PrintablePath(path) +
                     " changed while it was being hashed; retry when nothing "
                     "writes to it");
}

bool SameContentStat(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino && a.st_size == b.st_size &&
         TimespecNanos(a.st_mtim) == TimespecNanos(b.st_mtim) && TimespecNanos(a.st_ctim) == TimespecNanos(b.st_ctim);
}

uint32_t FileMode(const struct stat& st) {
  return (st.st_mode & S_IXUSR) ? kModeExecutable : kModeFile;
}

std::string_view TypeName(mode_t mode) {
  if (S_ISFIFO(mode)) return "a fifo";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file, directory or symlink";
}

// A regular file the stat cache could not answer: its entry (path set, the rest to fill), how
// to open it, and its size at the walk (to hash large files first).
struct Job {
  FileEntry* entry;
  std::string full_path;
  int64_t size;
  bool follow;  // `path` itself, which may be a symlink to the file
};

class FileHasher {
 public:
  FileHasher(const HashOptions& options, int64_t start_nanos)
      : options_(options),
        start_nanos_(start_nanos),
        buffer_(std::make_unique_for_overwrite<char[]>(kReadBuffer)) {}

  // Reads the file and fills its entry's size, mode and sha256.
  Status Hash(const Job& job) {
    // O_NONBLOCK: should the file have been replaced by a fifo since the walk, opening it must
    // not wait for a writer; the fstat below then rejects it.
    int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (job.follow ? 0 : O_NOFOLLOW);
    int fd = ::open(job.full_path.c_str(), flags);
    if (fd < 0) {
      if (errno == ENOENT || errno == ELOOP) return ChangedWhileHashing(job.full_path);
      return FileError("open", job.full_path);
    }
    Status s = HashOpenFile(fd, job.full_path, job.entry);
    ::close(fd);
    return s;
  }

 private:
  Status HashOpenFile(int fd, const std::string& path, FileEntry* entry) {
    // The stat of the open file, not the walk's, is the one recorded: the file may have been
    // replaced since, and this stat was taken before any byte was read.
    struct stat st;
    if (::fstat(fd, &st) != 0) return FileError("stat", path);
    if (!S_ISREG(st.st_mode)) return ChangedWhileHashing(path);
    Sha256Hasher hasher;
    if (options_.read_method == ReadMethod::kMmap && st.st_size > 0) {
      void* map = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (map == MAP_FAILED) return FileError("mmap", path);
      ::madvise(map, static_cast<size_t>(st.st_size), MADV_SEQUENTIAL);
      const char* p = static_cast<const char*>(map);
      for (int64_t off = 0; off < st.st_size; off += kReadBuffer) {
        size_t n = static_cast<size_t>(std::min<int64_t>(kReadBuffer, st.st_size - off));
        hasher.Update(std::string_view(p + off, n));
      }
      ::munmap(map, static_cast<size_t>(st.st_size));
    } else {
      if (st.st_size > static_cast<off_t>(kReadBuffer)) {
        ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
      }
      // Reads exactly the size the stat reported; a file that grew or shrank meanwhile is caught
      // by the second fstat, which saves small files a last read(2) that would return 0.
      for (int64_t got = 0; got < st.st_size;) {
        size_t want = static_cast<size_t>(std::min<int64_t>(kReadBuffer, st.st_size - got));
        ssize_t n = ::read(fd, buffer_.get(), want);
        if (n < 0) {
          if (errno == EINTR) continue;
          return FileError("read", path);
        }
        if (n == 0) return ChangedWhileHashing(path);
        hasher.Update(std::string_view(buffer_.get(), static_cast<size_t>(n)));
        got += n;
      }
    }
    struct stat after;
    if (::fstat(fd, &after) != 0) return FileError("stat", path);
    if (!SameContentStat(st, after)) return ChangedWhileHashing(path);
    entry->size = st.st_size;
    entry->mode = FileMode(st);
    entry->sha256 = hasher.HexDigest();
    if (options_.cache != nullptr) options_.cache->Update(st, entry->sha256, start_nanos_);
    return Status::Ok();
  }

  const HashOptions& options_;
  const int64_t start_nanos_;
  std::unique_ptr<char[]> buffer_;
};

// ---------------------------------------------------------------------------------------------
// Walking a directory

Result<std::string> ReadLinkAt(int dir_fd, const char* name, const std::string& full_path,
                               int64_t size_hint) {
  std::string target(static_cast<size_t>(std::max<int64_t>(size_hint, 64)) + 1, '\0');
  for (;;) {
    ssize_t n = ::readlinkat(dir_fd, name, target.data(), target.size());
    if (n < 0) {
      if (errno == ENOENT || errno == EINVAL) return ChangedWhileHashing(full_path);
      return FileError("readlink", full_path);
    }
    if (static_cast<size_t>(n) < target.size()) {
      target.resize(static_cast<size_t>(n));
      return target;
    }
    if (target.size() > (1 << 20)) return ChangedWhileHashing(full_path);
    target.resize(target.size() * 2);
  }
}

struct DirCloser {
  void operator()(DIR* d) const { ::closedir(d); }
};

// Lists every regular file and symlink under a directory, on several threads (one directory at
// a time each; stat(2) dominates a tree the stat cache answers). Symlinks are hashed during the
// walk (their target is a few bytes); regular files the stat cache answers too; the others
// become Jobs.
class Walker {
 public:
  Walker(std::string root, StatCache* cache, int threads)
      : cache_(cache), threads_(threads), found_(static_cast<size_t>(threads)) {
    queue_.push_back({"", std::move(root)});
  }

  Status Run() {
    return RunOnThreads(threads_, [this](int t, const std::atomic<bool>& failed) {
      return Work(&found_[static_cast<size_t>(t)], failed);
    });
  }

  // After Run(): the files to read. They point into the entries, so hash them before
  // TakeEntries().
  std::vector<Job> TakeJobs() {
    std::vector<Job> jobs;
    for (Found& f : found_) std::move(f.jobs.begin(), f.jobs.end(), std::back_inserter(jobs));
    return jobs;
  }
  std::vector<FileEntry> TakeEntries() {
    size_t n = 0;
    for (const Found& f : found_) n += f.entries.size();
    std::vector<FileEntry> entries;
    entries.reserve(n);
    for (Found& f : found_) {
      std::move(f.entries.begin(), f.entries.end(), std::back_inserter(entries));
    }
    return entries;
  }

 private:
  struct Dir {
    std::string rel;   // "" for the root
    std::string full;  // rel joined to the root
  };
  struct Found {
    std::deque<FileEntry> entries;  // a deque: jobs keep pointers to its elements
    std::vector<Job> jobs;
  };

  Status Work(Found* found, const std::atomic<bool>& failed) {
    std::vector<Dir> subdirs;
    for (;;) {
      Dir dir;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return !queue_.empty() || pending_ == 0 || failed || stop_; });
        if (queue_.empty() || failed || stop_) return Status::Ok();
        dir = std::move(queue_.back());
        queue_.pop_back();
      }
      Status s = Scan(dir, found, &subdirs);
      std::lock_guard<std::mutex> lock(mu_);
      if (!s.ok()) {
        stop_ = true;  // wakes the others so that they return
        cv_.notify_all();
        return s;
      }
      pending_ += subdirs.size();
      for (Dir& d : subdirs) queue_.push_back(std::move(d));
      subdirs.clear();
      if (--pending_ == 0 || queue_.size() > 1) cv_.notify_all();
    }
  }

  Status Scan(const Dir& dir, Found* found, std::vector<Dir>* subdirs) {
    // The root was followed if it is a symlink; a subdirectory must still be the directory the
    // walk saw, not a symlink swapped in since.
    int fd = ::open(dir.full.c_str(),
                    O_RDONLY | O_DIRECTORY | O_CLOEXEC | (dir.rel.empty() ? 0 : O_NOFOLLOW));
    if (fd < 0) {
      if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR) {
        return ChangedWhileHashing(dir.full);
      }
      return FileError("open", dir.full);
    }
    std::unique_ptr<DIR, DirCloser> d(::fdopendir(fd));
    if (d == nullptr) {
      Status s = FileError("opendir", dir.full);
      ::close(fd);
      return s;
    }
    std::string prefix = dir.full;
    if (prefix.empty() || prefix.back() != '/') prefix += '/';
    for (;;) {
      errno = 0;
      struct dirent* de = ::readdir(d.get());
      if (de == nullptr) {
        if (errno != 0) return FileError("readdir", dir.full);
        return Status::Ok();
      }
      std::string_view name = de->d_name;
      if (name == "." || name == "..") continue;
      if (!IsValidUtf8(name)) {
        return InvalidArgument(PrintablePath(prefix + std::string(name)) +
                               ": the name is not valid UTF-8, which a manifest cannot record; "
                               "rename it");
      }
      std::string rel = dir.rel.empty() ? std::string(name) : dir.rel + "/" + std::string(name);
      struct stat st;
      if (::fstatat(::dirfd(d.get()), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) return ChangedWhileHashing(prefix + std::string(name));
        return FileError("stat", prefix + std::string(name));
      }
      if (S_ISREG(st.st_mode)) {
        std::optional<std::string> sha;
        if (cache_ != nullptr) sha = cache_->Lookup(st);
        if (sha) {
          found->entries.push_back({std::move(rel), st.st_size, FileMode(st), std::move(*sha)});
        } else {
          found->entries.push_back({std::move(rel), 0, 0, ""});
          found->jobs.push_back(
              {&found->entries.back(), prefix + std::string(name), st.st_size, false});
        }
      } else if (S_ISDIR(st.st_mode)) {
        subdirs->push_back({std::move(rel), prefix + std::string(name)});
      } else if (S_ISLNK(st.st_mode)) {
        std::string full = prefix + std::string(name);
        CAIRN_ASSIGN_OR_RETURN(std::string target,
                               ReadLinkAt(::dirfd(d.get()), de->d_name, full, st.st_size));
        int64_t size = static_cast<int64_t>(target.size());
        found->entries.push_back({std::move(rel), size, kModeSymlink, Sha256Hex(target)});
      } else {
        return InvalidArgument(PrintablePath(prefix + std::string(name)) + " is " +
                               std::string(TypeName(st.st_mode)) +
                               "; only regular files, directories and symlinks can be hashed");
      }
    }
  }

  StatCache* const cache_;
  const int threads_;
  std::vector<Found> found_;  // one per thread
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Dir> queue_;  // directories to scan
  size_t pending_ = 1;      // directories queued or being scanned
  bool stop_ = false;
};

// Hashes the jobs on up to `threads` workers, largest files first so that a big file does not
// start last and leave the other workers idle.
Status HashJobs(std::vector<Job>& jobs, const HashOptions& options, int threads,
                int64_t start_nanos) {
  std::sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) { return a.size > b.size; });
  std::atomic<size_t> next{0};
  int workers = static_cast<int>(std::min(static_cast<size_t>(threads), jobs.size()));
  return RunOnThreads(workers, [&](int, const std::atomic<bool>& failed) {
    FileHasher hasher(options, start_nanos);
    while (!failed.load(std::memory_order_relaxed)) {
      size_t i = next++;
      if (i >= jobs.size()) break;
      if (options.on_read) options.on_read(jobs[i].full_path, jobs[i].size);
      CAIRN_RETURN_IF_ERROR(hasher.Hash(jobs[i]));
    }
    return Status::Ok();
  });
}

int ThreadCount(const HashOptions& options) {
  return options.threads > 0 ? options.threads
                             : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// Sorts a directory's entries and names it by their manifest (when asked to).
void SealDirectory(const HashOptions& options, TreeHash* out) {
  out->is_directory = true;
  out->bytes = 0;
  for (const FileEntry& e : out->files) out->bytes += e.size;
  std::sort(out->files.begin(), out->files.end(),
            [](const FileEntry& a, const FileEntry& b) { return a.path < b.path; });
  if (options.name_directory) out->digest = Sha256Hex(ManifestJson(out->files));
}

bool PlainRelativePath(std::string_view path) {
  if (path.empty() || path.front() == '/' || path.find('\0') != std::string_view::npos) {
    return false;
  }
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    std::string_view part = path.substr(start, slash - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = slash + 1;
  }
  return true;
}

}  // namespace

Result<TreeHash> HashFiles(const std::string& root, const std::vector<std::string>& paths,
                           const HashOptions& options) {
  if (options.threads < 0) return InvalidArgument("threads must be >= 0");
  int64_t start_nanos = NowNanos(options.cache ? options.cache->clock() : SystemClock());
  std::vector<std::string> sorted = paths;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  const std::string prefix = root.empty() || root.back() == '/' ? root : root + "/";
  std::error_code ec;
  const std::filesystem::path real_root = std::filesystem::canonical(root, ec);
  if (ec) return NotFound(PrintablePath(root) + " does not exist");
  TreeHash out;
  out.files.reserve(sorted.size());
  std::vector<size_t> to_read;  // indexes into out.files
  for (const std::string& rel : sorted) {
    if (!PlainRelativePath(rel)) {
      return InvalidArgument(PrintablePath(rel) + " is not a relative path inside " +
                             PrintablePath(root));
    }
    if (!IsValidUtf8(rel)) {
      return InvalidArgument(PrintablePath(rel) +
                             ": the name is not valid UTF-8, which a manifest cannot record; "
                             "rename it");
    }
    const std::string full = prefix + rel;
    // Every directory on the way must be a real directory under the root.
    if (size_t slash = rel.rfind('/'); slash != std::string::npos) {
      std::filesystem::path parent = std::filesystem::canonical(prefix + rel.substr(0, slash), ec);
      if (ec) continue;  // gone
      auto [r, p] = std::mismatch(real_root.begin(), real_root.end(), parent.begin(), parent.end());
      if (r != real_root.end()) {
        return InvalidArgument(PrintablePath(rel) + " leads out of " + PrintablePath(root) +
                               " through a symlink");
      }
    }
    struct stat st;
    if (::lstat(full.c_str(), &st) != 0) {
      if (errno == ENOENT || errno == ENOTDIR) continue;
      return FileError("stat", full);
    }
    if (S_ISDIR(st.st_mode)) continue;
    if (S_ISLNK(st.st_mode)) {
      CAIRN_ASSIGN_OR_RETURN(std::string target, ReadLinkAt(AT_FDCWD, full.c_str(), full, st.st_size));
      out.files.push_back({rel, static_cast<int64_t>(target.size()), kModeSymlink,
                           Sha256Hex(target)});
      continue;
    }
    if (!S_ISREG(st.st_mode)) {
      return InvalidArgument(PrintablePath(full) + " is " + std::string(TypeName(st.st_mode)) +
                             "; only regular files, directories and symlinks can be hashed");
    }
    std::optional<std::string> sha;
    if (options.cache != nullptr) sha = options.cache->Lookup(st);
    if (sha) {
      out.files.push_back({rel, st.st_size, FileMode(st), std::move(*sha)});
    } else {
      out.files.push_back({rel, st.st_size, 0, ""});
      to_read.push_back(out.files.size() - 1);
    }
  }
  std::vector<Job> jobs;
  jobs.reserve(to_read.size());
  for (size_t i : to_read) {
    jobs.push_back({&out.files[i], prefix + out.files[i].path, out.files[i].size, false});
  }
  CAIRN_RETURN_IF_ERROR(HashJobs(jobs, options, ThreadCount(options), start_nanos));
  out.files_read = static_cast<int64_t>(jobs.size());
  SealDirectory(options, &out);
  return out;
}

Result<TreeHash> HashPath(const std::string& path, const HashOptions& options) {
  if (options.threads < 0) return InvalidArgument("threads must be >= 0");
  int threads = ThreadCount(options);
  // Taken before anything is stat'ed: every stat below is at least this recent (the racy rule).
  int64_t start_nanos = NowNanos(options.cache ? options.cache->clock() : SystemClock());
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) {
      return NotFound(PrintablePath(path) + " does not exist");
    }
    return FileError("stat", path);
  }
  TreeHash out;
  if (S_ISREG(st.st_mode)) {
    std::string name = std::filesystem::path(path).filename().string();
    if (!IsValidUtf8(name)) {
      return InvalidArgument(PrintablePath(path) + ": the name is not valid UTF-8");
    }
    out.files.push_back({std::move(name), 0, 0, ""});
    std::optional<std::string> sha;
    if (options.cache != nullptr) sha = options.cache->Lookup(st);
    if (sha) {
      out.files[0] = {out.files[0].path, st.st_size, FileMode(st), std::move(*sha)};
    } else {
      std::vector<Job> jobs = {{&out.files[0], path, st.st_size, true}};
      CAIRN_RETURN_IF_ERROR(HashJobs(jobs, options, 1, start_nanos));
      out.files_read = 1;
    }
  } else if (S_ISDIR(st.st_mode)) {
    out.is_directory = true;
    Walker walker(path, options.cache, threads);
    CAIRN_RETURN_IF_ERROR(walker.Run());
    std::vector<Job> jobs = walker.TakeJobs();
    CAIRN_RETURN_IF_ERROR(HashJobs(jobs, options, threads, start_nanos));
    out.files_read = static_cast<int64_t>(jobs.size());
    out.files = walker.TakeEntries();
  } else {
    return InvalidArgument(PrintablePath(path) + " is " + std::string(TypeName(st.st_mode)) +
                           "; only regular files, directories and symlinks can be hashed");
  }
  if (out.is_directory) {
    SealDirectory(options, &out);
  } else {
    out.bytes = out.files[0].size;
    out.digest = out.files[0].sha256;
  }
  return out;
}

}  // namespace cairn::pipeline
