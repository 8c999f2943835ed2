#include "pipeline/run_state.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "util/file.h"

namespace cairn::pipeline {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

Result<RunInfo> ReadInfo(const std::string& dir) {
  CAIRN_ASSIGN_OR_RETURN(std::string text, ReadFile(dir + "/run.json"));
  json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return InvalidArgument(dir + "/run.json is not a JSON object");
  RunInfo info;
  info.id = j.value("id", "");
  info.name = j.value("name", "");
  info.spec_file = j.value("spec_file", "");
  info.executor = j.value("executor", "");
  info.no_cache = j.value("no_cache", false);
  info.started_ms = j.value("started_ms", int64_t{0});
  info.tracking_uri = j.value("tracking_uri", "");
  info.tracking_run_id = j.value("tracking_run_id", "");
  for (const char* key : {"params", "overrides"}) {
    auto& out = std::string(key) == "params" ? info.params : info.overrides;
    if (auto it = j.find(key); it != j.end() && it->is_object()) {
      for (const auto& [k, v] : it->items()) {
        if (v.is_string()) out[k] = v.get<std::string>();
      }
    }
  }
  info.dir = dir;
  return info;
}

}  // namespace

std::string RunState::RootOf(const std::string& project_dir) {
  return (fs::path(project_dir) / ".cairn" / "pipelines").string();
}

Result<std::unique_ptr<RunState>> RunState::Create(const std::string& root, RunInfo info,
                                                   const std::string& spec_text) {
  info.dir = root + "/" + info.id;
  std::error_code ec;
  fs::create_directories(info.dir + "/logs", ec);
  if (ec) return Internal("cannot create " + info.dir + ": " + ec.message());
  json j = {{"id", info.id},
            {"name", info.name},
            {"spec_file", info.spec_file},
            {"params", info.params},
            {"overrides", info.overrides},
            {"executor", info.executor},
            {"no_cache", info.no_cache},
            {"started_ms", info.started_ms},
            {"tracking_uri", info.tracking_uri},
            {"tracking_run_id", info.tracking_run_id}};
  CAIRN_RETURN_IF_ERROR(WriteFileAtomic(info.dir + "/spec.yaml", spec_text));
  CAIRN_RETURN_IF_ERROR(WriteFileAtomic(info.dir + "/run.json", j.dump(2) + "\n"));
  return std::unique_ptr<RunState>(new RunState(std::move(info)));
}

Result<std::unique_ptr<RunState>> RunState::Open(const std::string& root,
                                                 const std::string& id_or_prefix) {
  std::vector<std::string> matches;
  std::error_code ec;
  if (!id_or_prefix.empty()) {
    for (const fs::directory_entry& e : fs::directory_iterator(root, ec)) {
      const std::string name = e.path().filename().string();
      if (name == id_or_prefix) {
        matches = {name};
        break;
      }
      if (name.starts_with(id_or_prefix) && fs::exists(e.path() / "run.json")) {
        matches.push_back(name);
      }
    }
  }
  if (matches.empty()) {
    return NotFound("no pipeline run " + id_or_prefix + " in " + root +
                    " (`cairn pipeline ls` lists them)");
  }
  if (matches.size() > 1) {
    return InvalidArgument("several pipeline runs start with " + id_or_prefix + ": " + matches[0] +
                           ", " + matches[1] + (matches.size() > 2 ? ", ..." : ""));
  }
  CAIRN_ASSIGN_OR_RETURN(RunInfo info, ReadInfo(root + "/" + matches[0]));
  return std::unique_ptr<RunState>(new RunState(std::move(info)));
}

std::vector<RunInfo> RunState::List(const std::string& root) {
  std::vector<RunInfo> out;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(root, ec)) {
    if (Result<RunInfo> info = ReadInfo(e.path().string()); info.ok()) out.push_back(*info);
  }
  std::sort(out.begin(), out.end(), [](const RunInfo& a, const RunInfo& b) {
    return a.started_ms != b.started_ms ? a.started_ms > b.started_ms : a.id > b.id;
  });
  return out;
}

Status RunState::Append(const StepEvent& e) {
  json j = {{"step", e.step}, {"state", e.state}, {"time_ms", e.time_ms}};
  if (e.attempt > 0) j["attempt"] = e.attempt;
  if (!e.reason.empty()) j["reason"] = e.reason;
  if (e.exit_code != 0) j["exit_code"] = e.exit_code;
  if (!e.run_id.empty()) j["run_id"] = e.run_id;
  if (!e.cached_from.empty()) j["cached_from"] = e.cached_from;
  if (!e.cache_key.empty()) j["cache_key"] = e.cache_key;
  return AppendLine(&events_fd_, "events.jsonl", j.dump() + "\n");
}

