#include "data/dataset_ops.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "pipeline/stat_cache.h"
#include "pipeline/tree_hash.h"
#include "util/file.h"
#include "util/hash.h"
#include "util/parallel.h"

namespace cairn::data {
namespace {

namespace fs = std::filesystem;
using core::FileEntry;

std::string CacheRoot(const std::string& given) { return given.empty() ? DataCacheDir() : given; }

fs::path BlobPath(const std::string& cache, std::string_view digest) {
  return fs::path(cache) / "blobs" / std::string(digest.substr(0, 2)) /
         std::string(digest.substr(2));
}

Result<std::unique_ptr<pipeline::StatCache>> OpenStatCache(const std::string& cache) {
  CAIRN_RETURN_IF_ERROR(MakeDirs(cache));
  return pipeline::StatCache::Open((fs::path(cache) / "stat-cache").string());
}

int Threads(int threads) { return threads > 0 ? threads : CoreCount(); }

// Runs `work(via, i, stop)` for i in [0, n) on `threads` connections of their own, each taking
// the next i as it finishes one; the first failure sets `stop` and no further i starts.
using ConnectionWork =
    std::function<Status(client::TrackingClient&, size_t, const std::atomic<bool>& stop)>;
Status OnConnections(DatasetClient& client, size_t n, int threads, const ConnectionWork& work) {
  if (n == 0) return Status::Ok();
  std::atomic<size_t> next{0};
  const int workers =
      static_cast<int>(std::min<size_t>(n, static_cast<size_t>(std::max(1, threads))));
  return RunOnThreads(workers, [&](int, const std::atomic<bool>& stop) -> Status {
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<client::TrackingClient> via, client.Connect());
    for (size_t i = next++; i < n && !stop; i = next++) {
      CAIRN_RETURN_IF_ERROR(work(*via, i, stop));
    }
    return Status::Ok();
  });
}

// Reports progress at most every 100 ms, and once at the end of a phase.
class Reporter {
 public:
  Reporter(const ProgressFn& fn, const char* phase, int64_t total) : fn_(fn) {
    p_.phase = phase;
    p_.total = total;
  }
  void Add(int64_t files, int64_t bytes) {
    if (!fn_) return;
    std::lock_guard lock(mu_);
    p_.done += files;
    p_.bytes += bytes;
    const auto now = std::chrono::steady_clock::now();
    if (p_.done == p_.total || now - last_ > std::chrono::milliseconds(100)) {
      last_ = now;
      fn_(p_);
    }
  }

 private:
  const ProgressFn& fn_;
  Progress p_;
  std::mutex mu_;
  std::chrono::steady_clock::time_point last_{};
};

std::string BaseName(const std::string& path) {
  fs::path p = fs::path(path).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

// Writes `from` (a cached blob) to `to` as a new file: a hard link when `link` and the file
// system allows it, else a reflink or a copy, with `mode`'s permissions.
Status Place(const fs::path& from, const fs::path& to, uint32_t mode, bool link) {
  CAIRN_RETURN_IF_ERROR(MakeDirs(to.parent_path()));
  if (::unlink(to.c_str()) != 0 && errno != ENOENT) return ErrnoStatus("unlink", to);
  if (link && mode == core::kModeFile && ::link(from.c_str(), to.c_str()) == 0) {
    return Status::Ok();
  }
  const fs::path tmp = TempPathFor(to);
  const int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return ErrnoStatus("open", from);
  const int out = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                         mode == core::kModeExecutable ? 0755 : 0644);
  if (out < 0) {
    ::close(in);
    return ErrnoStatus("create", tmp);
  }
  Status s = Status::Ok();
  if (::ioctl(out, FICLONE, in) != 0) {
    char buf[1 << 16];
    for (;;) {
      const ssize_t n = ::read(in, buf, sizeof buf);
      if (n == 0) break;
      if (n < 0) {
        if (errno == EINTR) continue;
        s = ErrnoStatus("read", from);
        break;
      }
      s = WriteAll(out, std::string_view(buf, static_cast<size_t>(n)), tmp);
      if (!s.ok()) break;
    }
  }
  ::close(in);
  if (::close(out) != 0 && s.ok()) s = ErrnoStatus("close", tmp);
  if (s.ok() && ::rename(tmp.c_str(), to.c_str()) != 0) s = ErrnoStatus("rename", to);
  if (!s.ok()) ::unlink(tmp.c_str());
  return s;
}

// Large files are sent while they are hashed rather than after: the tree hasher reads the
// largest first, and as it starts one, the same file goes to the server on a connection of its
// own (POST datasets/blobs), which names the bytes by the digest it computes. Once every digest
// is known, the sends of blobs the server held already are called off, so such a file costs at
// most what was sent while it was hashed; the others have a head start of the whole hashing.
class EarlySends {
 public:
  static constexpr int64_t kFromBytes = 64 << 20;

