// Pieces every MetadataStore backend shares: the error messages clients see (worded as MLflow
// words them, since clients and users match on them), tag and latest-metric bookkeeping, and
// the in-memory ordering and paging of search results.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "store/metadata_store.h"

namespace cairn::store {

Status ExperimentNotFound(std::string_view id);
Status ExperimentNameTaken(std::string_view name);
Status RunNotFound(std::string_view run_id);
Status RunTagNotFound(std::string_view run_id, std::string_view key);
Status RunNotActive(std::string_view run_id, core::LifecycleStage stage);
Status ArtifactNotFound(std::string_view path);
// A file cannot be written where a directory is, or under a path that is a file.
Status ArtifactPathTaken(std::string_view path, std::string_view file);
// "a/b/c" -> {"a", "a/b"}.
std::vector<std::string_view> ParentDirs(std::string_view path);
Status ParamChanged(std::string_view run_id, std::string_view key, std::string_view old_value,
                    std::string_view new_value);
// Identity (IdentityStore).
Status UserNotFound(std::string_view username);
Status UserTaken(std::string_view username);
Status TeamNotFound(std::string_view name);
Status TeamTaken(std::string_view name);
Status NotATeamMember(std::string_view team, std::string_view username);
Status TokenNotFound(std::string_view id);
Status TokenNameTaken(std::string_view owner, std::string_view name);
Status GrantNotFound(core::ResourceKind kind, std::string_view resource_id,
                     core::PrincipalKind principal_kind, std::string_view principal);

// Model registry (RegistryStore).
Status RegisteredModelNotFound(std::string_view name);
Status RegisteredModelTaken(std::string_view name);
Status ModelVersionNotFound(std::string_view name, int64_t version);
Status AliasNotFound(std::string_view name, std::string_view alias);
// Datasets: "Dataset 'mnist' not found", "Dataset mnist has no version 4".
Status DatasetNotFound(std::string_view name);
Status DataVersionNotFound(std::string_view name, int64_t version);
Status DatasetExists(std::string_view name);
Status NothingToRollBack(std::string_view name, std::string_view alias);

// Experiment ids are decimal integers; false for anything else.
bool ParseExperimentId(std::string_view id, int64_t* out);

void UpsertTag(std::vector<core::Tag>* tags, const core::Tag& tag);
bool EraseTag(std::vector<core::Tag>* tags, std::string_view key);
// Replaces the entry for m.key when m is newer than it (or adds it).
void UpdateLatest(std::vector<core::Metric>* latest, const core::Metric& m);

// What of `chunks` a log of length `log_end` does not hold yet, each trimmed to start at the
// end of the one before (AppendRunLog's rules); kFailedPrecondition at a gap.
Result<std::vector<core::ConsoleChunk>> ChunksToAppend(int64_t log_end,
                                                      const std::vector<core::ConsoleChunk>& chunks);

// Sorts matched runs by the query's order and returns the page [offset, offset + max_results).
std::vector<core::Run> SortAndPage(std::vector<core::Run> runs, const RunSearchQuery& query);

}  // namespace cairn::store
