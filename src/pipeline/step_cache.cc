#include "pipeline/step_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "util/file.h"
#include "util/hash.h"

namespace cairn::pipeline {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

Status ErrnoError(const std::string& what, const std::string& path) {
  return Internal(what + " " + path + ": " + strerror(errno));
}

// Copies `from` to `to` (a new file), keeping the executable bit.
Status CopyFile(const std::string& from, const std::string& to, bool executable) {
  std::error_code ec;
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec) return Internal("cannot copy " + from + " to " + to + ": " + ec.message());
  if (chmod(to.c_str(), executable ? 0555 : 0444) != 0) return ErrnoError("chmod", to);
  return Status::Ok();
}

// Whether a stored object is there with the size it was stored with. Objects are not
// fsynced (they are the steps' own files, linked): after a crash of the machine one may be
// short, and then its entry is a miss.
bool ObjectIntact(const std::string& object, const FileEntry& entry) {
  struct stat st {};
  if (stat(object.c_str(), &st) != 0) return false;
  return entry.mode == kModeSymlink || st.st_size == entry.size;
}

std::string EntryPath(const std::string& root, const std::string& key) {
  return root + "/steps/" + key.substr(0, 2) + "/" + key + ".json";
}

}  // namespace

std::string KeyParts::Key() const {
  std::string text = "cairn step key 1\ndefinition " + Sha256Hex(definition) + "\n";
  for (const auto& [path, digest] : inputs) text += "input " + path + " " + digest + "\n";
  for (const auto& [path, digest] : code) text += "code " + path + " " + digest + "\n";
  text += "env " + env + "\n";
  return Sha256Hex(text);
}

std::string KeyParts::ToJson() const {
  json j = {{"definition", definition}, {"inputs", inputs}, {"code", code}, {"env", env}};
  return j.dump();
}

Result<KeyParts> KeyParts::FromJson(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return InvalidArgument("cache key parts are not a JSON object");
  KeyParts p;
  p.definition = j.value("definition", "");
  p.env = j.value("env", "");
  for (const char* field : {"inputs", "code"}) {
    auto& out = std::string(field) == "inputs" ? p.inputs : p.code;
    if (auto it = j.find(field); it != j.end() && it->is_object()) {
      for (const auto& [k, v] : it->items()) {
        if (v.is_string()) out[k] = v.get<std::string>();
      }
    }
  }
  return p;
}

std::vector<std::string> ExplainChanges(const KeyParts& before, const KeyParts& now) {
  std::vector<std::string> out;
  if (before.definition != now.definition) {
    json a = json::parse(before.definition, nullptr, false);
    json b = json::parse(now.definition, nullptr, false);
    bool named = false;
    if (a.is_object() && b.is_object()) {
      for (const auto& [field, value] : b.items()) {
        if (!a.contains(field) || a[field] != value) {
          std::string from = a.contains(field) ? a[field].dump() : "(none)";
          out.push_back(field + " changed: " + from + " -> " + value.dump());
          named = true;
        }
      }
      for (const auto& [field, value] : a.items()) {
        if (!b.contains(field)) {
          out.push_back(field + " removed (was " + value.dump() + ")");
          named = true;
        }
      }
    }
    if (!named) out.push_back("the step's definition changed");
  }
  auto compare = [&out](const std::map<std::string, std::string>& a,
                        const std::map<std::string, std::string>& b, const std::string& what) {
    for (const auto& [path, digest] : b) {
      auto it = a.find(path);
      if (it == a.end()) {
        out.push_back(what + " " + path + " is new");
      } else if (it->second != digest) {
        out.push_back(what + " " + path + " changed (" + it->second.substr(0, 12) + " -> " +
                      digest.substr(0, 12) + ")");
      }
    }
    for (const auto& [path, digest] : a) {
      if (b.count(path) == 0) out.push_back(what + " " + path + " is no longer used");
    }
  };
  compare(before.inputs, now.inputs, "input");
  compare(before.code, now.code, "code");
  if (before.env != now.env) {
    out.push_back("environment changed (" + before.env.substr(0, 12) + " -> " +
                  now.env.substr(0, 12) + ")");
  }
  return out;
}

StepCache::StepCache(std::string root, StatCache* stat_cache)
    : root_(std::move(root)), stat_cache_(stat_cache) {}

StepCache::~StepCache() { (void)Flush(); }

Status StepCache::Flush() {
  Status first;
  for (const auto& [key, text] : std::exchange(pending_, {})) {
    const std::string path = EntryPath(root_, key);
    std::error_code ec;
    fs::create_directories(fs::path(path).parent_path(), ec);
    Status written = WriteFileAtomic(path, text, Sync::kNoSync);
    if (!written.ok() && first.ok()) first = written;
  }
  return first;
}

