#include "service/reproduction.h"

#include <deque>
#include <map>

#include "env/env_diff.h"
#include "service/run_environment.h"
#include "util/strings.h"

namespace cairn::service {
namespace {

// A reproduction compares at most this many points of each metric, and this many files.
constexpr int64_t kMaxComparedPoints = 1'000'000;
constexpr int64_t kMaxComparedFiles = 10'000;
constexpr int64_t kMaxHostRecordBytes = 1 << 20;

Result<core::MetricHistories> Histories(TrackingService& tracking, const std::string& run_id,
                                        const std::vector<std::string>& keys) {
  core::MetricHistories out;
  for (const std::string& key : keys) {
    CAIRN_ASSIGN_OR_RETURN(MetricHistoryCursor cursor,
                           tracking.OpenMetricHistory(run_id, key, kMaxComparedPoints, ""));
    std::vector<core::Metric> series;
    std::string next;
    CAIRN_RETURN_IF_ERROR(tracking.StreamMetricHistory(
        cursor,
        [&series](const core::Metric& m) {
          series.push_back(m);
          return true;
        },
        &next));
    if (!series.empty()) out[key] = std::move(series);
  }
  return out;
}

// The run's own files (not cairn/...) by path, with their digests.
std::map<std::string, store::ArtifactFile> OutputFiles(ArtifactService& artifacts,
                                                       const core::RunInfo& run) {
  std::map<std::string, store::ArtifactFile> out;
  Result<std::vector<store::ArtifactFile>> files =
      artifacts.ListRunFiles(run.artifact_uri, kMaxComparedFiles);
  if (!files.ok()) return out;
  for (store::ArtifactFile& f : *files) {
    if (f.path == "cairn" || f.path.starts_with("cairn/")) continue;
    out[f.path] = std::move(f);
  }
  return out;
}

std::vector<std::string> ArtifactDifferences(const std::map<std::string, store::ArtifactFile>& a,
                                             const std::map<std::string, store::ArtifactFile>& b) {
  std::vector<std::string> out;
  for (const auto& [path, file] : a) {
    auto it = b.find(path);
    if (it == b.end()) {
      out.push_back(path + ": only in the original");
    } else if (it->second.digest != file.digest) {
      out.push_back(path + ": sha256 " + file.digest.substr(0, 12) + " -> " +
                    it->second.digest.substr(0, 12) + " (" + std::to_string(file.size) + " -> " +
                    std::to_string(it->second.size) + " bytes)");
    }
  }
  for (const auto& [path, file] : b) {
    if (a.count(path) == 0) out.push_back(path + ": only in the new run");
  }
  return out;
}

// The environment diff of `cairn runs diff-env`, a line per difference.
std::vector<std::string> EnvironmentDifferences(TrackingService& tracking,
                                                ArtifactService& artifacts,
                                                const std::string& original,
                                                const std::string& reproduced) {
  Result<EnvironmentComparison> compared =
      CompareRunEnvironments(tracking, artifacts, {original, reproduced});
  if (!compared.ok()) return {"not compared: " + compared.status().message()};
  std::vector<std::string> out;
  for (const RunEnvironmentRecord& r : compared->runs) {
    if (!r.recorded) {
      out.push_back(std::string(r.run_id == original ? "the original" : "the new run") +
                    (r.error.empty() ? " recorded no environment" : ": " + r.error));
    }
  }
  for (const RunEnvironmentDiff& d : compared->diffs) {
    if (d.diff.empty()) continue;
    for (std::string_view line :
         Split(env::FormatEnvDiff(d.diff, "original", "reproduced", false), '\n')) {
      if (line.empty() || line.starts_with("--- ") || line.starts_with("+++ ")) continue;
      out.emplace_back(line);
    }
  }
  return out;
}

}  // namespace

Result<std::string> RecordReproduction(TrackingService& tracking, ArtifactService& artifacts,
                                       const std::string& original_id, const std::string& run_id,
                                       const core::ReproduceOptions& given) {
  CAIRN_ASSIGN_OR_RETURN(core::Run original, tracking.GetRun(original_id));
  CAIRN_ASSIGN_OR_RETURN(core::Run reproduced, tracking.GetRun(run_id));
  core::ReproduceOptions options = given;
  if (options.metrics.empty()) {
    for (const core::Metric& m : original.data.metrics) {
      if (!m.key.starts_with("system/")) options.metrics.push_back(m.key);
    }
  }
  CAIRN_ASSIGN_OR_RETURN(core::MetricHistories a,
                         Histories(tracking, original_id, options.metrics));
  CAIRN_ASSIGN_OR_RETURN(core::MetricHistories b, Histories(tracking, run_id, options.metrics));
  const core::Verdict verdict = core::CompareReproduction(a, b, options, reproduced.info.status);
  core::ReproductionDifferences differences = core::CompareRunRecords(original, reproduced);
  differences.environment = EnvironmentDifferences(tracking, artifacts, original_id, run_id);
  differences.artifacts = ArtifactDifferences(OutputFiles(artifacts, original.info),
                                              OutputFiles(artifacts, reproduced.info));
  Result<std::string> host = artifacts.ReadRunFile(reproduced.info.artifact_uri,
                                                   env::kRunHostArtifact, kMaxHostRecordBytes);
  const std::string record = core::ReproductionJson(original, reproduced, options, verdict,
                                                    differences, host.ok() ? *host : "");
  Result<std::string> root = ProxyPathOfUri(reproduced.info.artifact_uri);
  if (!root.ok()) {
    return FailedPrecondition("the artifacts of run " + run_id +
                              " are not on this server, so its verdict cannot be recorded");
  }
  const std::string path = (root->empty() ? "" : *root + "/") + std::string(kReproductionArtifact);
  CAIRN_RETURN_IF_ERROR(artifacts.PutBytes(path, record));
  if (reproduced.FindTag(kReproduceOfTag) == nullptr) {
    CAIRN_RETURN_IF_ERROR(tracking.SetTag(run_id, {std::string(kReproduceOfTag), original_id}));
  }
  CAIRN_RETURN_IF_ERROR(tracking.SetTag(
      run_id, {std::string(kReproduceVerdictTag), std::string(core::VerdictName(verdict.kind))}));
  return record;
}

}  // namespace cairn::service
