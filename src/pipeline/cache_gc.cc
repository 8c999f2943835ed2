#include "pipeline/cache_gc.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/tree_manifest.h"
#include "util/clock.h"
#include "util/file.h"

namespace cairn::pipeline {
namespace {

using nlohmann::json;

struct FileSeen {
  std::string name;  // relative to the listed directory: "ab/cdef…[.x|.json]"
  int64_t size = 0;
  int64_t mtime_ms = 0;
  int64_t ctime_ms = 0;
};

int64_t Millis(const struct timespec& t) { return t.tv_sec * 1000LL + t.tv_nsec / 1000000; }

// Every file one level down: `dir`/xx/name.
Result<std::vector<FileSeen>> ListFanOut(const std::string& dir) {
  std::vector<FileSeen> out;
  DIR* top = opendir(dir.c_str());
  if (top == nullptr) {
    if (errno == ENOENT) return out;
    return ErrnoStatus("open", dir);
  }
  while (dirent* d = readdir(top)) {
    if (d->d_name[0] == '.') continue;
    const std::string sub = dir + "/" + d->d_name;
    DIR* inner = opendir(sub.c_str());
    if (inner == nullptr) continue;  // a stray file
    while (dirent* f = readdir(inner)) {
      if (f->d_name[0] == '.') continue;
      struct stat st {};
      if (fstatat(dirfd(inner), f->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) {
        continue;
      }
      out.push_back({std::string(d->d_name) + "/" + f->d_name, st.st_size, Millis(st.st_mtim),
                     Millis(st.st_ctim)});
    }
    closedir(inner);
  }
  closedir(top);
  return out;
}

struct Entry {
  std::string file;  // under steps/
  int64_t last_used_ms = 0;
  std::string step;
  std::string pipeline_run;
  std::vector<std::string> objects;  // under objects/
  bool intact = true;
};

std::string ObjectName(const std::string& digest, std::string_view suffix) {
  return digest.substr(0, 2) + "/" + digest.substr(2) + std::string(suffix);
}

// Reads an entry and the objects it names (a directory output's manifest included). An entry
// that cannot be read, or names an object that is not there, is not intact.
Entry ReadEntry(const std::string& root, const FileSeen& seen,
                const std::map<std::string, FileSeen>& objects) {
  Entry e;
  e.file = seen.name;
  e.last_used_ms = seen.mtime_ms;
  Result<std::string> text = ReadFile(root + "/steps/" + seen.name);
  json j = text.ok() ? json::parse(*text, nullptr, false) : json();
  if (!j.is_object() || !j.contains("outputs") || !j["outputs"].is_array()) {
    e.intact = false;
    return e;
  }
  e.step = j.value("step", "");
  e.pipeline_run = j.value("pipeline_run", "");
  auto name = [&](std::string object) {
    if (objects.count(object) == 0) e.intact = false;
    e.objects.push_back(std::move(object));
  };
  for (const json& o : j["outputs"]) {
    const std::string digest = o.is_object() ? o.value("digest", "") : "";
    if (digest.size() < 3) {
      e.intact = false;
      continue;
    }
    if (!o.value("directory", false)) {
      name(ObjectName(digest,
                      o.value("mode", core::kModeFile) == core::kModeExecutable ? ".x" : ""));
      continue;
    }
    const std::string manifest = ObjectName(digest, ".json");
    name(manifest);
    Result<std::string> manifest_text = ReadFile(root + "/objects/" + manifest);
    Result<std::vector<core::FileEntry>> files =
        manifest_text.ok() ? core::ParseManifestJson(*manifest_text)
                           : Result<std::vector<core::FileEntry>>(manifest_text.status());
    if (!files.ok()) {
      e.intact = false;
      continue;
    }
    for (const core::FileEntry& f : *files) {
      name(ObjectName(f.sha256, f.mode == core::kModeExecutable ? ".x" : ""));
    }
  }
  return e;
}

Status Remove(const std::string& path) {
  if (unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoStatus("remove", path);
  return Status::Ok();
}

}  // namespace

Result<CacheGcReport> CollectStepCache(const std::string& root, const CacheGcOptions& options) {
  const int64_t now = options.now_ms != 0 ? options.now_ms : SystemClock()->NowMillis();
  CAIRN_ASSIGN_OR_RETURN(std::vector<FileSeen> object_list, ListFanOut(root + "/objects"));
  CAIRN_ASSIGN_OR_RETURN(std::vector<FileSeen> entry_list, ListFanOut(root + "/steps"));
  std::map<std::string, FileSeen> objects;
  std::vector<std::string> stale_temps;  // left by a runner that died while writing
  for (FileSeen& f : object_list) {
    if (f.name.find(".tmp") != std::string::npos) {
      if (now - f.ctime_ms > options.grace_ms) stale_temps.push_back("objects/" + f.name);
    } else {
      std::string name = f.name;
      objects.emplace(std::move(name), std::move(f));
    }
  }

  std::vector<Entry> entries;
  for (const FileSeen& f : entry_list) {
    if (!f.name.ends_with(".json")) {
      if (now - f.ctime_ms > options.grace_ms) stale_temps.push_back("steps/" + f.name);
      continue;
    }
    entries.push_back(ReadEntry(root, f, objects));
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.last_used_ms < b.last_used_ms; });

  // How many kept entries name each object, and the bytes they hold together.
  std::map<std::string, int> uses;
  int64_t held = 0;
  auto use = [&](const Entry& e, int delta) {
    for (const std::string& o : e.objects) {
      auto it = objects.find(o);
      if (it == objects.end()) continue;
      int& n = uses[o];
      if (n == 0 && delta > 0) held += it->second.size;
      n += delta;
      if (n == 0 && delta < 0) held -= it->second.size;
    }
  };
  auto in_grace = [&](const Entry& e) { return now - e.last_used_ms <= options.grace_ms; };
  std::vector<bool> removed(entries.size(), false);
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    const bool old = options.max_age_ms > 0 && now - e.last_used_ms > options.max_age_ms;
    removed[i] = !in_grace(e) && (old || !e.intact);
    if (!removed[i]) use(e, +1);
  }
  if (options.max_bytes > 0) {
    for (size_t i = 0; i < entries.size() && held > options.max_bytes; ++i) {
      if (removed[i] || in_grace(entries[i])) continue;
      removed[i] = true;
      use(entries[i], -1);
    }
  }

  CacheGcReport report;
  report.bytes_kept = held;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (!removed[i]) {
      ++report.entries_kept;
      continue;
    }
    ++report.entries_removed;
    if (options.on_remove) {
      options.on_remove(entries[i].step, entries[i].pipeline_run, entries[i].last_used_ms);
    }
    if (!options.dry_run) CAIRN_RETURN_IF_ERROR(Remove(root + "/steps/" + entries[i].file));
  }
  for (const auto& [name, seen] : objects) {
    if (uses[name] > 0 || now - seen.ctime_ms <= options.grace_ms) continue;
    ++report.objects_removed;
    report.bytes_freed += seen.size;
    if (!options.dry_run) CAIRN_RETURN_IF_ERROR(Remove(root + "/objects/" + name));
  }
  if (!options.dry_run) {
    for (const std::string& temp : stale_temps) CAIRN_RETURN_IF_ERROR(Remove(root + "/" + temp));
  }
  return report;
}

}  // namespace cairn::pipeline