  EarlySends(DatasetClient& client, int slots) : client_(client), slots_(std::max(1, slots)) {}
  ~EarlySends() {
    for (auto& [path, send] : sends_) send->cancel = true;
    for (auto& [path, send] : sends_) {
      if (send->thread.joinable()) send->thread.join();
    }
  }

  // The tree hasher's hook: starts sending `path` when it is large and fewer than `slots`
  // sends are under way.
  void Start(const std::string& path, int64_t size) {
    if (size < kFromBytes) return;
    std::lock_guard lock(mu_);
    if (active_ >= slots_ || sends_.count(path) != 0) return;
    ++active_;
    auto send = std::make_unique<Send>();
    Send* raw = send.get();
    raw->thread = std::thread([this, raw, path] {
      Result<std::unique_ptr<client::TrackingClient>> via = client_.Connect();
      Result<std::string> digest = via.ok() ? client_.SendUnnamedBlob(**via, path, &raw->cancel)
                                            : Result<std::string>(via.status());
      std::lock_guard lock(mu_);
      raw->digest = std::move(digest);
      raw->finished = true;
      --active_;
      finished_.notify_all();
    });
    sends_.emplace(path, std::move(send));
  }

  // After hashing. Calls off the sends of every file but those in `needed`, and returns the
  // paths of those that had already delivered `digest_of(path)` (the server then held the bytes
  // because of them).
  std::vector<std::string> KeepOnly(
      const std::unordered_set<std::string>& needed,
      const std::function<std::string(const std::string& path)>& digest_of) {
    std::vector<std::string> delivered;
    std::lock_guard lock(mu_);
    for (auto& [path, send] : sends_) {
      if (needed.count(path) != 0) continue;
      send->cancel = true;
      if (send->finished && send->digest.ok() && *send->digest == digest_of(path)) {
        delivered.push_back(path);
      }
    }
    return delivered;
  }

  // After hashing. Waits for the send of `path`, if one was started, calling it off once
  // `stop` is set: true when the server now holds exactly the bytes whose SHA-256 is `digest`.
  bool Delivered(const std::string& path, const std::string& digest,
                 const std::atomic<bool>& stop) {
    auto it = sends_.find(path);
    if (it == sends_.end()) return false;
    Send& send = *it->second;
    std::unique_lock lock(mu_);
    while (!send.finished) {
      if (stop) send.cancel = true;
      finished_.wait_for(lock, std::chrono::milliseconds(100));
    }
    return send.digest.ok() && *send.digest == digest;
  }

 private:
  struct Send {
    std::thread thread;
    std::atomic<bool> cancel{false};
    bool finished = false;  // under mu_
    Result<std::string> digest = Unavailable("not sent");
  };

  DatasetClient& client_;
  const int slots_;
  std::mutex mu_;
  std::condition_variable finished_;
  int active_ = 0;
  std::unordered_map<std::string, std::unique_ptr<Send>> sends_;
};

// A record the cache keeps (a manifest, a directory's state): worth keeping, not worth an
// fsync.
Status WriteCacheFile(const fs::path& path, std::string_view bytes) {
  CAIRN_RETURN_IF_ERROR(MakeDirs(path.parent_path()));
  return WriteFileAtomic(path, bytes, Sync::kNoSync);
}

// A file's identity on its file system.
struct Inode {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const Inode&) const = default;
};

