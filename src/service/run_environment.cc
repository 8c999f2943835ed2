#include "service/run_environment.h"

namespace cairn::service {

Result<std::optional<env::EnvDescription>> ReadRunEnvironment(TrackingService& tracking,
                                                              ArtifactService& artifacts,
                                                              const std::string& run_id) {
  CAIRN_ASSIGN_OR_RETURN(core::RunInfo info, tracking.GetRunInfo(run_id));
  auto read = [&](std::string_view record) -> Result<std::optional<std::string>> {
    Result<std::string> text =
        artifacts.ReadRunFile(info.artifact_uri, record, kMaxEnvironmentRecordBytes);
    if (text.status().code() == StatusCode::kNotFound) return std::optional<std::string>();
    if (!text.ok()) return text.status().WithContext("run " + run_id);
    return std::optional<std::string>(std::move(text).value());
  };
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> pylock, read(env::kRunPylockArtifact));
  if (!pylock) return std::optional<env::EnvDescription>();
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> host, read(env::kRunHostArtifact));
  Result<env::EnvDescription> described =
      env::DescribeRunRecords(*pylock, host.value_or(""), run_id);
  if (!described.ok()) return described.status().WithContext("run " + run_id);
  return std::optional<env::EnvDescription>(std::move(described).value());
}

Result<EnvironmentComparison> CompareRunEnvironments(TrackingService& tracking,
                                                     ArtifactService& artifacts,
                                                     const std::vector<std::string>& run_ids) {
  if (run_ids.size() < 2 || run_ids.size() > 10) {
    return InvalidArgument("Compare takes 2 to 10 runs; " + std::to_string(run_ids.size()) +
                           " given.");
  }
  EnvironmentComparison out;
  std::optional<env::EnvDescription> baseline;
  for (const std::string& run_id : run_ids) {
    Result<std::optional<env::EnvDescription>> read =
        ReadRunEnvironment(tracking, artifacts, run_id);
    // An unreadable or oversized snapshot concerns its run alone.
    const StatusCode code = read.status().code();
    if (!read.ok() && code != StatusCode::kInvalidArgument &&
        code != StatusCode::kResourceExhausted) {
      return read.status();
    }
    if (!read.ok() || !read->has_value()) {
      out.runs.push_back({run_id, false, read.ok() ? "" : read.status().message()});
      continue;
    }
    std::optional<env::EnvDescription> environment = std::move(read).value();
    out.runs.push_back({run_id, true, ""});
    if (!baseline) {
      baseline = std::move(environment);
      out.baseline = run_id;
    } else {
      out.diffs.push_back({run_id, env::DiffEnvironments(*baseline, *environment)});
    }
  }
  return out;
}

}  // namespace cairn::service
