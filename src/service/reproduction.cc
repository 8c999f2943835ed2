#include "service/reproduction.h"

#include <algorithm>
#include <map>

#include "env/env_diff.h"
#include "service/run_environment.h"
#include "util/json_reader.h"
#include "util/strings.h"

namespace cairn::service {
namespace {

// What one comparison reads at most: metrics, values of one metric of one run, values in all
// (both runs), and files of each run. A metric cut by them is incomplete, with the reason.
constexpr size_t kMaxComparedMetrics = 1000;
constexpr int64_t kMaxSeriesValues = 1'000'000;
constexpr int64_t kMaxComparedValues = 2'000'000;
constexpr int64_t kMaxComparedFiles = 10'000;
constexpr int64_t kMaxHostRecordBytes = 1 << 20;

// The histories of both runs, within the limits; `partial` gets the metrics they cut.
Status ReadHistories(TrackingService& tracking, const std::string& original_id,
                     const std::string& run_id, const std::vector<std::string>& keys,
                     core::MetricHistories* original, core::MetricHistories* reproduced,
                     core::PartialSeries* partial) {
  int64_t budget = kMaxComparedValues;
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string& key = keys[i];
    if (i >= kMaxComparedMetrics) {
      (*partial)[key] = "not compared: a reproduction compares at most " +
                        std::to_string(kMaxComparedMetrics) + " metrics";
      continue;
    }
    for (auto [id, into] : {std::pair{&original_id, original}, std::pair{&run_id, reproduced}}) {
      const int64_t limit = std::min(kMaxSeriesValues, budget);
      if (limit <= 0) {
        (*partial)[key] = "not compared: a reproduction compares at most " +
                          std::to_string(kMaxComparedValues) + " values in all";
        break;
      }
      CAIRN_ASSIGN_OR_RETURN(MetricHistoryCursor cursor,
                             tracking.OpenMetricHistory(*id, key, limit, ""));
      std::vector<core::Metric> series;
      std::string next;
      CAIRN_RETURN_IF_ERROR(tracking.StreamMetricHistory(
          cursor,
          [&series](const core::Metric& m) {
            series.push_back({"", m.value, m.timestamp, m.step});  // the key is the map's
            return true;
          },
          &next));
      budget -= static_cast<int64_t>(series.size());
      if (!next.empty()) {
        (*partial)[key] = "only the first " + std::to_string(series.size()) +
                          " values of a run were compared (a reproduction's limit)";
      }
      if (!series.empty()) (*into)[key] = std::move(series);
    }
  }
  return Status::Ok();
}

// The run's own files (not cairn/...) by path, with their digests.
Result<std::map<std::string, store::ArtifactFile>> OutputFiles(ArtifactService& artifacts,
                                                               const core::RunInfo& run) {
  std::map<std::string, store::ArtifactFile> out;
  CAIRN_ASSIGN_OR_RETURN(std::vector<store::ArtifactFile> files,
                         artifacts.ListRunFiles(run.artifact_uri, kMaxComparedFiles));
  for (store::ArtifactFile& f : files) {
    if (f.path == "cairn" || f.path.starts_with("cairn/")) continue;
    out[f.path] = std::move(f);
  }
  return out;
}

std::vector<std::string> ArtifactDifferences(
    const Result<std::map<std::string, store::ArtifactFile>>& original,
    const Result<std::map<std::string, store::ArtifactFile>>& reproduced) {
  for (const auto* side : {&original, &reproduced}) {
    if (!side->ok()) return {"not compared: " + side->status().message()};
  }
  const std::map<std::string, store::ArtifactFile>& a = *original;
  const std::map<std::string, store::ArtifactFile>& b = *reproduced;
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
  if (const core::Tag* of = reproduced.FindTag(kReproduceOfTag);
      of != nullptr && of->value != original_id) {
    return InvalidArgument("Run " + run_id + " reproduces run " + of->value +
                           " (its cairn.reproduce.of tag), not " + original_id + ".");
  }
  core::ReproduceOptions options = given;
  if (options.metrics.empty()) {
    for (const core::Metric& m : original.data.metrics) {
      if (!m.key.starts_with("system/")) options.metrics.push_back(m.key);
    }
  }
  std::sort(options.metrics.begin(), options.metrics.end());
  options.metrics.erase(std::unique(options.metrics.begin(), options.metrics.end()),
                        options.metrics.end());
  core::MetricHistories a, b;
  core::PartialSeries partial;
  CAIRN_RETURN_IF_ERROR(
      ReadHistories(tracking, original_id, run_id, options.metrics, &a, &b, &partial));
  const core::Verdict verdict =
      core::CompareReproduction(a, b, options, reproduced.info.status, partial);
  core::ReproductionDifferences differences = core::CompareRunRecords(original, reproduced);
  differences.environment = EnvironmentDifferences(tracking, artifacts, original_id, run_id);
  differences.artifacts = ArtifactDifferences(OutputFiles(artifacts, original.info),
                                              OutputFiles(artifacts, reproduced.info));
  // The host facts the run uploaded, written into the record only as the JSON object they
  // must be.
  std::string host_json;
  if (Result<std::string> host = artifacts.ReadRunFile(
          reproduced.info.artifact_uri, env::kRunHostArtifact, kMaxHostRecordBytes);
      host.ok()) {
    Result<JsonDocument> doc = JsonDocument::Parse(*host, 16);
    if (doc.ok() && doc->root().is_object()) host_json = doc->root().Serialize();
  }
  const std::string record = core::ReproductionJson(original, reproduced, options, verdict,
                                                    differences, host_json);
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