// Fetches the blob of `f` into the cache, checked against its digest as it arrives, read-only;
// *fetched is the cached file's identity.
Status FetchBlob(DatasetClient& client, client::TrackingClient& via, const core::DataVersion& v,
                 const FileEntry& f, const std::string& cache, Inode* fetched) {
  const fs::path dest = BlobPath(cache, f.sha256);
  CAIRN_RETURN_IF_ERROR(MakeDirs(dest.parent_path()));
  const fs::path tmp = TempPathFor(dest);
  std::string got;
  Status s = client.FetchFile(via, v, f.path, tmp.string(), &got);
  if (s.ok() && got != f.sha256) {
    s = FailedPrecondition("the server sent bytes for " + f.path + " that hash to " + got +
                           ", not " + f.sha256);
  }
  if (s.ok() && ::chmod(tmp.c_str(), 0444) != 0) s = ErrnoStatus("chmod", tmp);
  struct stat st {};
  if (s.ok() && ::stat(tmp.c_str(), &st) != 0) s = ErrnoStatus("stat", tmp);
  if (s.ok() && ::rename(tmp.c_str(), dest.c_str()) != 0) s = ErrnoStatus("rename", dest);
  if (!s.ok()) ::unlink(tmp.c_str());
  if (s.ok()) *fetched = Inode{st.st_dev, st.st_ino};
  return s;
}

// What a directory last received from `cairn data get`: kept in the cache, keyed by the
// directory's absolute path.
struct TargetState {
  std::string name;
  int64_t version = 0;
  std::string digest;
};

fs::path StatePath(const std::string& cache, const fs::path& dir) {
  return fs::path(cache) / "targets" / (Sha256Hex(dir.string()) + ".json");
}

fs::path ManifestCachePath(const std::string& cache, std::string_view digest) {
  return fs::path(cache) / "manifests" / (std::string(digest) + ".json");
}

std::optional<TargetState> ReadState(const fs::path& path) {
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  TargetState s{j.value("name", std::string()), j.value("version", int64_t{0}),
                j.value("digest", std::string())};
  if (!IsSha256Hex(s.digest)) return std::nullopt;
  return s;
}

// The files now in `dir` (none when it does not exist).
Result<std::vector<FileEntry>> CurrentFiles(const fs::path& dir, int threads,
                                            pipeline::StatCache* cache) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return std::vector<FileEntry>();
  if (!fs::is_directory(dir, ec)) return InvalidArgument(dir.string() + " is not a directory");
  pipeline::HashOptions options;
  options.threads = Threads(threads);
  options.cache = cache;
  CAIRN_ASSIGN_OR_RETURN(pipeline::TreeHash h, pipeline::HashPath(dir.string(), options));
  return std::move(h.files);
}

// Removes `path` and then each parent directory up to `top` that it leaves empty.
void RemoveAndPrune(const fs::path& top, const fs::path& path) {
  std::error_code ec;
  fs::remove(path, ec);
  for (fs::path p = path.parent_path(); p != top && p.string().size() > top.string().size();
       p = p.parent_path()) {
    if (!fs::is_empty(p, ec) || ec) break;
    fs::remove(p, ec);
  }
}

}  // namespace

