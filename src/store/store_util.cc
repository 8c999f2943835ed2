#include "store/store_util.h"

#include <algorithm>
#include <charconv>

namespace cairn::store {

Status ExperimentNotFound(std::string_view id) {
  return NotFound("No Experiment with id=" + std::string(id) + " exists");
}

Status ExperimentNameTaken(std::string_view name) {
  return AlreadyExists("Experiment(name=" + std::string(name) + ") already exists.");
}

Status RunNotFound(std::string_view run_id) {
  return NotFound("Run with id=" + std::string(run_id) + " not found");
}

Status RunTagNotFound(std::string_view run_id, std::string_view key) {
  return NotFound("No tag with name: " + std::string(key) + " in run with id " +
                  std::string(run_id));
}

Status RunNotActive(std::string_view run_id, core::LifecycleStage stage) {
  return InvalidArgument("The run " + std::string(run_id) +
                         " must be in the 'active' state. Current state is " +
                         std::string(core::LifecycleStageName(stage)) + ".");
}

Status ArtifactNotFound(std::string_view path) {
  return NotFound("No artifact at path '" + std::string(path) + "'");
}

Status UserNotFound(std::string_view username) {
  return NotFound("User with username=" + std::string(username) + " not found");
}

Status UserTaken(std::string_view username) {
  return AlreadyExists("User '" + std::string(username) + "' already exists");
}

Status TeamNotFound(std::string_view name) {
  return NotFound("Team " + std::string(name) + " not found");
}

Status TeamTaken(std::string_view name) {
  return AlreadyExists("Team '" + std::string(name) + "' already exists");
}

Status NotATeamMember(std::string_view team, std::string_view username) {
  return NotFound("User " + std::string(username) + " is not a member of team " +
                  std::string(team));
}

Status TokenNotFound(std::string_view id) {
  return NotFound("Token " + std::string(id) + " not found");
}

Status TokenNameTaken(std::string_view owner, std::string_view name) {
  return AlreadyExists("Token '" + std::string(name) + "' already exists for user " +
                       std::string(owner));
}

Status GrantNotFound(core::ResourceKind kind, std::string_view resource_id,
                     core::PrincipalKind principal_kind, std::string_view principal) {
  return NotFound(std::string(core::ResourceKindName(kind)) + " permission with " +
                  std::string(core::PrincipalKindName(principal_kind)) + " " +
                  std::string(principal) + " and id " + std::string(resource_id) + " not found");
}

Status RegisteredModelNotFound(std::string_view name) {
  return NotFound("Registered Model with name=" + std::string(name) + " not found");
}

Status RegisteredModelTaken(std::string_view name) {
  return AlreadyExists("Registered Model (name=" + std::string(name) + ") already exists.");
}

Status ModelVersionNotFound(std::string_view name, int64_t version) {
  return NotFound("Model Version (name=" + std::string(name) +
                  ", version=" + std::to_string(version) + ") not found");
}

Status AliasNotFound(std::string_view name, std::string_view alias) {
  // MLflow answers an unknown alias with INVALID_PARAMETER_VALUE (400), not a 404.
  return InvalidArgument("Registered model alias " + std::string(alias) + " not found.");
}

Status NothingToRollBack(std::string_view name, std::string_view alias) {
  return FailedPrecondition("Alias '" + std::string(alias) + "' of registered model '" +
                            std::string(name) + "' has no earlier version to roll back to");
}

Status ArtifactPathTaken(std::string_view path, std::string_view file) {
  if (path == file) {
    return FailedPrecondition("Cannot write artifact '" + std::string(path) +
                              "': it is a directory");
  }
  return FailedPrecondition("Cannot write artifact '" + std::string(path) + "': '" +
                            std::string(file) + "' is a file, not a directory");
}

std::vector<std::string_view> ParentDirs(std::string_view path) {
  std::vector<std::string_view> dirs;
  for (size_t slash = path.find('/'); slash != std::string_view::npos;
       slash = path.find('/', slash + 1)) {
    dirs.push_back(path.substr(0, slash));
  }
  return dirs;
}

Status ParamChanged(std::string_view run_id, std::string_view key, std::string_view old_value,
                    std::string_view new_value) {
  return InvalidArgument("Changing param values is not allowed. Param with key='" +
                         std::string(key) + "' was already logged with value='" +
                         std::string(old_value) + "' for run ID='" + std::string(run_id) +
                         "'. Attempted logging new value '" + std::string(new_value) + "'.");
}

bool ParseExperimentId(std::string_view id, int64_t* out) {
  if (id.empty() || id.size() > 18) return false;
  auto r = std::from_chars(id.data(), id.data() + id.size(), *out);
  return r.ec == std::errc() && r.ptr == id.data() + id.size() && *out >= 0;
}

void UpsertTag(std::vector<core::Tag>* tags, const core::Tag& tag) {
  for (core::Tag& t : *tags) {
    if (t.key == tag.key) {
      t.value = tag.value;
      return;
    }
  }
  tags->push_back(tag);
}

bool EraseTag(std::vector<core::Tag>* tags, std::string_view key) {
  auto it = std::find_if(tags->begin(), tags->end(),
                         [&](const core::Tag& t) { return t.key == key; });
  if (it == tags->end()) return false;
  tags->erase(it);
  return true;
}

void UpdateLatest(std::vector<core::Metric>* latest, const core::Metric& m) {
  for (core::Metric& have : *latest) {
    if (have.key == m.key) {
      if (core::MetricIsNewer(m, have)) have = m;
      return;
    }
  }
  latest->push_back(m);
}

Result<std::vector<core::ConsoleChunk>> ChunksToAppend(
    int64_t log_end, const std::vector<core::ConsoleChunk>& chunks) {
  std::vector<core::ConsoleChunk> out;
  for (const core::ConsoleChunk& chunk : chunks) {
    if (chunk.offset > log_end) {
      return FailedPrecondition("console log chunk at offset " + std::to_string(chunk.offset) +
                                " leaves a gap: the log holds " + std::to_string(log_end) +
                                " bytes");
    }
    const int64_t end = chunk.offset + static_cast<int64_t>(chunk.data.size());
    if (end <= log_end) continue;  // already there
    core::ConsoleChunk rest = chunk;
    rest.data.erase(0, static_cast<size_t>(log_end - chunk.offset));
    rest.offset = log_end;
    log_end = end;
    out.push_back(std::move(rest));
  }
  return out;
}

std::vector<core::Run> SortAndPage(std::vector<core::Run> runs, const RunSearchQuery& query) {
  int64_t offset = std::max<int64_t>(0, query.offset);
  core::SortRuns(&runs, query.order, static_cast<size_t>(offset + query.max_results));
  size_t begin = std::min(runs.size(), static_cast<size_t>(offset));
  size_t end = std::min(runs.size(), begin + static_cast<size_t>(query.max_results));
  std::vector<core::Run> page;
  page.reserve(end - begin);
  std::move(runs.begin() + begin, runs.begin() + end, std::back_inserter(page));
  return page;
}

Status DatasetNotFound(std::string_view name) {
  return NotFound("Dataset '" + std::string(name) + "' not found");
}

Status DataVersionNotFound(std::string_view name, int64_t version) {
  return NotFound("Dataset " + std::string(name) + " has no version " + std::to_string(version));
}

Status DatasetExists(std::string_view name) {
  return AlreadyExists("Dataset '" + std::string(name) + "' already exists");
}

}  // namespace cairn::store