RunState::~RunState() {
  if (events_fd_ >= 0) close(events_fd_);
  if (keys_fd_ >= 0) close(keys_fd_);
  if (lock_fd_ >= 0) close(lock_fd_);
}

Status RunState::LockRunner() {
  if (lock_fd_ >= 0) return Status::Ok();
  const std::string path = info_.dir + "/runner.lock";
  // Close-on-exec, so that no step keeps the lock after the runner is gone.
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Internal("cannot open " + path + ": " + strerror(errno));
  // `status` and `ls` take the lock for a moment to see whether a runner holds it: a few
  // tries tell them from a runner.
  int locked = -1;
  for (int attempt = 0; attempt < 20; ++attempt) {
    locked = flock(fd, LOCK_EX | LOCK_NB);
    if (locked == 0 || errno != EWOULDBLOCK) break;
    usleep(10'000);
  }
  if (locked != 0) {
    const int err = errno;
    close(fd);
    if (err != EWOULDBLOCK) return Internal("cannot lock " + path + ": " + strerror(err));
    const pid_t pid = Runner();
    return FailedPrecondition("run " + info_.id.substr(0, 8) + " is still running" +
                              (pid > 0 ? " (process " + std::to_string(pid) + ")" : std::string()) +
                              "; stop it first");
  }
  const std::string pid = std::to_string(getpid()) + "\n";
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    close(fd);
    return Internal("cannot write " + path + ": " + strerror(errno));
  }
  lock_fd_ = fd;
  return Status::Ok();
}

pid_t RunState::Runner() const {
  const std::string path = info_.dir + "/runner.lock";
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  pid_t pid = 0;
  if (flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
    char buf[32] = {};
    const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    pid = n > 0 ? static_cast<pid_t>(std::atoi(buf)) : 0;
    if (pid <= 0) pid = -1;  // locked, but the pid is not written yet
  }
  close(fd);
  return pid;
}

Status RunState::AppendLine(int* fd, const std::string& file, const std::string& line) {
  const std::string path = info_.dir + "/" + file;
  if (*fd < 0) {
    *fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (*fd < 0) return Internal("cannot open " + path + ": " + strerror(errno));
  }
  ssize_t n = write(*fd, line.data(), line.size());
  if (n != static_cast<ssize_t>(line.size())) {
    return Internal("cannot append to " + path + ": " + strerror(errno));
  }
  return Status::Ok();
}

Status RunState::AppendKeyParts(const std::string& step, const std::string& parts_json) {
  json parts = json::parse(parts_json, nullptr, false);
  json j = {{"step", step}, {"parts", parts}};
  return AppendLine(&keys_fd_, "keys.jsonl", j.dump() + "\n");
}

Result<std::string> RunState::KeyParts(const std::string& step) const {
  Result<std::string> text = ReadFile(info_.dir + "/keys.jsonl");
  if (!text.ok()) return NotFound("no cache keys were computed in run " + info_.id);
  std::string found;
  size_t pos = 0;
  while (pos < text->size()) {
    size_t end = text->find('\n', pos);
    if (end == std::string::npos) break;
    json j = json::parse(text->begin() + pos, text->begin() + end, nullptr, false);
    pos = end + 1;
    if (j.is_object() && j.value("step", "") == step && j.contains("parts")) {
      found = j["parts"].dump();
    }
  }
  if (found.empty()) return NotFound("no cache key of " + step + " in run " + info_.id);
  return found;
}

std::vector<StepEvent> RunState::Events() const {
  std::vector<StepEvent> out;
  Result<std::string> text = ReadFile(info_.dir + "/events.jsonl");
  if (!text.ok()) return out;
  size_t pos = 0;
  while (pos < text->size()) {
    size_t end = text->find('\n', pos);
    if (end == std::string::npos) break;  // torn last line
    json j = json::parse(text->begin() + pos, text->begin() + end, nullptr, false);
    pos = end + 1;
    if (!j.is_object()) continue;
    StepEvent e;
    e.step = j.value("step", "");
    e.state = j.value("state", "");
    e.attempt = j.value("attempt", 0);
    e.time_ms = j.value("time_ms", int64_t{0});
    e.reason = j.value("reason", "");
    e.exit_code = j.value("exit_code", 0);
    e.run_id = j.value("run_id", "");
    e.cached_from = j.value("cached_from", "");
    e.cache_key = j.value("cache_key", "");
    out.push_back(std::move(e));
  }
  return out;
}

std::map<std::string, StepEvent> RunState::Latest() const {
  std::map<std::string, StepEvent> out;
  for (StepEvent& e : Events()) out[e.step] = std::move(e);
  return out;
}

}  // namespace cairn::pipeline
