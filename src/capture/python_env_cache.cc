#include "capture/python_env_cache.h"

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "util/file.h"
#include "util/hash.h"

namespace cairn::capture {

using env::EnvSnapshot;
using env::InterpreterInfo;
using env::SnapshotHash;
using env::SnapshotPythonEnvironment;
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Variables that change which interpreter runs or what its sys.path holds.
constexpr const char* kSteering[] = {"PYTHONPATH",  "PYTHONHOME",       "PYTHONNOUSERSITE",
                                     "PYTHONUSERBASE", "PYTHONSAFEPATH", "VIRTUAL_ENV",
                                     "CONDA_PREFIX", "PYENV_VERSION",    "HOME"};

// "mtime_ns:size" of a file or directory, or "" when it cannot be read.
std::string Stamp(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return "";
  return std::to_string(int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec) + ":" +
         std::to_string(st.st_size) + ":" + std::to_string(st.st_ino);
}

// The file `python` names: itself when it has a '/', else the first executable on PATH.
std::string Resolve(const std::string& python) {
  if (python.find('/') != std::string::npos) return python;
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t colon = dirs.find(':', start);
    std::string dir = dirs.substr(start, colon == std::string::npos ? colon : colon - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + python;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return "";
}

// Whether `file` (symlinks followed) is a compiled program: then the working directory cannot
// choose another interpreter, as it can through a shim script (pyenv's, say).
bool IsCompiledProgram(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  char magic[4] = {};
  in.read(magic, sizeof(magic));
  return in.gcount() == 4 && std::string_view(magic, 4) == "\x7f" "ELF";
}

std::string CacheKey(const std::string& python) {
  std::string key = "cairn python-env cache 1\n" + python + "\n";
  const std::string file = Resolve(python);
  key += file + "\n" + Stamp(file) + "\n";
  // A shim chooses the interpreter by the working directory; a program does not, so a run in
  // each new directory (every task of an agent) still finds the entry.
  if (!IsCompiledProgram(file)) {
    std::error_code ec;
    key += fs::current_path(ec).string() + "\n";
  }
  for (const char* name : kSteering) {
    const char* v = std::getenv(name);
    key += std::string(name) + "=" + (v != nullptr ? v : "\x01unset") + "\n";
  }
  return Sha256Hex(key);
}

// What the entry's validity rests on: the interpreter and each directory on its sys.path.
json Stamps(const InterpreterInfo& info) {
  json out = json::object();
  out[info.real_executable] = Stamp(info.real_executable);
  for (const std::string& dir : info.path_dirs) out[dir] = Stamp(dir);
  return out;
}

size_t CountPackages(std::string_view toml) {
  size_t n = 0;
  for (size_t at = toml.find("[[packages]]"); at != std::string_view::npos;
       at = toml.find("[[packages]]", at + 1)) {
    ++n;
  }
  return n;
}

}  // namespace

std::string DefaultPythonEnvCacheDir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg == '/') {
    return std::string(xdg) + "/cairn/python-env";
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : "/tmp") + "/.cache/cairn/python-env";
}

Result<CachedSnapshot> SnapshotPythonEnvironmentCached(const std::string& python,
                                                       const std::string& cache_dir) {
  const fs::path entry = fs::path(cache_dir) / (CacheKey(python) + ".json");
  if (Result<std::string> text = ReadFile(entry); text.ok()) {
    json e = json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (e.is_object() && e.contains("stamps") && e["stamps"].is_object()) {
      bool valid = !e["stamps"].empty();
      for (const auto& [path, stamp] : e["stamps"].items()) {
        valid = valid && stamp.is_string() && Stamp(path) == stamp.get<std::string>();
      }
      if (valid) {
        CachedSnapshot out;
        out.from_cache = true;
        out.snapshot.toml = e.value("toml", "");
        out.snapshot.hash = SnapshotHash(out.snapshot.toml);
        out.snapshot.interpreter.version = e.value("version", "");
        out.snapshot.interpreter.executable = e.value("executable", "");
        out.snapshot.interpreter.real_executable = e.value("real_executable", "");
        out.package_count = CountPackages(out.snapshot.toml);
        return out;
      }
    }
  }
  timespec scan_start{};
  clock_gettime(CLOCK_REALTIME, &scan_start);
  CAIRN_ASSIGN_OR_RETURN(EnvSnapshot snapshot, SnapshotPythonEnvironment(python));
  json stamps = Stamps(snapshot.interpreter);
  // The stamps are taken after the scan: a directory changed while it ran (or just before,
  // within the file system's timestamp granularity) may not be in the snapshot, so such an
  // entry is not kept.
  const int64_t settled_before =
      int64_t{scan_start.tv_sec} * 1'000'000'000 + scan_start.tv_nsec - 1'000'000'000;
  bool settled = true;
  for (const auto& [path, stamp] : stamps.items()) {
    settled = settled && std::strtoll(stamp.get<std::string>().c_str(), nullptr, 10) <
                             settled_before;
  }
  json e = {{"python", python},
            {"version", snapshot.interpreter.version},
            {"executable", snapshot.interpreter.executable},
            {"real_executable", snapshot.interpreter.real_executable},
            {"stamps", std::move(stamps)},
            {"toml", snapshot.toml}};
  if (settled && MakeDirs(cache_dir).ok()) (void)WriteFileAtomic(entry, e.dump());
  CachedSnapshot out;
  out.package_count = snapshot.distributions.size();
  out.snapshot = std::move(snapshot);
  return out;
}

}  // namespace cairn::capture
