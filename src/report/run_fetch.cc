// The report's reads from a tracking server (run_report.h): runs by id prefix, every
// experiment, searches across pages, a run's artifacts and environment records.
#include <algorithm>

#include "report/run_report.h"

namespace cairn::report {

using client::TrackingClient;

// ---------------------------------------------------------------------------------------------
// Fetching

namespace {

constexpr int64_t kPageSize = 1000;

bool IsPrefixSafe(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
  });
}

}  // namespace

Result<std::vector<core::Experiment>> ListAllExperiments(TrackingClient& client,
                                                         core::ViewType view) {
  std::vector<core::Experiment> out;
  TrackingClient::ExperimentSearch search;
  search.view = view;
  search.max_results = kPageSize;
  for (;;) {
    CAIRN_ASSIGN_OR_RETURN(TrackingClient::ExperimentPage page, client.SearchExperiments(search));
    for (core::Experiment& e : page.experiments) out.push_back(std::move(e));
    if (page.next_page_token.empty()) return out;
    search.page_token = page.next_page_token;
  }
}

Result<std::vector<core::Run>> SearchRunsUpTo(TrackingClient& client,
                                              TrackingClient::RunSearch search, size_t limit,
                                              bool* more) {
  std::vector<core::Run> out;
  *more = false;
  for (;;) {
    int64_t want = kPageSize;
    if (limit > 0) want = std::min<int64_t>(kPageSize, static_cast<int64_t>(limit - out.size()));
    search.max_results = want;
    CAIRN_ASSIGN_OR_RETURN(TrackingClient::RunPage page, client.SearchRuns(search));
    for (core::Run& run : page.runs) out.push_back(std::move(run));
    if (page.next_page_token.empty()) return out;
    if (limit > 0 && out.size() >= limit) {
      *more = true;
      return out;
    }
    search.page_token = page.next_page_token;
  }
}

Result<core::Run> ResolveRun(TrackingClient& client, const std::string& id_or_prefix) {
  if (id_or_prefix.empty()) return InvalidArgument("empty run id");
  Result<core::Run> run = client.GetRun(id_or_prefix);
  if (run.ok() || run.status().code() != StatusCode::kNotFound) return run;
  const std::string not_found = "no run with id or id prefix '" + id_or_prefix + "'";
  // A LIKE pattern made of these characters means only "starts with".
  if (!IsPrefixSafe(id_or_prefix)) return NotFound(not_found);
  CAIRN_ASSIGN_OR_RETURN(std::vector<core::Experiment> experiments,
                         ListAllExperiments(client, core::ViewType::kAll));
  TrackingClient::RunSearch search;
  for (const core::Experiment& e : experiments) search.experiment_ids.push_back(e.experiment_id);
  if (search.experiment_ids.empty()) return NotFound(not_found);
  search.view = core::ViewType::kAll;
  search.filter = "attributes.run_id LIKE '" + id_or_prefix + "%'";
  bool more = false;
  CAIRN_ASSIGN_OR_RETURN(std::vector<core::Run> matches,
                         SearchRunsUpTo(client, search, /*limit=*/5, &more));
  if (matches.empty()) return NotFound(not_found);
  if (matches.size() > 1) {
    std::string ids;
    for (const core::Run& m : matches) ids += (ids.empty() ? "" : ", ") + m.info.run_id;
    return InvalidArgument("run id prefix '" + id_or_prefix + "' is ambiguous: " + ids +
                           (more ? ", ..." : ""));
  }
  return std::move(matches.front());
}

Result<RunDetails> FetchRunDetails(TrackingClient& client, const core::Run& run) {
  RunDetails details;
  details.run = run;
  // The name is a convenience: a run whose experiment cannot be read is still shown.
  Result<core::Experiment> experiment = client.GetExperiment(run.info.experiment_id);
  if (experiment.ok()) details.experiment_name = experiment->name;
  std::vector<std::string> dirs = {""};
  size_t listed_dirs = 0;
  while (!dirs.empty()) {
    std::string dir = std::move(dirs.back());
    dirs.pop_back();
    if (++listed_dirs > kMaxListedArtifacts) {
      details.artifacts_truncated = true;
      break;
    }
    CAIRN_ASSIGN_OR_RETURN(std::vector<TrackingClient::ArtifactFile> entries,
                           client.ListArtifacts(run.info.run_id, dir));
    for (TrackingClient::ArtifactFile& e : entries) {
      if (e.is_dir) {
        dirs.push_back(std::move(e.path));
      } else if (details.artifacts.size() < kMaxListedArtifacts) {
        details.artifacts.push_back(std::move(e));
      } else {
        details.artifacts_truncated = true;
      }
    }
  }
  std::sort(details.artifacts.begin(), details.artifacts.end(),
            [](const auto& a, const auto& b) { return a.path < b.path; });
  return details;
}

Result<env::EnvDescription> FetchRunEnvironment(TrackingClient& client, const core::Run& run) {
  const std::string pylock_artifact(env::kRunPylockArtifact);
  Result<std::string> pylock = client.DownloadArtifact(run.info.artifact_uri, pylock_artifact);
  if (pylock.status().code() == StatusCode::kNotFound) {
    return NotFound("run " + run.info.run_id + " has no artifact " + pylock_artifact +
                    " (runs recorded by `cairn run` have one)");
  }
  CAIRN_RETURN_IF_ERROR(pylock.status());
  // The host it ran on, which `cairn run` records beside the snapshot.
  Result<std::string> host =
      client.DownloadArtifact(run.info.artifact_uri, std::string(env::kRunHostArtifact));
  if (!host.ok() && host.status().code() != StatusCode::kNotFound) return host.status();
  Result<env::EnvDescription> described =
      env::DescribeRunRecords(*pylock, host.ok() ? *host : "", run.info.run_id);
  if (!described.ok()) return described.status().WithContext("run " + run.info.run_id);
  return described;
}

}  // namespace cairn::report
