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
#include <nlohmann/json.hpp>
#include <thread>
#include <tuple>
#include <unordered_set>

#include "util/file.h"
#include "util/hash.h"
#include "util/parallel.h"
#include "util/utf8.h"

namespace cairn::pipeline {
namespace {

using nlohmann::json;

constexpr size_t kReadBuffer = 1 << 20;
constexpr size_t kMaxPathBytes = 4096;  // PATH_MAX: no longer relative path can be opened
constexpr std::string_view kManifestHead = "{\"cairn_manifest\":1,\"entries\":[\n";
constexpr std::string_view kManifestTail = "]}\n";

// ---------------------------------------------------------------------------------------------
// Manifest

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

// For messages: the path with bytes that are not UTF-8 shown as U+FFFD.
std::string Printable(std::string_view path) {
  Utf8Decoder d;
  std::string out = d.Feed(path);
  out += d.Finish();
  return out;
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

// ---------------------------------------------------------------------------------------------
// Reading and hashing one file

int64_t NanosOf(const struct timespec& ts) {
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

int64_t NowNanos(Clock* clock) { return clock->NowMillis() * 1'000'000; }

Status FileError(std::string_view op, const std::string& path) {
  int err = errno;
  return Unavailable(std::string(op) + " " + Printable(path) + ": " + std::strerror(err));
}

Status ChangedWhileHashing(const std::string& path) {
  return Unavailable(Printable(path) +
                     " changed while it was being hashed; retry when nothing "
                     "writes to it");
}

bool SameContentStat(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino && a.st_size == b.st_size &&
         NanosOf(a.st_mtim) == NanosOf(b.st_mtim) && NanosOf(a.st_ctim) == NanosOf(b.st_ctim);
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
        return InvalidArgument(Printable(prefix + std::string(name)) +
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
        return InvalidArgument(Printable(prefix + std::string(name)) + " is " +
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
      CAIRN_RETURN_IF_ERROR(hasher.Hash(jobs[i]));
    }
    return Status::Ok();
  });
}

}  // namespace

// -----------------------------------------------------------------------------------------------
// Manifest

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
  // Only three levels are valid (the object, its entries array, an entry); deeper values are
  // discarded as they are parsed, so a hostile manifest cannot build a deep tree.
  bool too_deep = false;
  json::parser_callback_t limit_depth = [&too_deep](int depth, json::parse_event_t event, json&) {
    if (depth > 3) too_deep = true;
    return !too_deep;
  };
  json doc;
  try {
    doc = json::parse(text.begin(), text.end(), limit_depth, /*allow_exceptions=*/false);
  } catch (const json::exception& e) {
    return InvalidArgument(std::string("manifest: ") + e.what());
  }
  if (too_deep) return InvalidArgument("manifest: nests deeper than an entry's fields");
  if (doc.is_discarded()) return InvalidArgument("manifest: not valid JSON");
  if (!doc.is_object()) return InvalidArgument("manifest: not a JSON object");
  for (const auto& [key, value] : doc.items()) {
    if (key != "cairn_manifest" && key != "entries") {
      return InvalidArgument("manifest: unknown field \"" + Printable(key) + "\"");
    }
  }
  auto version = doc.find("cairn_manifest");
  if (version == doc.end() || !version->is_number_integer() || *version != 1) {
    return InvalidArgument("manifest: \"cairn_manifest\" must be 1 (the only version)");
  }
  auto list = doc.find("entries");
  if (list == doc.end() || !list->is_array()) {
    return InvalidArgument("manifest: \"entries\" must be an array");
  }
  std::vector<FileEntry> entries;
  entries.reserve(list->size());
  std::unordered_set<std::string_view> files;
  for (size_t i = 0; i < list->size(); ++i) {
    const json& item = (*list)[i];
    std::string where = "manifest entry " + std::to_string(i);
    if (!item.is_object()) return InvalidArgument(where + ": not an object");
    for (const auto& [key, value] : item.items()) {
      if (key != "path" && key != "size" && key != "mode" && key != "sha256") {
        return InvalidArgument(where + ": unknown field \"" + Printable(key) + "\"");
      }
    }
    FileEntry e;
    auto path = item.find("path");
    if (path == item.end() || !path->is_string()) {
      return InvalidArgument(where + ": \"path\" must be a string");
    }
    e.path = path->get_ref<const std::string&>();
    if (std::string why = BadRelativePath(e.path); !why.empty()) {
      return InvalidArgument(where + ": path \"" + Printable(e.path) + "\" " + why);
    }
    where += " (" + e.path + ")";
    auto size = item.find("size");
    if (size == item.end() || !size->is_number_integer() ||
        (size->is_number_unsigned() && size->get<uint64_t>() > INT64_MAX) ||
        size->get<int64_t>() < 0) {
      return InvalidArgument(where + ": \"size\" must be an integer >= 0");
    }
    e.size = size->get<int64_t>();
    auto mode = item.find("mode");
    std::string_view mode_text = mode != item.end() && mode->is_string()
                                     ? std::string_view(mode->get_ref<const std::string&>())
                                     : std::string_view();
    if (mode_text == "100644") {
      e.mode = kModeFile;
    } else if (mode_text == "100755") {
      e.mode = kModeExecutable;
    } else if (mode_text == "120000") {
      e.mode = kModeSymlink;
    } else {
      return InvalidArgument(where + ": \"mode\" must be \"100644\", \"100755\" or \"120000\"");
    }
    auto sha = item.find("sha256");
    if (sha == item.end() || !sha->is_string() ||
        !IsSha256Hex(sha->get_ref<const std::string&>())) {
      return InvalidArgument(where + ": \"sha256\" must be 64 lowercase hex digits");
    }
    e.sha256 = sha->get_ref<const std::string&>();
    if (!entries.empty() && !(entries.back().path < e.path)) {
      return InvalidArgument(where + ": entries must be sorted by path, each path once (after \"" +
                             entries.back().path + "\")");
    }
    entries.push_back(std::move(e));
  }
  // A path whose parent directory is itself listed as a file could not exist on disk.
  for (const FileEntry& e : entries) files.insert(e.path);
  for (const FileEntry& e : entries) {
    for (size_t slash = e.path.find('/'); slash != std::string::npos;
         slash = e.path.find('/', slash + 1)) {
      if (files.count(std::string_view(e.path).substr(0, slash))) {
        return InvalidArgument("manifest: \"" + e.path + "\" is inside \"" +
                               e.path.substr(0, slash) + "\", which is listed as a file");
      }
    }
  }
  return entries;
}

// -----------------------------------------------------------------------------------------------
// StatCache
//
// File layout (host byte order; a file written on a host of the other order fails the marker
// check and is ignored): "CAIRNSTC", u32 version 1, u32 0x01020304, u64 count, then count
// records of {u64 dev, u64 ino, i64 size, i64 mtime ns, i64 ctime ns, 32-byte SHA-256}, then the
// SHA-256 of all the bytes before it, so that a torn or damaged file is recognised and ignored.

namespace {

constexpr char kMagic[8] = {'C', 'A', 'I', 'R', 'N', 'S', 'T', 'C'};
constexpr uint32_t kCacheVersion = 1;
constexpr uint32_t kByteOrderMark = 0x01020304;
constexpr size_t kHeaderBytes = 8 + 4 + 4 + 8;
constexpr size_t kRecordBytes = 8 * 5 + 32;
constexpr size_t kDigestBytes = 32;

template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof v);
}

