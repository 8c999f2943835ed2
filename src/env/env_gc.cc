#include "env/env_gc.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <utility>

#include "env/lock.h"
#include "util/clock.h"
#include "util/file.h"

namespace cairn::env {
namespace {

namespace fs = std::filesystem;

int64_t MtimeMs(const fs::path& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return 0;
  return st.st_mtim.tv_sec * 1000LL + st.st_mtim.tv_nsec / 1000000;
}

// The wheel hashes the locks of `kept` environments name (every platform's wheels).
std::set<std::string> WheelsNamed(const std::vector<StoredEnvironment>& kept) {
  std::set<std::string> named;
  for (const StoredEnvironment& e : kept) {
    const std::string lock_path = e.path + "/.cairn/lock.toml";
    Result<std::string> text = ReadFile(lock_path);
    if (!text.ok()) continue;
    Result<Lock> lock = ParseLock(*text, lock_path);
    if (!lock.ok()) continue;
    for (const LockedPackage& p : lock->packages) {
      for (const LockedWheel& w : p.wheels) named.insert(w.sha256);
    }
  }
  return named;
}

// Removes the cached wheels (and unpacked trees) outside `named` unused for the options' age.
Status CollectWheels(const GcOptions& options, const std::set<std::string>& named,
                     GcReport& report) {
  if (options.wheel_cache.empty() || options.wheel_max_age_ms <= 0) return Status::Ok();
  const int64_t now = options.now_ms != 0 ? options.now_ms : SystemClock()->NowMillis();
  // hash -> (wheel file, unpacked tree), either may be missing.
  std::map<std::string, std::pair<fs::path, fs::path>> cached;
  std::error_code ec;
  for (const char* kind : {"wheels", "unpacked"}) {
    for (const auto& fan : fs::directory_iterator(fs::path(options.wheel_cache) / kind, ec)) {
      std::error_code inner;
      for (const auto& item : fs::directory_iterator(fan.path(), inner)) {
        std::string name = item.path().filename().string();
        const bool wheel = std::string(kind) == "wheels";
        if (wheel && !name.ends_with(".whl")) continue;  // a download in progress
        if (wheel) name.resize(name.size() - 4);
        if (name.size() != 64 || name.find('.') != std::string::npos) continue;
        auto& slot = cached[name];
        (wheel ? slot.first : slot.second) = item.path();
      }
    }
  }
  for (const auto& [hash, paths] : cached) {
    if (named.count(hash) > 0) continue;
    const int64_t used = std::max(paths.first.empty() ? 0 : MtimeMs(paths.first),
                                  paths.second.empty() ? 0 : MtimeMs(paths.second));
    if (now - used <= options.wheel_max_age_ms) continue;
    ++report.wheels_removed;
    for (const fs::path& path : {paths.first, paths.second}) {
      if (path.empty()) continue;
      report.wheel_bytes_freed += BytesUnder({path.string()});
      if (options.dry_run) continue;
      // Unpacked trees are read-only; their directories must be writable to empty them.
      for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::end(it);
           it.increment(ec)) {
        if (it->is_directory(ec) && !it->is_symlink(ec)) {
          fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
        }
      }
      fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ec);
      ec.clear();
      fs::remove_all(path, ec);
      if (ec) return Internal("cannot remove " + path.string() + ": " + ec.message());
    }
  }
  return Status::Ok();
}

}  // namespace

std::set<std::string> EnvironmentsKept(const std::vector<ProjectPointers>& projects, int keep) {
  std::set<std::string> kept;
  for (const ProjectPointers& project : projects) {
    if (project.active) kept.insert(*project.active);
    std::set<std::string> recent;
    for (auto it = project.history.rbegin();
         it != project.history.rend() && static_cast<int>(recent.size()) < keep; ++it) {
      recent.insert(*it);
    }
    kept.insert(recent.begin(), recent.end());
  }
  return kept;
}

Result<GcReport> CollectGarbage(EnvStore& store, const GcOptions& options) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<StoredEnvironment> all, store.List());
  std::vector<ProjectPointers> projects;
  for (const std::string& dir : store.Projects()) {
    ProjectEnv pointers(dir);
    projects.push_back({pointers.ActivePath(), pointers.History()});
  }
  const std::set<std::string> kept = EnvironmentsKept(projects, options.keep);
  GcReport report;
  std::vector<StoredEnvironment> staying;
  for (const StoredEnvironment& e : all) {
    if (kept.count(e.path) > 0) {
      staying.push_back(e);
      continue;
    }
    if (options.on_remove) options.on_remove(e);
    if (!options.dry_run) CAIRN_RETURN_IF_ERROR(store.Remove(e.id));
    ++report.removed;
  }
  report.kept = all.size() - report.removed;
  CAIRN_RETURN_IF_ERROR(CollectWheels(options, WheelsNamed(staying), report));
  return report;
}

}  // namespace cairn::env
