// RegistryStore: where registered models, their versions, tags, aliases and the history of
// every alias move live.
//
// Every MetadataStore backend holds one, in the same database as the runs its versions come
// from (MetadataStore::registry()), and passes one conformance suite
// (registry_store_conformance_test.cc). The contracts of MetadataStore hold here too: every
// method may be called from many threads at once, and one that returns OK has committed.
// Errors: kNotFound when a named model, version, tag or alias does not exist (with MLflow's
// messages), kAlreadyExists on a duplicate model name. Validation (names, stages, who may do
// what) belongs to the registry service; the store keeps the values consistent: a version
// number is never given twice within a model, even after deletes; deleting a version removes
// the aliases naming it; deleting a model takes its versions, tags, aliases and history with
// it; renaming a model carries all of them over. Files of versions live in the artifact index
// under each version's storage_location; the store only records that location.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/registry.h"
#include "core/search.h"
#include "util/status.h"

namespace cairn::store {

struct RegistrySearchQuery {
  std::vector<core::Clause> filter;
  std::vector<core::OrderKey> order;  // as given; the store adds the tie-breaks of search.h
  int64_t offset = 0;
  int64_t max_results = 100;
  // Only models whose name passes (the caller's permissions); unset: all. Offsets count
  // passing entries only.
  std::function<bool(std::string_view model_name)> visible;
};

class RegistryStore {
 public:
  virtual ~RegistryStore() = default;

  // --- Registered models -------------------------------------------------------------------
  // Stores the model with its tags (aliases and latest_versions are ignored).
  virtual Status CreateRegisteredModel(const core::RegisteredModel& model) = 0;
  // The model with its tags and aliases; latest_versions is left empty.
  virtual Result<core::RegisteredModel> GetRegisteredModel(std::string_view name) = 0;
  // kAlreadyExists when new_name is taken. Versions (their last_updated_timestamp set to
  // `now`), tags and aliases follow the model.
  virtual Status RenameRegisteredModel(std::string_view name, std::string_view new_name,
                                       int64_t now) = 0;
  virtual Status UpdateRegisteredModel(std::string_view name, std::string_view description,
                                       int64_t now) = 0;
  // Returns the model's versions (for their files) as they were before the delete.
  virtual Result<std::vector<core::ModelVersion>> DeleteRegisteredModel(std::string_view name) = 0;
  virtual Status SetRegisteredModelTag(std::string_view name, const core::Tag& tag) = 0;
  // A tag that is not there is no error (as in MLflow); a model that is not is.
  virtual Status DeleteRegisteredModelTag(std::string_view name, std::string_view key) = 0;
  // Models matching the filter, in order, at most max_results from offset; with tags and
  // aliases, latest_versions left empty.
  virtual Result<std::vector<core::RegisteredModel>> SearchRegisteredModels(
      const RegistrySearchQuery& query) = 0;

  // --- Model versions ----------------------------------------------------------------------
  // Assigns the next version number of the model (one more than any it ever had) and stores
  // the version with its tags; also sets the model's last_updated_timestamp to the version's
  // creation time. Returns the version as stored. kNotFound when the model does not exist.
  virtual Result<core::ModelVersion> CreateModelVersion(const core::ModelVersion& version) = 0;
  // With tags and aliases.
  virtual Result<core::ModelVersion> GetModelVersion(std::string_view name, int64_t version) = 0;
  // Changes the fields given, and last_updated_timestamp to `now`.
  virtual Status UpdateModelVersion(std::string_view name, int64_t version,
                                    std::optional<std::string> description,
                                    std::optional<core::ModelVersionStatus> status,
                                    std::optional<std::string> status_message, int64_t now) = 0;
  // Moves the version to `stage`; with archive_existing, every other version of the model in
  // that stage moves to Archived in the same transaction. The model's last_updated_timestamp
  // becomes `now` too.
  virtual Status TransitionModelVersionStage(std::string_view name, int64_t version,
                                             core::ModelStage stage, bool archive_existing,
                                             int64_t now) = 0;
  // Removes the version, its tags and the aliases naming it (each removal recorded in the
  // alias history as a delete by `actor`). Returns the version as it was.
  virtual Result<core::ModelVersion> DeleteModelVersion(std::string_view name, int64_t version,
                                                        std::string_view actor, int64_t now) = 0;
  virtual Status SetModelVersionTag(std::string_view name, int64_t version,
                                    const core::Tag& tag) = 0;
  // A tag that is not there is no error; a version that is not is.
  virtual Status DeleteModelVersionTag(std::string_view name, int64_t version,
                                       std::string_view key) = 0;
  // Versions matching the filter, in order, at most max_results from offset; with tags and
  // aliases.
  virtual Result<std::vector<core::ModelVersion>> SearchModelVersions(
      const RegistrySearchQuery& query) = 0;
  // The name of the model one of whose versions has this storage_location; kNotFound when
  // none has.
  virtual Result<std::string> ModelOfStorage(std::string_view storage_location) = 0;
  // The newest version (highest number) of the model in each stage that has one; stages in
  // the order of their lowest version, as MLflow lists them.
  virtual Result<std::vector<core::ModelVersion>> LatestVersions(std::string_view name) = 0;

  // --- Aliases -----------------------------------------------------------------------------
  // Points the alias at the version (kNotFound when either the model or the version does not
  // exist) and records the move.
  virtual Status SetAlias(std::string_view name, std::string_view alias, int64_t version,
                          std::string_view actor, int64_t now) = 0;
  // Removes the alias and records the move; an alias the model does not have is no error (as
  // in MLflow), and no move.
  virtual Status DeleteAlias(std::string_view name, std::string_view alias, std::string_view actor,
                             int64_t now) = 0;
  // The version the alias names, with its tags and aliases; an unknown alias is
  // kInvalidArgument, as MLflow answers it.
  virtual Result<core::ModelVersion> GetModelVersionByAlias(std::string_view name,
                                                            std::string_view alias) = 0;
  // The moves of one alias ("" for every alias of the model), oldest first.
  virtual Result<std::vector<core::AliasMove>> AliasHistory(std::string_view name,
                                                            std::string_view alias) = 0;
  // Moves the alias to core::AliasRollbackTarget of its history, in one transaction, and
  // records the move. Returns the version it now names (nullopt: the alias was removed).
  // Versions deleted since are passed over; kFailedPrecondition when there is nothing to go
  // back to.
  virtual Result<std::optional<int64_t>> RollbackAlias(std::string_view name,
                                                       std::string_view alias,
                                                       std::string_view actor, int64_t now) = 0;
};

}  // namespace cairn::store