std::string DataCacheDir() {
  if (const char* dir = std::getenv("CAIRN_DATA_CACHE"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return (fs::path(xdg) / "cairn" / "data").string();
  }
  const char* home = std::getenv("HOME");
  return (fs::path(home != nullptr && *home != '\0' ? home : "/tmp") / ".cache" / "cairn" / "data")
      .string();
}

Result<std::vector<FileEntry>> CollectFiles(const std::vector<std::string>& paths, int threads,
                                            const std::string& cache_dir,
                                            std::vector<std::string>* local_paths,
                                            int64_t* files_read, const ReadHook& on_read) {
  if (paths.empty()) return InvalidArgument("name at least one file or directory to add");
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<pipeline::StatCache> cache,
                         OpenStatCache(CacheRoot(cache_dir)));
  pipeline::HashOptions options;
  options.threads = Threads(threads);
  options.cache = cache.get();
  options.on_read = on_read;
  options.name_directory = false;  // the version's manifest names the files
  std::error_code ec;
  const bool one_dir = paths.size() == 1 && fs::is_directory(paths[0], ec);
  std::vector<std::pair<FileEntry, std::string>> all;  // entry, local path
  std::unordered_set<std::string> names;
  *files_read = 0;
  for (const std::string& p : paths) {
    Result<pipeline::TreeHash> h = pipeline::HashPath(p, options);
    if (!h.ok()) return h.status();
    *files_read += h->files_read;
    const std::string base = BaseName(p);
    if (!one_dir && !names.insert(base).second) {
      return InvalidArgument("two of the paths are named " + base +
                             ": a version holds each under its base name");
    }
    const std::string dir = p.ends_with('/') ? p : p + "/";
    all.reserve(all.size() + h->files.size());
    for (FileEntry& f : h->files) {
      std::string local = h->is_directory ? dir + f.path : p;
      if (f.mode == core::kModeSymlink) {
        return InvalidArgument(local +
                               " is a symbolic link: a dataset holds regular files; "
                               "copy what it points to instead");
      }
      if (!one_dir && h->is_directory) f.path = base + "/" + f.path;
      all.emplace_back(std::move(f), std::move(local));
    }
  }
  // One directory's files come sorted already.
  auto by_path = [](const auto& a, const auto& b) { return a.first.path < b.first.path; };
  if (!std::is_sorted(all.begin(), all.end(), by_path)) std::sort(all.begin(), all.end(), by_path);
  std::vector<FileEntry> entries;
  entries.reserve(all.size());
  local_paths->clear();
  for (auto& [entry, local] : all) {
    entries.push_back(std::move(entry));
    local_paths->push_back(std::move(local));
  }
  if (Status s = cache->Save(); !s.ok()) {
    // A cache that cannot be saved costs a re-read next time, nothing else.
    (void)s;
  }
  return entries;
}