std::string StepCache::DefaultRoot() {
  if (const char* dir = std::getenv("CAIRN_CACHE_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::string(xdg) + "/cairn";
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : "/tmp") + "/.cache/cairn";
}

Result<std::string> StepCache::Hash(const std::string& workdir, const std::string& path) {
  HashOptions options;
  options.cache = stat_cache_;
  const std::string full = path.starts_with('/') ? path : workdir + "/" + path;
  CAIRN_ASSIGN_OR_RETURN(TreeHash hash, HashPath(full, options));
  return hash.digest;
}

Result<std::vector<FileEntry>> StepCache::OutputFiles(const CachedOutput& output) const {
  if (!output.is_directory) {
    return std::vector<FileEntry>{FileEntry{"", output.bytes, output.mode, output.digest}};
  }
  CAIRN_ASSIGN_OR_RETURN(std::string manifest,
                         ReadFile(ObjectPath(output.digest, false) + ".json"));
  return ParseManifestJson(manifest);
}

std::string StepCache::ObjectPath(const std::string& digest, bool executable) const {
  return root_ + "/objects/" + digest.substr(0, 2) + "/" + digest.substr(2) +
         (executable ? ".x" : "");
}

Status StepCache::PutFile(const std::string& source, const FileEntry& entry, bool copy) {
  const bool executable = entry.mode == kModeExecutable;
  const std::string object = ObjectPath(entry.sha256, executable);
  struct stat st {};
  if (lstat(object.c_str(), &st) == 0) return Status::Ok();
  std::error_code ec;
  fs::create_directories(fs::path(object).parent_path(), ec);
  const std::string tmp = object + ".tmp" + RandomHex(4);
  if (entry.mode == kModeSymlink) {
    // A link is stored as its target text.
    std::error_code ec2;
    const std::string target = fs::read_symlink(source, ec2).string();
    if (ec2) return Internal("cannot read link " + source + ": " + ec2.message());
    CAIRN_RETURN_IF_ERROR(WriteFileAtomic(tmp, target, Sync::kNoSync));
  } else if (copy) {
    CAIRN_RETURN_IF_ERROR(CopyFile(source, tmp, executable));
  } else if (link(source.c_str(), tmp.c_str()) == 0) {
    // Read-only, so that an accidental write through another link fails instead of
    // changing what the store holds (it does not stop root).
    chmod(tmp.c_str(), executable ? 0555 : 0444);
  } else if (errno == EXDEV || errno == EPERM || errno == EMLINK) {
    CAIRN_RETURN_IF_ERROR(CopyFile(source, tmp, executable));
  } else {
    return ErrnoError("cannot link", source);
  }
  if (rename(tmp.c_str(), object.c_str()) != 0) {
    unlink(tmp.c_str());
    return ErrnoError("cannot store", object);
  }
  return Status::Ok();
}

Status StepCache::Materialise(const std::string& target, const FileEntry& entry) {
  const std::string object = ObjectPath(entry.sha256, entry.mode == kModeExecutable);
  std::error_code ec;
  fs::create_directories(fs::path(target).parent_path(), ec);
  if (entry.mode == kModeSymlink) {
    CAIRN_ASSIGN_OR_RETURN(std::string link_target, ReadFile(object));
    fs::create_symlink(link_target, target, ec);
    if (ec) return Internal("cannot create link " + target + ": " + ec.message());
    return Status::Ok();
  }
  if (link(object.c_str(), target.c_str()) == 0) return Status::Ok();
  if (errno == EXDEV || errno == EPERM || errno == EMLINK) {
    return CopyFile(object, target, entry.mode == kModeExecutable);
  }
  return ErrnoError("cannot link", target);
}

Result<std::optional<CacheEntry>> StepCache::Lookup(const std::string& key) {
  if (auto pending = pending_.find(key); pending != pending_.end()) {
    return ParseEntry(key, pending->second);
  }
  const std::string path = EntryPath(root_, key);
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) return std::optional<CacheEntry>();
    return text.status();
  }
  std::optional<CacheEntry> entry = ParseEntry(key, *text);
  // The entry's time is its last use, which `cairn pipeline gc` goes by (a cache another
  // user owns stays as it was).
  if (entry) utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
  return entry;
}

std::optional<CacheEntry> StepCache::ParseEntry(const std::string& key,
                                                const std::string& text) const {
  json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return std::optional<CacheEntry>();  // a torn entry is a miss
  CacheEntry e;
  e.key = key;
  if (auto it = j.find("parts"); it != j.end()) {
    Result<KeyParts> parts = KeyParts::FromJson(it->dump());
    if (parts.ok()) e.parts = *parts;
  }
  e.pipeline_run = j.value("pipeline_run", "");
  e.step = j.value("step", "");
  e.tracking_run = j.value("tracking_run", "");
  e.time_ms = j.value("time_ms", int64_t{0});
  if (auto it = j.find("outputs"); it != j.end() && it->is_array()) {
    for (const json& o : *it) {
      if (!o.is_object()) continue;
      CachedOutput out;
      out.path = o.value("path", "");
      out.digest = o.value("digest", "");
      out.is_directory = o.value("directory", false);
      out.bytes = o.value("bytes", int64_t{0});
      out.mode = o.value("mode", kModeFile);
      // Every object must still be there (a cache cleaned by hand is a miss, not an error).
      if (out.is_directory) {
        Result<std::string> manifest = ReadFile(ObjectPath(out.digest, false) + ".json");
        if (!manifest.ok()) return std::optional<CacheEntry>();
        Result<std::vector<FileEntry>> files = ParseManifestJson(*manifest);
        if (!files.ok()) return std::optional<CacheEntry>();
        for (const FileEntry& f : *files) {
          if (!ObjectIntact(ObjectPath(f.sha256, f.mode == kModeExecutable), f)) {
            return std::optional<CacheEntry>();
          }
        }
      } else {
        FileEntry f;
        f.size = out.bytes;
        f.mode = out.mode;
        if (!ObjectIntact(ObjectPath(out.digest, out.mode == kModeExecutable), f)) {
          return std::optional<CacheEntry>();
        }
      }
      e.outputs.push_back(std::move(out));
    }
  }
  return std::optional<CacheEntry>(std::move(e));
}

