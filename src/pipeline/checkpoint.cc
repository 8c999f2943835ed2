#include "pipeline/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "core/tree_manifest.h"
#include "util/clock.h"
#include "util/file.h"
#include "util/hash.h"

namespace cairn::pipeline {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

int64_t MtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

// Copies `from` into the object store of `cache`: into a temporary file first, hashing what
// was copied, then renamed to the name of those bytes, so that a file still being written can
// never leave an object whose bytes differ from its name. Returns the copy's entry, or
// nullopt when the file changed while it was copied (it is taken next time).
Result<std::optional<FileEntry>> StoreCopy(StepCache& cache, const std::string& from,
                                           const std::string& rel, bool executable) {
  const std::string tmp = cache.root() + "/objects/checkpoint-" + RandomHex(8) + ".tmp";
  std::error_code ec;
  fs::create_directories(fs::path(tmp).parent_path(), ec);
  CAIRN_ASSIGN_OR_RETURN(HashedCopy copy, CopyHashing(from, tmp, Sync::kNoSync));
  if (copy.source_changed) {
    unlink(tmp.c_str());
    return std::optional<FileEntry>();
  }
  FileEntry entry{rel, copy.size, executable ? kModeExecutable : kModeFile, copy.sha256};
  const std::string object = cache.ObjectPath(entry.sha256, executable);
  fs::create_directories(fs::path(object).parent_path(), ec);
  chmod(tmp.c_str(), executable ? 0555 : 0444);
  if (rename(tmp.c_str(), object.c_str()) != 0) {
    Status s = ErrnoStatus("store", object);
    unlink(tmp.c_str());
    return s;
  }
  return std::optional<FileEntry>(std::move(entry));
}

}  // namespace

std::string CheckpointStore::ManifestPath(const std::string& step) const {
  // Step ids hold letters, digits, '_', '-', '.' and a fan-out's "[item]": kept readable, with
  // anything that could leave the directory replaced.
  std::string name = step;
  for (char& c : name) {
    if (c == '/' || c == '\0') c = '_';
  }
  return run_dir_ + "/checkpoints/" + name + ".json";
}

Result<std::optional<std::vector<CheckpointFile>>> CheckpointStore::Load(
    const std::string& step) const {
  Result<std::string> text = ReadFile(ManifestPath(step));
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) {
      return std::optional<std::vector<CheckpointFile>>();
    }
    return text.status();
  }
  const json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return Internal("the checkpoint of " + step + " is unreadable");
  std::vector<CheckpointFile> files;
  for (const json& f : j.value("files", json::array())) {
    CheckpointFile c;
    c.entry.path = f.value("path", "");
    c.entry.size = f.value("size", int64_t{0});
    c.entry.mode = f.value("mode", kModeFile);
    c.entry.sha256 = f.value("sha256", "");
    c.mtime_ns = f.value("mtime_ns", int64_t{0});
    const fs::path p(c.entry.path);
    if (c.entry.path.empty() || p.is_absolute() || !IsSha256Hex(c.entry.sha256) ||
        std::any_of(p.begin(), p.end(), [](const fs::path& part) { return part == ".."; })) {
      return Internal("the checkpoint of " + step + " names a file it may not: " + c.entry.path);
    }
    files.push_back(std::move(c));
  }
  return std::optional<std::vector<CheckpointFile>>(std::move(files));
}