Result<AddResult> AddVersion(DatasetClient& client, const std::string& name,
                             const std::vector<std::string>& paths, const AddOptions& options) {
  CAIRN_RETURN_IF_ERROR(core::ValidateDatasetName(name));
  const std::string cache = CacheRoot(options.cache_dir);
  AddResult out;
  std::vector<std::string> local;
  if (options.progress) options.progress(Progress{"hashing", 0, 0, 0});
  EarlySends early(client, options.transfers);
  CAIRN_ASSIGN_OR_RETURN(
      std::vector<FileEntry> files,
      CollectFiles(paths, options.threads, cache, &local, &out.files_read,
                   [&early](const std::string& path, int64_t size) { early.Start(path, size); }));
  out.files = static_cast<int64_t>(files.size());
  for (const FileEntry& f : files) out.bytes += f.size;

  // The manifest names the version; it goes to the server like any blob.
  const std::string manifest = core::ManifestJson(files);
  const std::string digest = Sha256Hex(manifest);
  const fs::path manifest_path = ManifestCachePath(cache, digest);
  CAIRN_RETURN_IF_ERROR(WriteCacheFile(manifest_path, manifest));

  // The latest version holding exactly these files: nothing to send or add.
  // (A dataset not there yet, or one the caller may not read: the server decides below.)
  Result<core::DataVersion> latest = client.Get(name, 0);
  if (!latest.ok() && latest.status().code() != StatusCode::kNotFound &&
      latest.status().code() != StatusCode::kPermissionDenied) {
    return latest.status();
  }
  if (latest.ok() && latest->digest == digest) {
    out.created = CreatedVersion{*latest, true};
    return out;
  }

  // The blobs the latest version holds stay on the server, and a caller who may read the
  // dataset may name them: a file at the same path with the same bytes as there is not asked
  // about. The latest version's manifest is in the cache when this machine made or fetched it;
  // otherwise every blob is asked about. Both lists are sorted by path: one merge pairs them.
  std::vector<FileEntry> before;
  if (latest.ok()) {
    Result<std::string> text = ReadFile(ManifestCachePath(cache, latest->digest));
    Result<std::vector<FileEntry>> parsed =
        text.ok() ? core::ParseManifestJson(*text) : Result<std::vector<FileEntry>>(text.status());
    if (parsed.ok()) before = std::move(*parsed);
  }
  std::unordered_map<std::string_view, size_t> first;  // digest asked about -> a file with it
  std::vector<std::string> digests;
  std::vector<std::string_view> all;  // every file's digest, to count the distinct ones
  all.reserve(files.size());
  size_t b = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    const FileEntry& f = files[i];
    all.push_back(f.sha256);
    while (b < before.size() && before[b].path < f.path) ++b;
    if (b < before.size() && before[b].path == f.path && before[b].sha256 == f.sha256) continue;
    if (first.emplace(f.sha256, i).second) digests.push_back(f.sha256);
  }
  std::sort(all.begin(), all.end());
  const int64_t distinct = std::unique(all.begin(), all.end()) - all.begin();
  digests.push_back(digest);
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> missing, client.Missing(name, digests));
  std::unordered_set<std::string> needed;
  for (const std::string& d : missing) {
    if (auto it = first.find(d); it != first.end()) needed.insert(local[it->second]);
  }
  // A send that finished before the question was answered made its blob held: it was sent.
  std::unordered_map<std::string, size_t> file_at;  // local path -> index, of early sends only
  const std::vector<std::string> delivered = early.KeepOnly(needed, [&](const std::string& path) {
    if (file_at.empty()) {
      for (size_t i = 0; i < files.size(); ++i) file_at.emplace(local[i], i);
    }
    auto it = file_at.find(path);
    return it == file_at.end() ? std::string() : files[it->second].sha256;
  });
  int64_t delivered_bytes = 0;
  for (const std::string& path : delivered) delivered_bytes += files[file_at.at(path)].size;

  std::atomic<int64_t> sent_bytes{delivered_bytes};
  Reporter report(options.progress, "sending", static_cast<int64_t>(missing.size()));
  CAIRN_RETURN_IF_ERROR(OnConnections(
      client, missing.size(), options.transfers,
      [&](client::TrackingClient& via, size_t i, const std::atomic<bool>& stop) -> Status {
        const std::string& d = missing[i];
        auto it = first.find(d);
        const std::string path = it == first.end() ? manifest_path.string() : local[it->second];
        const int64_t size =
            it == first.end() ? static_cast<int64_t>(manifest.size()) : files[it->second].size;
        Status s = it != first.end() && early.Delivered(path, d, stop)
                       ? Status::Ok()
                       : client.SendBlob(via, d, path);
        if (!s.ok() && s.code() == StatusCode::kInvalidArgument && it != first.end()) {
          return s.WithContext(path +
                               " changed while it was being added; run `cairn data add` "
                               "again");
        }
        CAIRN_RETURN_IF_ERROR(s);
        sent_bytes += size;
        report.Add(1, size);
        return Status::Ok();
      }));
  out.blobs = distinct + 1;
  out.blobs_sent = static_cast<int64_t>(missing.size() + delivered.size());
  out.bytes_sent = sent_bytes;
  CAIRN_ASSIGN_OR_RETURN(out.created, client.CreateVersion(name, digest, options.message,
                                                           options.metadata, options.run_id));
  return out;
}

