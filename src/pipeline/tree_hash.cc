#include "pipeline/tree_hash.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>
#include <unordered_set>

#include "util/file.h"
#include "util/hash.h"
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
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\b': out->append("\\b"); break;
      case '\f': out->append("\\f"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
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
    case kModeExecutable: return "100755";
    case kModeSymlink: return "120000";
    default: return "100644";
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
  return Unavailable(Printable(path) + " changed while it was being hashed; retry when it is not "
                     "being written");
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

// A regular file waiting to be hashed: where its entry is, how to open it, and its stat from
// the walk (which the stat cache is asked about before the file is opened).
struct Job {
  size_t entry;
  std::string full_path;
  struct stat st;
  bool follow;  // `path` itself, which may be a symlink to the file
};

class FileHasher {
 public:
  FileHasher(const HashOptions& options, int64_t start_nanos)
      : options_(options),
        start_nanos_(start_nanos),
        buffer_(std::make_unique_for_overwrite<char[]>(kReadBuffer)) {}

  // Fills entry's size, mode and sha256; *read is set when the bytes were read.
  Status Hash(const Job& job, FileEntry* entry, bool* read) {
    *read = false;
    if (options_.cache != nullptr) {
      if (std::optional<std::string> sha = options_.cache->Lookup(job.st)) {
        entry->size = job.st.st_size;
        entry->mode = FileMode(job.st);
        entry->sha256 = std::move(*sha);
        return Status::Ok();
      }
    }
    // O_NONBLOCK: should the file have been replaced by a fifo since the walk, opening it must
    // not wait for a writer; the fstat below then rejects it.
    int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (job.follow ? 0 : O_NOFOLLOW);
    int fd = ::open(job.full_path.c_str(), flags);
    if (fd < 0) {
      if (errno == ENOENT || errno == ELOOP) return ChangedWhileHashing(job.full_path);
      return FileError("open", job.full_path);
    }
    Status s = HashOpenFile(fd, job.full_path, entry);
    ::close(fd);
    if (s.ok()) *read = true;
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
    int64_t got = 0;
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
      got = st.st_size;
    } else {
      if (st.st_size > static_cast<off_t>(kReadBuffer)) {
        ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
      }
      // Reads exactly the size the stat reported; a file that grew or shrank meanwhile is caught
      // by the second fstat, which saves small files a last read(2) that would return 0.
      while (got < st.st_size) {
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

// Collects every regular file (as a Job, its entry still without a hash) and every symlink
// (hashed here: its target is a few bytes) under `root`.
Status Walk(const std::string& root, std::vector<FileEntry>* entries, std::vector<Job>* jobs) {
  struct Pending {
    std::string rel;   // "" for the root
    std::string full;  // root-relative path joined to `root`
  };
  std::vector<Pending> stack;
  stack.push_back({"", root});
  while (!stack.empty()) {
    Pending dir = std::move(stack.back());
    stack.pop_back();
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
    for (;;) {
      errno = 0;
      struct dirent* de = ::readdir(d.get());
      if (de == nullptr) {
        if (errno != 0) return FileError("readdir", dir.full);
        break;
      }
      std::string_view name = de->d_name;
      if (name == "." || name == "..") continue;
      std::string rel = dir.rel.empty() ? std::string(name) : dir.rel + "/" + std::string(name);
      std::string full = dir.full;
      if (full.empty() || full.back() != '/') full += '/';
      full += name;
      if (!IsValidUtf8(name)) {
        return InvalidArgument(Printable(full) + ": the name is not valid UTF-8, which a " +
                               "manifest cannot record; rename it");
      }
      struct stat st;
      if (::fstatat(::dirfd(d.get()), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) return ChangedWhileHashing(full);
        return FileError("stat", full);
      }
      if (S_ISDIR(st.st_mode)) {
        stack.push_back({std::move(rel), std::move(full)});
      } else if (S_ISREG(st.st_mode)) {
        entries->push_back({std::move(rel), 0, 0, ""});
        jobs->push_back({entries->size() - 1, std::move(full), st, false});
      } else if (S_ISLNK(st.st_mode)) {
        CAIRN_ASSIGN_OR_RETURN(std::string target,
                               ReadLinkAt(::dirfd(d.get()), de->d_name, full, st.st_size));
        int64_t size = static_cast<int64_t>(target.size());
        entries->push_back({std::move(rel), size, kModeSymlink, Sha256Hex(target)});
      } else {
        return InvalidArgument(Printable(full) + " is " + std::string(TypeName(st.st_mode)) +
                               "; only regular files, directories and symlinks can be hashed");
      }
    }
  }
  return Status::Ok();
}

// Hashes the jobs on up to `threads` workers, largest files first so that a big file does not
// start last and leave the other workers idle. Returns the number of files read.
Result<int64_t> HashJobs(std::vector<Job>& jobs, std::vector<FileEntry>* entries,
                         const HashOptions& options, int threads, int64_t start_nanos) {
  std::sort(jobs.begin(), jobs.end(),
            [](const Job& a, const Job& b) { return a.st.st_size > b.st.st_size; });
  std::atomic<size_t> next{0};
  std::atomic<int64_t> files_read{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  Status first_error;
  auto work = [&] {
    FileHasher hasher(options, start_nanos);
    int64_t read_here = 0;
    while (!failed.load(std::memory_order_relaxed)) {
      size_t i = next++;
      if (i >= jobs.size()) break;
      bool read = false;
      Status s = hasher.Hash(jobs[i], &(*entries)[jobs[i].entry], &read);
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failed.exchange(true)) first_error = std::move(s);
        break;
      }
      if (read) ++read_here;
    }
    files_read += read_here;
  };
  size_t workers = std::min(static_cast<size_t>(threads), jobs.size());
  if (workers <= 1) {
    work();
  } else {
    std::vector<std::thread> pool;
    pool.reserve(workers);
    for (size_t i = 0; i < workers; ++i) pool.emplace_back(work);
    for (std::thread& t : pool) t.join();
  }
  if (failed) return first_error;
  return files_read.load();
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
  json::parser_callback_t limit_depth = [&too_deep](int depth, json::parse_event_t event,
                                                    json&) {
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
  return std::hash<uint64_t>()(k.ino * 0x9e3779b97f4a7c15ULL ^ k.dev);
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
  entries_.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    const char* r = p + kHeaderBytes + i * kRecordBytes;
    Entry e;
    e.size = Get<int64_t>(r + 16);
    e.mtime_nanos = Get<int64_t>(r + 24);
    e.ctime_nanos = Get<int64_t>(r + 32);
    std::memcpy(e.sha256, r + 40, 32);
    e.used = false;
    entries_[Key{Get<uint64_t>(r), Get<uint64_t>(r + 8)}] = e;
  }
}

size_t StatCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
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
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(Key{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)});
  if (it == entries_.end()) return std::nullopt;
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
  std::lock_guard<std::mutex> lock(mu_);
  entries_[Key{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)}] = e;
  dirty_ = true;
}