template <typename T>
T Get(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

bool HexToBytes(std::string_view hex, unsigned char* out) {
  if (!IsSha256Hex(hex)) return false;
  auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (size_t i = 0; i < 32; ++i) {
    out[i] = static_cast<unsigned char>(nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]));
  }
  return true;
}

std::string RawSha256(std::string_view bytes) {
  std::string hex = Sha256Hex(bytes);
  std::string raw(32, '\0');
  HexToBytes(hex, reinterpret_cast<unsigned char*>(raw.data()));
  return raw;
}

}  // namespace

size_t StatCache::KeyHash::operator()(const Key& k) const {
  uint64_t h = (k.ino ^ (k.dev << 40 | k.dev >> 24)) * 0x9e3779b97f4a7c15ULL;
  return static_cast<size_t>(h ^ h >> 29);
}

Result<std::unique_ptr<StatCache>> StatCache::Open(std::string path, Clock* clock) {
  std::unique_ptr<StatCache> cache(new StatCache(std::move(path), clock ? clock : SystemClock()));
  Result<std::string> bytes = ReadFile(cache->path_);
  if (!bytes.ok()) {
    if (bytes.status().code() == StatusCode::kNotFound) return cache;
    return bytes.status().WithContext("opening stat cache");
  }
  cache->Load(*bytes);
  return cache;
}