Result<GetResult> GetVersion(DatasetClient& client, const std::string& name, int64_t version,
                             const std::string& dir_text, const GetOptions& options) {
  const std::string cache = CacheRoot(options.cache_dir);
  GetResult out;
  CAIRN_ASSIGN_OR_RETURN(out.version, client.Get(name, version));
  const core::DataVersion& v = out.version;
  CAIRN_ASSIGN_OR_RETURN(std::vector<FileEntry> files, client.Files(v));
  out.files = static_cast<int64_t>(files.size());
  for (const FileEntry& f : files) {
    if (f.mode == core::kModeSymlink) {
      return FailedPrecondition("the server listed a symbolic link in " +
                                core::DataRefText(v.name, v.version) + " (" + f.path +
                                "); a dataset holds regular files only");
    }
  }
  CAIRN_RETURN_IF_ERROR(
      WriteCacheFile(ManifestCachePath(cache, v.digest), core::ManifestJson(files)));

  std::error_code ec;
  const fs::path dir = fs::absolute(dir_text, ec).lexically_normal();
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<pipeline::StatCache> stat_cache, OpenStatCache(cache));
  CAIRN_ASSIGN_OR_RETURN(std::vector<FileEntry> current,
                         CurrentFiles(dir, options.threads, stat_cache.get()));
  std::unordered_map<std::string, const FileEntry*> now;
  for (const FileEntry& f : current) now[f.path] = &f;

  // The files to write, and the blobs to fetch for them.
  std::vector<const FileEntry*> place;
  std::vector<const FileEntry*> fetch;
  std::unordered_set<std::string> fetching;
  for (const FileEntry& f : files) {
    auto it = now.find(f.path);
    if (it != now.end() && it->second->sha256 == f.sha256 && it->second->mode == f.mode) continue;
    place.push_back(&f);
    if (!fs::exists(BlobPath(cache, f.sha256), ec) && fetching.insert(f.sha256).second) {
      fetch.push_back(&f);
    }
  }
  // Blobs fetched now were checked as they arrived: a file linked to one needs no check.
  std::mutex fresh_mu;
  std::unordered_map<std::string, Inode> fresh;  // digest -> the cached file
  auto fetch_all = [&](const std::vector<const FileEntry*>& list) -> Status {
    Reporter report(options.progress, "fetching", static_cast<int64_t>(list.size()));
    std::atomic<int64_t> bytes{0};
    CAIRN_RETURN_IF_ERROR(OnConnections(client, list.size(), options.transfers,
                                        [&](client::TrackingClient& via, size_t i,
                                            const std::atomic<bool>&) -> Status {
                                          Inode fetched;
                                          CAIRN_RETURN_IF_ERROR(
                                              FetchBlob(client, via, v, *list[i], cache, &fetched));
                                          {
                                            std::lock_guard lock(fresh_mu);
                                            fresh[list[i]->sha256] = fetched;
                                          }
                                          bytes += list[i]->size;
                                          report.Add(1, list[i]->size);
                                          return Status::Ok();
                                        }));
    out.fetched += static_cast<int64_t>(list.size());
    out.bytes_fetched += bytes;
    return Status::Ok();
  };
  // The files the version the directory held before had, and this one lacks, go; others stay.
  std::unordered_set<std::string> wanted;
  for (const FileEntry& f : files) wanted.insert(f.path);
  const fs::path state_path = StatePath(cache, dir);
  std::unordered_map<std::string, std::string> before;  // path -> digest the old version had
  if (std::optional<TargetState> state = ReadState(state_path)) {
    Result<std::string> old = ReadFile(ManifestCachePath(cache, state->digest));
    Result<std::vector<FileEntry>> old_files =
        old.ok() ? core::ParseManifestJson(*old) : Result<std::vector<FileEntry>>(old.status());
    if (old_files.ok()) {
      for (const FileEntry& f : *old_files) before[f.path] = f.sha256;
    }
  }
  for (const FileEntry& f : current) {
    if (wanted.count(f.path) != 0) continue;
    auto it = before.find(f.path);
    if (it != before.end() && it->second == f.sha256) {
      RemoveAndPrune(dir, dir / f.path);
      ++out.removed;
    } else {
      out.extra.push_back(f.path);
    }
  }

  CAIRN_RETURN_IF_ERROR(fetch_all(fetch));
  CAIRN_RETURN_IF_ERROR(MakeDirs(dir));
  // No file goes through a symbolic link inside the directory: a path the server lists must
  // land where it says.
  auto through_link = [&](const std::string& rel) {
    fs::path p = dir;
    size_t start = 0;
    for (size_t slash = rel.find('/'); slash != std::string::npos; slash = rel.find('/', start)) {
      p /= rel.substr(start, slash - start);
      start = slash + 1;
      if (fs::is_symlink(p, ec)) return true;
    }
    return false;
  };
  std::unordered_set<std::string> checked;  // paths linked to a blob fetched now
  for (const FileEntry* f : place) {
    const fs::path dest = dir / f->path;
    if (through_link(f->path)) {
      return FailedPrecondition(dest.string() + " lies under a symbolic link in " + dir.string() +
                                "; remove the link or pick another directory");
    }
    if (fs::is_directory(dest, ec)) {
      return FailedPrecondition(dest.string() + " is a directory, where " +
                                core::DataRefText(v.name, v.version) + " has a file");
    }
    CAIRN_RETURN_IF_ERROR(Place(BlobPath(cache, f->sha256), dest, f->mode, !options.copy));
    struct stat st {};
    auto it = fresh.find(f->sha256);
    if (it != fresh.end() && ::lstat(dest.c_str(), &st) == 0 &&
        it->second == Inode{st.st_dev, st.st_ino}) {
      checked.insert(f->path);
    }
  }
  out.placed = static_cast<int64_t>(place.size());

  // Every other file checked in place; one that does not match is fetched again, once.
  std::vector<FileEntry> to_check;
  std::vector<std::string> paths;
  for (const FileEntry& f : files) {
    if (checked.count(f.path) != 0) continue;
    to_check.push_back(f);
    paths.push_back(f.path);
  }
  pipeline::HashOptions hash_options;
  hash_options.threads = Threads(options.threads);
  hash_options.cache = stat_cache.get();
  for (int round = 0;; ++round) {
    if (options.progress) options.progress(Progress{"checking", 0, out.files, 0});
    CAIRN_ASSIGN_OR_RETURN(pipeline::TreeHash h,
                           pipeline::HashFiles(dir.string(), paths, hash_options));
    const core::ManifestDiff d = core::DiffManifests(to_check, h.files);
    std::vector<const FileEntry*> bad;
    std::unordered_map<std::string, const FileEntry*> by_path;
    for (const FileEntry& f : files) by_path[f.path] = &f;
    for (const FileEntry& f : d.removed) bad.push_back(by_path[f.path]);
    for (const auto& [want, got] : d.changed) bad.push_back(by_path[want.path]);
    if (bad.empty()) break;
    if (round > 0) {
      return FailedPrecondition(dir.string() + "/" + bad[0]->path + " does not match " +
                                core::DataRefText(v.name, v.version) +
                                " after being fetched again");
    }
    std::vector<const FileEntry*> again;
    std::unordered_set<std::string> seen;
    for (const FileEntry* f : bad) {
      ::unlink(BlobPath(cache, f->sha256).c_str());
      ::unlink((dir / f->path).c_str());
      if (seen.insert(f->sha256).second) again.push_back(f);
    }
    CAIRN_RETURN_IF_ERROR(fetch_all(again));
    for (const FileEntry* f : bad) {
      CAIRN_RETURN_IF_ERROR(
          Place(BlobPath(cache, f->sha256), dir / f->path, f->mode, !options.copy));
    }
    out.refetched += static_cast<int64_t>(bad.size());
  }

  nlohmann::json state = {
      {"dir", dir.string()}, {"name", v.name}, {"version", v.version}, {"digest", v.digest}};
  CAIRN_RETURN_IF_ERROR(WriteCacheFile(state_path, state.dump()));
  (void)stat_cache->Save();
  return out;
}

Result<VerifyResult> VerifyVersion(DatasetClient& client, const std::string& name, int64_t version,
                                   const std::string& dir, int threads,
                                   const std::string& cache_dir) {
  VerifyResult out;
  CAIRN_ASSIGN_OR_RETURN(out.version, client.Get(name, version));
  CAIRN_ASSIGN_OR_RETURN(std::vector<FileEntry> files, client.Files(out.version));
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return NotFound(dir + " is not a directory");
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<pipeline::StatCache> cache,
                         OpenStatCache(CacheRoot(cache_dir)));
  CAIRN_ASSIGN_OR_RETURN(std::vector<FileEntry> current, CurrentFiles(dir, threads, cache.get()));
  out.diff = core::DiffManifests(files, current);
  (void)cache->Save();
  return out;
}

}  // namespace cairn::data