Result<CacheEntry> StepCache::Store(const std::string& workdir, const std::string& key,
                                    const KeyParts& parts, const std::vector<std::string>& outputs,
                                    CacheEntry meta) {
  meta.key = key;
  meta.parts = parts;
  meta.outputs.clear();
  json outs = json::array();
  for (const std::string& path : outputs) {
    const std::string full = workdir + "/" + path;
    struct stat st {};
    if (lstat(full.c_str(), &st) != 0) {
      return FailedPrecondition("the step did not write its output " + path);
    }
    // An output that is a link to a file or directory elsewhere (the step's input, a shared
    // dataset) is stored by what it points to, copied: linking those files into the store
    // would make them read-only and tie them to it.
    const bool copy = S_ISLNK(st.st_mode);
    HashOptions options;
    options.cache = stat_cache_;
    CAIRN_ASSIGN_OR_RETURN(TreeHash hash, HashPath(full, options));
    if (hash.is_directory) {
      for (const FileEntry& f : hash.files) {
        CAIRN_RETURN_IF_ERROR(PutFile(full + "/" + f.path, f, copy));
      }
      const std::string manifest = ObjectPath(hash.digest, false) + ".json";
      if (access(manifest.c_str(), F_OK) != 0) {
        std::error_code ec;
        fs::create_directories(fs::path(manifest).parent_path(), ec);
        CAIRN_RETURN_IF_ERROR(WriteFileAtomic(manifest, ManifestJson(hash.files), Sync::kNoSync));
      }
    } else {
      FileEntry f = hash.files.front();
      CAIRN_RETURN_IF_ERROR(PutFile(full, f, copy));
    }
    const uint32_t mode = hash.is_directory ? 0 : hash.files.front().mode;
    meta.outputs.push_back({path, hash.digest, hash.is_directory, hash.bytes, mode});
    json o = {{"path", path},
              {"digest", hash.digest},
              {"directory", hash.is_directory},
              {"bytes", hash.bytes}};
    if (!hash.is_directory) o["mode"] = mode;
    outs.push_back(std::move(o));
  }
  json j = {{"key", key},
            {"parts", json::parse(parts.ToJson())},
            {"outputs", outs},
            {"pipeline_run", meta.pipeline_run},
            {"step", meta.step},
            {"tracking_run", meta.tracking_run},
            {"time_ms", meta.time_ms}};
  pending_[key] = j.dump(1) + "\n";
  return meta;
}

Result<int> StepCache::Restore(const std::string& workdir, const CacheEntry& entry) {
  int restored = 0;
  for (const CachedOutput& out : entry.outputs) {
    const std::string full = workdir + "/" + out.path;
    // Already there with the cached content (the common case of an up-to-date re-run).
    struct stat st {};
    if (lstat(full.c_str(), &st) == 0) {
      HashOptions options;
      options.cache = stat_cache_;
      if (Result<TreeHash> now = HashPath(full, options); now.ok() && now->digest == out.digest) {
        continue;
      }
    }
    CAIRN_RETURN_IF_ERROR(RemoveOutputs(workdir, {out.path}));
    if (out.is_directory) {
      CAIRN_ASSIGN_OR_RETURN(std::string manifest,
                             ReadFile(ObjectPath(out.digest, false) + ".json"));
      CAIRN_ASSIGN_OR_RETURN(std::vector<FileEntry> files, ParseManifestJson(manifest));
      std::error_code ec;
      fs::create_directories(full, ec);
      if (ec) return Internal("cannot create " + full + ": " + ec.message());
      for (const FileEntry& f : files) CAIRN_RETURN_IF_ERROR(Materialise(full + "/" + f.path, f));
    } else {
      FileEntry f;
      f.sha256 = out.digest;
      f.mode = out.mode == kModeExecutable ? kModeExecutable : kModeFile;
      CAIRN_RETURN_IF_ERROR(Materialise(full, f));
    }
    ++restored;
  }
  return restored;
}

Status StepCache::RemoveOutputs(const std::string& workdir, const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    std::error_code ec;
    fs::remove_all(workdir + "/" + path, ec);
    if (ec) return Internal("cannot remove the old output " + path + ": " + ec.message());
  }
  return Status::Ok();
}

}  // namespace cairn::pipeline