Status StatCache::Save() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!dirty_) return Status::Ok();
  if (entries_.size() > max_entries_) {
    std::erase_if(entries_, [](const auto& kv) { return !kv.second.used; });
  }
  std::string out;
  out.reserve(kHeaderBytes + entries_.size() * kRecordBytes + kDigestBytes);
  out.append(kMagic, 8);
  Put<uint32_t>(&out, kCacheVersion);
  Put<uint32_t>(&out, kByteOrderMark);
  Put<uint64_t>(&out, entries_.size());
  for (const auto& [key, e] : entries_) {
    Put<uint64_t>(&out, key.dev);
    Put<uint64_t>(&out, key.ino);
    Put<int64_t>(&out, e.size);
    Put<int64_t>(&out, e.mtime_nanos);
    Put<int64_t>(&out, e.ctime_nanos);
    out.append(reinterpret_cast<const char*>(e.sha256), 32);
  }
  out += RawSha256(out);
  std::filesystem::path parent = std::filesystem::path(path_).parent_path();
  if (!parent.empty()) CAIRN_RETURN_IF_ERROR(MakeDirs(parent));
  CAIRN_RETURN_IF_ERROR(WriteFileAtomic(path_, out).WithContext("saving stat cache"));
  dirty_ = false;
  return Status::Ok();
}

// -----------------------------------------------------------------------------------------------
// HashPath

Result<TreeHash> HashPath(const std::string& path, const HashOptions& options) {
  if (options.threads < 0) return InvalidArgument("threads must be >= 0");
  int threads = options.threads > 0 ? options.threads
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
  std::vector<Job> jobs;
  if (S_ISREG(st.st_mode)) {
    std::string name = std::filesystem::path(path).filename().string();
    if (!IsValidUtf8(name)) {
      return InvalidArgument(Printable(path) + ": the name is not valid UTF-8");
    }
    out.files.push_back({std::move(name), 0, 0, ""});
    jobs.push_back({0, path, st, true});
  } else if (S_ISDIR(st.st_mode)) {
    out.is_directory = true;
    CAIRN_RETURN_IF_ERROR(Walk(path, &out.files, &jobs));
  } else {
    return InvalidArgument(Printable(path) + " is " + std::string(TypeName(st.st_mode)) +
                           "; only regular files, directories and symlinks can be hashed");
  }
  CAIRN_ASSIGN_OR_RETURN(out.files_read, HashJobs(jobs, &out.files, options, threads, start_nanos));
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