Result<size_t> CheckpointStore::Save(const std::string& step, const std::string& dir,
                                     int64_t settle_ms) {
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::vector<CheckpointFile>> before, Load(step));
  std::map<std::string, CheckpointFile> known;
  if (before) {
    for (CheckpointFile& f : *before) known[f.entry.path] = std::move(f);
  }
  const int64_t now_ns = SystemClock()->NowMillis() * 1'000'000;
  std::vector<CheckpointFile> files;
  std::error_code ec;
  if (fs::is_directory(dir, ec)) {
    fs::recursive_directory_iterator it(dir, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      struct stat st {};
      if (lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      const std::string rel = it->path().lexically_relative(dir).generic_string();
      const bool executable = (st.st_mode & S_IXUSR) != 0;
      auto old = known.find(rel);
      const bool same = old != known.end() && old->second.entry.size == st.st_size &&
                        old->second.mtime_ns == MtimeNs(st) &&
                        (old->second.entry.mode == kModeExecutable) == executable;
      if (same) {
        files.push_back(old->second);
        continue;
      }
      if (settle_ms > 0 && now_ns - MtimeNs(st) < settle_ms * 1'000'000) {
        // Still being written: its earlier copy stands until it settles.
        if (old != known.end()) files.push_back(old->second);
        continue;
      }
      CAIRN_ASSIGN_OR_RETURN(std::optional<FileEntry> entry,
                             StoreCopy(*cache_, it->path().string(), rel, executable));
      if (entry) {
        files.push_back(CheckpointFile{std::move(*entry), MtimeNs(st)});
      } else if (old != known.end()) {
        files.push_back(old->second);  // written while copied: its earlier copy stands
      }
    }
    if (ec) return Internal("reading the checkpoint " + dir + ": " + ec.message());
  }
  std::sort(files.begin(), files.end(), [](const CheckpointFile& a, const CheckpointFile& b) {
    return a.entry.path < b.entry.path;
  });
  json out = {{"step", step}, {"time_ms", SystemClock()->NowMillis()}, {"files", json::array()}};
  for (const CheckpointFile& f : files) {
    out["files"].push_back({{"path", f.entry.path},
                            {"size", f.entry.size},
                            {"mode", f.entry.mode},
                            {"sha256", f.entry.sha256},
                            {"mtime_ns", f.mtime_ns}});
  }
  CAIRN_RETURN_IF_ERROR(KeepInCache(step, files));
  const std::string path = ManifestPath(step);
  fs::create_directories(fs::path(path).parent_path(), ec);
  // Durable: a runner killed right after must find it.
  CAIRN_RETURN_IF_ERROR(WriteFileAtomic(path, out.dump(1) + "\n", Sync::kDurable));
  return files.size();
}

Status CheckpointStore::KeepInCache(const std::string& step,
                                    const std::vector<CheckpointFile>& files) {
  std::vector<FileEntry> entries;
  int64_t bytes = 0;
  for (const CheckpointFile& f : files) {
    entries.push_back(f.entry);
    bytes += f.entry.size;
  }
  const std::string manifest = core::ManifestJson(entries);
  const std::string digest = Sha256Hex(manifest);
  const std::string object = cache_->ObjectPath(digest, false) + ".json";
  std::error_code ec;
  if (!fs::exists(object, ec)) {
    fs::create_directories(fs::path(object).parent_path(), ec);
    CAIRN_RETURN_IF_ERROR(WriteFileAtomic(object, manifest, Sync::kNoSync));
  }
  // An entry no lookup can find (its key is not a step's), naming the checkpoint as a
  // directory output: the cache's collection keeps its files while the entry is recent.
  const std::string run = fs::path(run_dir_).filename().string();
  const std::string key = Sha256Hex("cairn checkpoint\n" + run + "\n" + step);
  const json entry = {
      {"key", key},
      {"step", step},
      {"pipeline_run", run},
      {"time_ms", SystemClock()->NowMillis()},
      {"checkpoint", true},
      {"outputs",
       json::array(
           {{{"path", "checkpoint"}, {"digest", digest}, {"directory", true}, {"bytes", bytes}}})}};
  const std::string path = cache_->root() + "/steps/" + key.substr(0, 2) + "/" + key + ".json";
  fs::create_directories(fs::path(path).parent_path(), ec);
  return WriteFileAtomic(path, entry.dump() + "\n", Sync::kNoSync);
}

Result<std::optional<size_t>> CheckpointStore::Restore(const std::string& step,
                                                       const std::string& dir) {
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::vector<CheckpointFile>> files, Load(step));
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (ec) return Internal("cannot empty the checkpoint directory " + dir + ": " + ec.message());
  fs::create_directories(dir, ec);
  if (ec) return Internal("cannot make the checkpoint directory " + dir + ": " + ec.message());
  if (!files) return std::optional<size_t>();
  for (const CheckpointFile& f : *files) {
    const bool executable = f.entry.mode == kModeExecutable;
    const fs::path target = fs::path(dir) / f.entry.path;
    fs::create_directories(target.parent_path(), ec);
    fs::copy_file(cache_->ObjectPath(f.entry.sha256, executable), target,
                  fs::copy_options::overwrite_existing, ec);
    if (ec) {
      return Internal("cannot restore " + f.entry.path + " of the checkpoint of " + step + ": " +
                      ec.message());
    }
    // A copy the step may write into, and the time it was saved with, so that the next save
    // knows it unchanged.
    fs::permissions(target, executable ? fs::perms(0755) : fs::perms(0644), ec);
    struct timespec times[2] = {{0, UTIME_OMIT},
                                {static_cast<time_t>(f.mtime_ns / 1'000'000'000),
                                 static_cast<long>(f.mtime_ns % 1'000'000'000)}};
    utimensat(AT_FDCWD, target.c_str(), times, 0);
  }
  return std::optional<size_t>(files->size());
}

}  // namespace cairn::pipeline