void StatCache::Load(std::string_view bytes) {
  if (bytes.size() < kHeaderBytes + kDigestBytes) return;
  const char* p = bytes.data();
  if (std::memcmp(p, kMagic, 8) != 0 || Get<uint32_t>(p + 8) != kCacheVersion ||
      Get<uint32_t>(p + 12) != kByteOrderMark) {
    return;
  }
  uint64_t count = Get<uint64_t>(p + 16);
  if (count > (bytes.size() - kHeaderBytes - kDigestBytes) / kRecordBytes ||
      bytes.size() != kHeaderBytes + count * kRecordBytes + kDigestBytes) {
    return;
  }
  std::string_view body = bytes.substr(0, bytes.size() - kDigestBytes);
  if (RawSha256(body) != bytes.substr(body.size())) return;
  for (Shard& shard : shards_) shard.entries.reserve(count / kShards * 5 / 4);
  for (uint64_t i = 0; i < count; ++i) {
    const char* r = p + kHeaderBytes + i * kRecordBytes;
    Entry e;
    e.size = Get<int64_t>(r + 16);
    e.mtime_nanos = Get<int64_t>(r + 24);
    e.ctime_nanos = Get<int64_t>(r + 32);
    std::memcpy(e.sha256, r + 40, 32);
    e.used = false;
    Key key{Get<uint64_t>(r), Get<uint64_t>(r + 8)};
    ShardOf(key).entries[key] = e;
  }
}

size_t StatCache::size() const {
  size_t n = 0;
  for (Shard& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mu);
    n += shard.entries.size();
  }
  return n;
}

bool StatCache::IsRacy(const struct stat& st, int64_t stat_time_nanos) {
  bool coarse = st.st_mtim.tv_nsec == 0 && st.st_ctim.tv_nsec == 0;
  int64_t window = coarse ? kCoarseRacyWindowNanos : kFineRacyWindowNanos;
  return std::max(NanosOf(st.st_mtim), NanosOf(st.st_ctim)) > stat_time_nanos - window;
}

