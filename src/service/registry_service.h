// RegistryService: the rules of MLflow's model registry API over the RegistryStore, and where
// a version's files come from.
//
// A version is made from files the server already holds: its source names a run's artifacts
// (runs:/RUN/PATH, or the run's mlflow-artifacts: URI and a path under it) or another version
// (models:/NAME/VERSION). Its files are copied into the artifact index under
// `models/<id>/`, where they are content-addressed like every artifact: the copy costs no
// space, and deleting the run later leaves the version whole. A source anywhere else is refused
// unless the server's operator allowed its scheme (the files then stay where they are). Source
// paths are checked like any artifact path and are never joined onto a file system path.
// Validation and messages follow MLflow's handlers and its SQL registry store.
#pragma once

#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/identity.h"
#include "core/registry.h"
#include "service/artifact_service.h"
#include "service/identity_service.h"
#include "store/metadata_store.h"
#include "util/clock.h"

namespace cairn::service {

inline constexpr int64_t kMaxRegisteredModelResults = 1000;
inline constexpr int64_t kDefaultRegisteredModelResults = 100;
inline constexpr int64_t kMaxModelVersionResults = 200000;
inline constexpr int64_t kDefaultModelVersionResults = 10000;
// At most this many files are copied into one version.
inline constexpr int64_t kMaxVersionFiles = 100000;

struct RegistryOptions {
  // URI schemes (e.g. "s3") a version's source may use without its files being copied here.
  std::vector<std::string> allowed_source_schemes;
};

struct RegistrySearchRequest {
  std::string filter;
  std::optional<int64_t> max_results;
  std::vector<std::string> order_by;
  std::string page_token;
  // Only models the caller may read; unset: all.
  std::function<bool(std::string_view model_name)> visible;
};

template <typename T>
struct RegistryPage {
  std::vector<T> items;
  std::string next_page_token;  // empty when there is no next page
};

struct CreateVersionRequest {
  std::string name;
  std::string source;
  std::string run_id;
  std::string run_link;
  std::string description;
  std::vector<core::Tag> tags;
  std::string user_id;
  // Whether the caller may read an experiment's artifacts: a version's files are readable by
  // whoever may read the model, so they may only come from what the creator may read.
  std::function<bool(std::string_view experiment_id)> may_read_experiment;
  // The same for another model's files (a models:/ source).
  std::function<bool(std::string_view model_name)> may_read_model;
};

class RegistryService {
 public:
  // None of the pointers is owned; all must outlive the service. `identity` keeps the models'
  // permissions with them: the creator's MANAGE, and the grants following a rename and going
  // with a delete, each in step with the model under one lock (nullptr: no permissions).
  RegistryService(store::MetadataStore* store, ArtifactService* artifacts,
                  IdentityService* identity, Clock* clock, RegistryOptions options);

  // --- Registered models -------------------------------------------------------------------
  // The creator (its username, "" without authentication) manages the new model.
  Result<core::RegisteredModel> CreateRegisteredModel(const std::string& name,
                                                      const std::vector<core::Tag>& tags,
                                                      const std::string& description,
                                                      const core::Principal& creator);
  // With latest_versions.
  Result<core::RegisteredModel> GetRegisteredModel(const std::string& name);
  Result<core::RegisteredModel> RenameRegisteredModel(const std::string& name,
                                                      const std::string& new_name);
  Result<core::RegisteredModel> UpdateRegisteredModel(const std::string& name,
                                                      const std::string& description);
  // Removes the model, its versions, the permissions on it and its versions' files.
  Status DeleteRegisteredModel(const std::string& name);
  Result<RegistryPage<core::RegisteredModel>> SearchRegisteredModels(
      const RegistrySearchRequest& req);
  // The newest version in each of `stages` (every stage when empty).
  Result<std::vector<core::ModelVersion>> GetLatestVersions(const std::string& name,
                                                            const std::vector<std::string>& stages);
  Status SetRegisteredModelTag(const std::string& name, const core::Tag& tag);
  Status DeleteRegisteredModelTag(const std::string& name, const std::string& key);

  // --- Model versions ----------------------------------------------------------------------
  // Versions are named by their number as the request gives it ("3").
  Result<core::ModelVersion> CreateModelVersion(const CreateVersionRequest& req);
  Result<core::ModelVersion> GetModelVersion(const std::string& name, const std::string& version);
  Result<core::ModelVersion> UpdateModelVersion(const std::string& name, const std::string& version,
                                                const std::optional<std::string>& description);
  Result<core::ModelVersion> TransitionStage(const std::string& name, const std::string& version,
                                             const std::string& stage, bool archive_existing);
  // Removes the version, its aliases (recorded as moves by `actor`) and its files.
  Status DeleteModelVersion(const std::string& name, const std::string& version,
                            const std::string& actor);
  Result<RegistryPage<core::ModelVersion>> SearchModelVersions(const RegistrySearchRequest& req);
  // Where clients download the version's files from.
  Result<std::string> GetDownloadUri(const std::string& name, const std::string& version);
  // The artifact path of a file of the version (`path` checked like any artifact path).
  Result<std::string> VersionFilePath(const std::string& name, const std::string& version,
                                      const std::string& path);
  Status SetModelVersionTag(const std::string& name, const std::string& version,
                            const core::Tag& tag);
  Status DeleteModelVersionTag(const std::string& name, const std::string& version,
                               const std::string& key);

  // --- Aliases -----------------------------------------------------------------------------
  Status SetAlias(const std::string& name, const std::string& alias, const std::string& version,
                  const std::string& actor);
  Status DeleteAlias(const std::string& name, const std::string& alias, const std::string& actor);
  Result<core::ModelVersion> GetModelVersionByAlias(const std::string& name,
                                                    const std::string& alias);
  Result<std::vector<core::AliasMove>> AliasHistory(const std::string& name,
                                                    const std::string& alias);
  // Moves the alias back to what it named before (see core::AliasRollbackTarget); returns the
  // version it names now (nullopt: none).
  Result<std::optional<int64_t>> RollbackAlias(const std::string& name, const std::string& alias,
                                               const std::string& actor);

  // The version a models:/ URI names: models:/NAME/VERSION, models:/NAME/STAGE (the newest
  // version in it), models:/NAME/latest, models:/NAME@ALIAS.
  Result<core::ModelVersion> Resolve(std::string_view uri);

 private:
  // The artifact path (a file or a directory) a source names, once the caller may read it
  // and something lies there.
  Result<std::string> SourcePath(const CreateVersionRequest& req);
  Status RemoveFiles(const std::string& storage);
  Result<core::RegisteredModel> WithLatestVersions(core::RegisteredModel model);

  store::MetadataStore* store_;
  store::RegistryStore* registry_;
  ArtifactService* artifacts_;
  IdentityService* identity_;
  Clock* clock_;
  RegistryOptions options_;
  // Held while a model is created, renamed or deleted together with its permissions, so that
  // a model made under a name in between never takes or loses another's grants.
  std::mutex names_mu_;
};

}  // namespace cairn::service
