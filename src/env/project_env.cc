#include "env/project_env.h"

#include <stdio.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "util/file.h"
#include "util/hash.h"

namespace cairn::env {

namespace fs = std::filesystem;
using nlohmann::json;

Result<StoredEnvironment> LoadStoredEnvironment(const std::string& path) {
  StoredEnvironment e;
  e.path = path;
  e.id = fs::path(path).filename().string();
  const fs::path meta = fs::path(e.path) / ".cairn";
  CAIRN_ASSIGN_OR_RETURN(std::string text, ReadFile(meta / "info.json"));
  json info = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!info.is_object()) return Internal("unreadable " + (meta / "info.json").string());
  e.lock_hash = info.value("lock_hash", "");
  e.created = info.value("created", "");
  e.python = info.value("python", "");
  e.target = info.value("target", "");
  e.packages = info.value("packages", size_t{0});
  if (Result<std::string> runs = ReadFile(meta / "runs"); runs.ok()) {
    size_t start = 0;
    while (start < runs->size()) {
      size_t nl = runs->find('\n', start);
      std::string line = runs->substr(start, nl == std::string::npos ? nl : nl - start);
      if (!line.empty()) e.runs.push_back(line);
      if (nl == std::string::npos) break;
      start = nl + 1;
    }
  }
  return e;
}

Status RecordEnvironmentRun(const std::string& path, const std::string& run_id) {
  const fs::path file = fs::path(path) / ".cairn" / "runs";
  std::ofstream out(file, std::ios::app);
  out << run_id << "\n";
  if (!out) return Internal("cannot append to " + file.string());
  return Status::Ok();
}

ProjectEnv::ProjectEnv(std::string project_dir)
    : dir_((fs::path(project_dir) / ".cairn" / "env").string()) {}

std::optional<std::string> ProjectEnv::ActivePath() const {
  std::error_code ec;
  const fs::path link = fs::path(dir_) / "current";
  fs::path target = fs::read_symlink(link, ec);
  if (ec || !fs::is_directory(target, ec)) return std::nullopt;
  return target.string();
}

Status ProjectEnv::Use(const std::string& env_path) {
  CAIRN_RETURN_IF_ERROR(MakeDirs(dir_));
  const fs::path link = fs::path(dir_) / "current";
  const fs::path fresh = fs::path(dir_) / ("current.new-" + RandomHex(6));
  std::error_code ec;
  fs::create_symlink(env_path, fresh, ec);
  if (ec) return Internal("creating " + fresh.string() + ": " + ec.message());
  if (rename(fresh.c_str(), link.c_str()) != 0) {
    Status s = ErrnoStatus("rename", fresh);
    fs::remove(fresh, ec);
    return s;
  }
  std::ofstream history(fs::path(dir_) / "history", std::ios::app);
  history << env_path << "\n";
  if (!history) return Internal("cannot append to " + (fs::path(dir_) / "history").string());
  return Status::Ok();
}

std::vector<std::string> ProjectEnv::History() const {
  std::vector<std::string> out;
  std::ifstream in(fs::path(dir_) / "history");
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

Result<std::string> ProjectEnv::Rollback() {
  const std::optional<std::string> current = ActivePath();
  const std::vector<std::string> history = History();
  // The newest entry before the current one's last switch that is another environment still
  // in the store.
  size_t at = history.size();
  while (at > 0 && current && history[at - 1] != *current) --at;
  std::error_code ec;
  for (size_t i = at == 0 ? 0 : at - 1; i > 0; --i) {
    const std::string& candidate = history[i - 1];
    if ((current && candidate == *current) || !fs::is_directory(candidate, ec)) continue;
    CAIRN_RETURN_IF_ERROR(Use(candidate));
    return candidate;
  }
  return FailedPrecondition("no earlier environment to roll back to");
}

std::string FindProjectDir(const std::string& start) {
  std::error_code ec;
  fs::path dir = fs::absolute(start, ec).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();  // "/a/b/" from "."
  for (fs::path d = dir; !d.empty(); d = d.parent_path()) {
    if (fs::exists(d / "cairn.yaml", ec) || fs::is_directory(d / ".cairn" / "env", ec)) {
      return d.string();
    }
    if (d == d.parent_path()) break;
  }
  return dir.string();
}

}  // namespace cairn::env