std::optional<std::string> StatCache::Lookup(const struct stat& st) {
  // Entries are recorded only when not racy, so a matching one is sound; the check here guards
  // against a clock that went backwards since.
  if (IsRacy(st, NowNanos(clock_))) return std::nullopt;
  Key key{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
  Shard& shard = ShardOf(key);
  std::lock_guard<std::mutex> lock(shard.mu);
  auto it = shard.entries.find(key);
  if (it == shard.entries.end()) return std::nullopt;
  Entry& e = it->second;
  if (e.size != st.st_size || e.mtime_nanos != NanosOf(st.st_mtim) ||
      e.ctime_nanos != NanosOf(st.st_ctim)) {
    return std::nullopt;
  }
  e.used = true;
  return HexEncode(std::string_view(reinterpret_cast<const char*>(e.sha256), 32));
}

void StatCache::Update(const struct stat& st, std::string sha256, int64_t stat_time_nanos) {
  if (IsRacy(st, stat_time_nanos)) return;
  Entry e{st.st_size, NanosOf(st.st_mtim), NanosOf(st.st_ctim), {}, true};
  if (!HexToBytes(sha256, e.sha256)) return;
  Key key{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
  Shard& shard = ShardOf(key);
  std::lock_guard<std::mutex> lock(shard.mu);
  shard.entries[key] = e;
  dirty_ = true;
}

Status StatCache::Save() {
  std::lock_guard<std::mutex> save_lock(save_mu_);
  if (!dirty_.exchange(false)) return Status::Ok();
  std::string out;
  {
    std::unique_lock<std::mutex> locks[kShards];
    size_t total = 0;
    for (size_t i = 0; i < kShards; ++i) {
      locks[i] = std::unique_lock<std::mutex>(shards_[i].mu);
      total += shards_[i].entries.size();
    }
    if (total > max_entries_) {
      total = 0;
      for (Shard& shard : shards_) {
        std::erase_if(shard.entries, [](const auto& kv) { return !kv.second.used; });
        total += shard.entries.size();
      }
    }
    out.reserve(kHeaderBytes + total * kRecordBytes + kDigestBytes);
    out.append(kMagic, 8);
    Put<uint32_t>(&out, kCacheVersion);
    Put<uint32_t>(&out, kByteOrderMark);
    Put<uint64_t>(&out, total);
    // In inode order: Load() then allocates the entries in that order, and a walk, which meets
    // a directory's files roughly in inode order, finds them near each other in memory.
    std::vector<const std::pair<const Key, Entry>*> sorted;
    sorted.reserve(total);
    for (const Shard& shard : shards_) {
      for (const auto& kv : shard.entries) sorted.push_back(&kv);
    }
    std::sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) {
      return std::tie(a->first.dev, a->first.ino) < std::tie(b->first.dev, b->first.ino);
    });
    for (const auto* kv : sorted) {
      const auto& [key, e] = *kv;
      Put<uint64_t>(&out, key.dev);
      Put<uint64_t>(&out, key.ino);
      Put<int64_t>(&out, e.size);
      Put<int64_t>(&out, e.mtime_nanos);
      Put<int64_t>(&out, e.ctime_nanos);
      out.append(reinterpret_cast<const char*>(e.sha256), 32);
    }
  }
  out += RawSha256(out);
  std::filesystem::path parent = std::filesystem::path(path_).parent_path();
  Status s = parent.empty() ? Status::Ok() : MakeDirs(parent);
  if (s.ok()) s = WriteFileAtomic(path_, out).WithContext("saving stat cache");
  if (!s.ok()) dirty_ = true;  // still unsaved
  return s;
}

// -----------------------------------------------------------------------------------------------
// HashPath

Result<TreeHash> HashPath(const std::string& path, const HashOptions& options) {
  if (options.threads < 0) return InvalidArgument("threads must be >= 0");
  int threads = options.threads > 0
                    ? options.threads
                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // Taken before anything is stat'ed: every stat below is at least this recent (the racy rule).
  int64_t start_nanos = NowNanos(options.cache ? options.cache->clock() : SystemClock());
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) {
      return NotFound(Printable(path) + " does not exist");
    }
    return FileError("stat", path);
  }
  TreeHash out;
  if (S_ISREG(st.st_mode)) {
    std::string name = std::filesystem::path(path).filename().string();
    if (!IsValidUtf8(name)) {
      return InvalidArgument(Printable(path) + ": the name is not valid UTF-8");
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
    return InvalidArgument(Printable(path) + " is " + std::string(TypeName(st.st_mode)) +
                           "; only regular files, directories and symlinks can be hashed");
  }
  for (const FileEntry& e : out.files) out.bytes += e.size;
  if (out.is_directory) {
    std::sort(out.files.begin(), out.files.end(),
              [](const FileEntry& a, const FileEntry& b) { return a.path < b.path; });
    out.digest = Sha256Hex(ManifestJson(out.files));
  } else {
    out.digest = out.files[0].sha256;
  }
  return out;
}

}  // namespace cairn::pipeline
