#include "service/registry_service.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "core/search.h"
#include "service/tracking_service.h"
#include "service/validation.h"
#include "store/store_util.h"
#include "util/hash.h"
#include "util/strings.h"

namespace cairn::service {
namespace {

using core::ModelVersion;
using core::RegisteredModel;

constexpr size_t kMaxRegistryTagValueLength = 5000;

Status ValidateModelName(const std::string& name) {
  if (name.empty()) return InvalidArgument("Registered model name cannot be empty.");
  return Status::Ok();
}

Result<int64_t> ParseVersion(const std::string& text) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || p != end) {
    return InvalidArgument("Model version must be an integer, got '" + text + "'");
  }
  return v;
}

Result<core::ModelStage> ParseStage(const std::string& text) {
  core::ModelStage stage = core::ModelStage::kNone;
  if (!core::ParseModelStage(text, &stage)) {
    return InvalidArgument("Invalid Model Version stage: " + text +
                           ". Value must be one of None, Staging, Production, Archived.");
  }
  return stage;
}

Status ValidateRegistryTag(std::string_view entity, const core::Tag& tag) {
  CAIRN_RETURN_IF_ERROR(ValidateKey("tag", tag.key));
  if (tag.value.size() > kMaxRegistryTagValueLength) {
    return InvalidArgument(std::string(entity) + " value '" + tag.value.substr(0, 250) +
                           "' had length " + std::to_string(tag.value.size()) +
                           ", which exceeded length limit of " +
                           std::to_string(kMaxRegistryTagValueLength));
  }
  return Status::Ok();
}

Result<int64_t> ResolveMaxResults(std::optional<int64_t> requested, int64_t fallback,
                                  int64_t limit) {
  const int64_t n = requested.value_or(fallback);
  if (n <= 0) {
    return InvalidArgument(
        "Invalid value for max_results. It must be a positive integer, but got " +
        std::to_string(n));
  }
  if (n > limit) {
    return InvalidArgument("Invalid value for request parameter max_results. It must be at most " +
                           std::to_string(limit) + ", but got value " + std::to_string(n));
  }
  return n;
}

Status InvalidSource(const std::string& source, std::string_view why) {
  return InvalidArgument("Invalid model version source: '" + source + "'. " + std::string(why));
}

// The run a source names, for lineage when the request names none: runs:/RUN/... or
// mlflow-artifacts:/EXPERIMENT/RUN/artifacts/...
std::string RunOfSource(std::string_view source) {
  std::string_view rest;
  if (source.starts_with("runs:/")) {
    rest = source.substr(6);
  } else if (source.starts_with("mlflow-artifacts:/")) {
    rest = source.substr(18);
    const size_t slash = rest.find('/');
    if (slash == std::string_view::npos) return "";
    rest = rest.substr(slash + 1);
    if (rest.find("/artifacts") != rest.find('/')) return "";
  } else {
    return "";
  }
  return std::string(rest.substr(0, rest.find('/')));
}

// Where a new version's files go: the creation time first (12 hex digits of milliseconds), so
// that the artifact index and the storage index grow at their ends instead of taking every
// insert at a random place, then 64 random bits, so that ids cannot be guessed.
std::string NewStorageId(int64_t now_millis) {
  char time_part[13];
  std::snprintf(time_part, sizeof(time_part), "%012llx",
                static_cast<unsigned long long>(now_millis) & 0xffffffffffffULL);
  return std::string(time_part) + RandomHex(8);
}

// The first segment of an artifact path: the experiment of a run's artifacts.
std::string_view FirstSegment(std::string_view path) { return path.substr(0, path.find('/')); }

}  // namespace

RegistryService::RegistryService(store::MetadataStore* store, ArtifactService* artifacts,
                                 IdentityService* identity, Clock* clock, RegistryOptions options)
    : store_(store),
      registry_(&store->registry()),
      artifacts_(artifacts),
      identity_(identity),
      clock_(clock),
      options_(std::move(options)) {}

// --- Registered models -----------------------------------------------------------------------

Result<RegisteredModel> RegistryService::CreateRegisteredModel(const std::string& name,
                                                               const std::vector<core::Tag>& tags,
                                                               const std::string& description,
                                                               const core::Principal& creator) {
  CAIRN_RETURN_IF_ERROR(ValidateModelName(name));
  for (const core::Tag& t : tags) {
    CAIRN_RETURN_IF_ERROR(ValidateRegistryTag("Registered model", t));
  }
  RegisteredModel m;
  m.name = name;
  m.creation_timestamp = m.last_updated_timestamp = clock_->NowMillis();
  m.description = description;
  m.user_id = creator.username;
  // The last value of a repeated key wins.
  for (const core::Tag& t : tags) store::UpsertTag(&m.tags, t);
  {
    std::lock_guard lock(names_mu_);
    CAIRN_RETURN_IF_ERROR(registry_->CreateRegisteredModel(m));
    if (identity_ != nullptr) {
      CAIRN_RETURN_IF_ERROR(
          identity_->GrantCreator(creator, core::ResourceKind::kRegisteredModel, name));
    }
  }
  return registry_->GetRegisteredModel(name);
}

Result<RegisteredModel> RegistryService::WithLatestVersions(RegisteredModel model) {
  CAIRN_ASSIGN_OR_RETURN(model.latest_versions, registry_->LatestVersions(model.name));
  for (ModelVersion& v : model.latest_versions) v.aliases.clear();
  return model;
}

Result<RegisteredModel> RegistryService::GetRegisteredModel(const std::string& name) {
  CAIRN_RETURN_IF_ERROR(ValidateModelName(name));
  CAIRN_ASSIGN_OR_RETURN(RegisteredModel m, registry_->GetRegisteredModel(name));
  return WithLatestVersions(std::move(m));
}

Result<RegisteredModel> RegistryService::RenameRegisteredModel(const std::string& name,
                                                               const std::string& new_name) {
  CAIRN_RETURN_IF_ERROR(ValidateModelName(name));
  CAIRN_RETURN_IF_ERROR(ValidateModelName(new_name));
  {
    std::lock_guard lock(names_mu_);
    CAIRN_RETURN_IF_ERROR(registry_->RenameRegisteredModel(name, new_name, clock_->NowMillis()));
    // The permissions follow the model to its new name.
    if (identity_ != nullptr && name != new_name) {
      CAIRN_RETURN_IF_ERROR(
          identity_->DeletePermissionsOn(core::ResourceKind::kRegisteredModel, new_name));
      CAIRN_RETURN_IF_ERROR(
          identity_->MovePermissions(core::ResourceKind::kRegisteredModel, name, new_name));
    }
  }
  return GetRegisteredModel(new_name);
}

Result<RegisteredModel> RegistryService::UpdateRegisteredModel(const std::string& name,
                                                               const std::string& description) {
  CAIRN_RETURN_IF_ERROR(ValidateModelName(name));
  CAIRN_RETURN_IF_ERROR(registry_->UpdateRegisteredModel(name, description, clock_->NowMillis()));
  return GetRegisteredModel(name);
}

Status RegistryService::DeleteRegisteredModel(const std::string& name) {
  CAIRN_RETURN_IF_ERROR(ValidateModelName(name));
  std::vector<ModelVersion> removed;
  {
    std::lock_guard lock(names_mu_);
    CAIRN_ASSIGN_OR_RETURN(removed, registry_->DeleteRegisteredModel(name));
    // Nobody keeps a permission on what is gone: a new model of this name starts with none.
    if (identity_ != nullptr) {
      CAIRN_RETURN_IF_ERROR(
          identity_->DeletePermissionsOn(core::ResourceKind::kRegisteredModel, name));
    }
  }
  // The model is gone; its files go too, as many as can be removed.
  Status first_failure;
  for (const ModelVersion& v : removed) {
    Status s = RemoveFiles(v.storage_location);
    if (!s.ok() && first_failure.ok()) first_failure = s;
  }
  return first_failure;
}

Result<RegistryPage<RegisteredModel>> RegistryService::SearchRegisteredModels(
    const RegistrySearchRequest& req) {
  CAIRN_ASSIGN_OR_RETURN(int64_t max_results,
                         ResolveMaxResults(req.max_results, kDefaultRegisteredModelResults,
                                           kMaxRegisteredModelResults));
  store::RegistrySearchQuery q;
  CAIRN_ASSIGN_OR_RETURN(q.filter, core::ParseRegisteredModelFilter(req.filter));
  CAIRN_ASSIGN_OR_RETURN(q.order, core::ParseRegisteredModelOrderBy(req.order_by));
  if (!req.page_token.empty()) {
    CAIRN_ASSIGN_OR_RETURN(q.offset, DecodePageToken(req.page_token));
  }
  q.max_results = max_results + 1;  // one more tells whether a next page exists
  q.visible = req.visible;
  CAIRN_ASSIGN_OR_RETURN(std::vector<RegisteredModel> found, registry_->SearchRegisteredModels(q));
  RegistryPage<RegisteredModel> page;
  if (static_cast<int64_t>(found.size()) > max_results) {
    found.pop_back();
    page.next_page_token = EncodePageToken(q.offset + max_results);
  }
  for (RegisteredModel& m : found) {
    CAIRN_ASSIGN_OR_RETURN(RegisteredModel full, WithLatestVersions(std::move(m)));
    page.items.push_back(std::move(full));
  }
  return page;
}

Result<std::vector<ModelVersion>> RegistryService::GetLatestVersions(
    const std::string& name, const std::vector<std::string>& stages) {
  CAIRN_RETURN_IF_ERROR(ValidateModelName(name));
  std::vector<core::ModelStage> wanted;
  for (const std::string& s : stages) {
    CAIRN_ASSIGN_OR_RETURN(core::ModelStage stage, ParseStage(s));
    wanted.push_back(stage);
  }
  CAIRN_ASSIGN_OR_RETURN(std::vector<ModelVersion> latest, registry_->LatestVersions(name));
  std::vector<ModelVersion> out;
  for (ModelVersion& v : latest) {
    if (wanted.empty() ||
        std::find(wanted.begin(), wanted.end(), v.current_stage) != wanted.end()) {
      out.push_back(std::move(v));
    }
  }
  return out;
}

Status RegistryService::SetRegisteredModelTag(const std::string& name, const core::Tag& tag) {
  CAIRN_RETURN_IF_ERROR(ValidateModelName(name));
  CAIRN_RETURN_IF_ERROR(ValidateRegistryTag("Registered model", tag));
  return registry_->SetRegisteredModelTag(name, tag);
}

Status RegistryService::DeleteRegisteredModelTag(const std::string& name, const std::string& key) {
  CAIRN_RETURN_IF_ERROR(ValidateModelName(name));
  CAIRN_RETURN_IF_ERROR(ValidateKey("tag", key));
  return registry_->DeleteRegisteredModelTag(name, key);
}

// --- Model versions ----------------------------------------------------------------------------

Result<std::string> RegistryService::SourcePath(const CreateVersionRequest& req) {
  const std::string& source = req.source;
  if (source.find('\0') != std::string::npos) return InvalidSource(source, "It holds a NUL.");
  std::string path;
  if (source.starts_with("models:/")) {
    // The caller's permission on the other model comes first: what it holds is none of the
    // caller's business otherwise.
    std::string_view rest = std::string_view(source).substr(8);
    while (rest.starts_with('/')) rest.remove_prefix(1);
    const std::string other(rest.substr(0, std::min(rest.find('/'), rest.rfind('@'))));
    if (req.may_read_model && !req.may_read_model(other)) {
      return PermissionDenied("Permission denied: reading registered model '" + other + "'");
    }
    CAIRN_ASSIGN_OR_RETURN(ModelVersion from, Resolve(source));
    if (from.status != core::ModelVersionStatus::kReady) {
      return InvalidSource(source, "That version is not READY.");
    }
    if (from.storage_location.empty()) {
      return InvalidSource(source, "Its files are not on this server.");
    }
    path = from.storage_location;
  } else {
    if (source.starts_with("runs:/")) {
      std::string_view rest = std::string_view(source).substr(6);
      const size_t slash = rest.find('/');
      const std::string run_id(rest.substr(0, slash));
      const std::string rel =
          slash == std::string_view::npos ? "" : std::string(rest.substr(slash + 1));
      if (run_id.empty()) return InvalidSource(source, "It names no run: use runs:/RUN_ID/PATH.");
      CAIRN_ASSIGN_OR_RETURN(core::RunInfo info, store_->GetRunInfo(run_id));
      Result<std::string> root = ProxyPathOfUri(info.artifact_uri);
      if (!root.ok()) return InvalidSource(source, "The run's artifacts are not on this server.");
      path = *root + (rel.empty() ? "" : "/" + rel);
    } else if (source.starts_with("mlflow-artifacts:")) {
      Result<std::string> proxied = ProxyPathOfUri(source);
      if (!proxied.ok()) return InvalidSource(source, "It is not a path on this server.");
      path = *proxied;
    } else {
      return InvalidSource(source,
                           "A version's files are copied from the server's own artifacts: use "
                           "runs:/RUN_ID/PATH, the run's mlflow-artifacts: URI, or models:/NAME/"
                           "VERSION.");
    }
    Result<std::string> normal = NormalizeArtifactPath(path, /*allow_root=*/false);
    if (!normal.ok()) {
      return InvalidSource(source,
                           "An absolute path without relative path references must be given.");
    }
    path = *normal;
    // A run's artifacts, EXPERIMENT/RUN/artifacts[/...], and nothing wider.
    const size_t first = path.find('/');
    const size_t second = first == std::string::npos ? first : path.find('/', first + 1);
    const std::string_view third = second == std::string::npos
                                       ? std::string_view()
                                       : std::string_view(path).substr(second + 1);
    if (!(third == "artifacts" || third.starts_with("artifacts/"))) {
      return InvalidSource(source, "Name a run's artifacts: runs:/RUN_ID/PATH.");
    }
    const std::string experiment(FirstSegment(path));
    if (req.may_read_experiment && !req.may_read_experiment(experiment)) {
      return PermissionDenied("Permission denied: reading the artifacts of experiment " +
                              experiment);
    }
  }
  bool any = store_->GetArtifact(path).ok();
  if (!any) {
    Result<std::vector<store::ArtifactEntry>> entries = store_->ListArtifacts(path);
    any = entries.ok() && !entries->empty();
  }
  if (!any) return InvalidSource(source, "No files lie there on this server.");
  return path;
}

Status RegistryService::RemoveFiles(const std::string& storage) {
  if (storage.empty()) return Status::Ok();
  return artifacts_->DeleteRegistryFiles(storage);
}

Result<ModelVersion> RegistryService::CreateModelVersion(const CreateVersionRequest& req) {
  CAIRN_RETURN_IF_ERROR(ValidateModelName(req.name));
  for (const core::Tag& t : req.tags)
    CAIRN_RETURN_IF_ERROR(ValidateRegistryTag("Model version", t));
  CAIRN_RETURN_IF_ERROR(registry_->GetRegisteredModel(req.name).status());
  ModelVersion v;
  v.name = req.name;
  v.source = req.source;
  v.run_id = req.run_id.empty() ? RunOfSource(req.source) : req.run_id;
  v.run_link = req.run_link;
  v.description = req.description;
  v.user_id = req.user_id;
  for (const core::Tag& t : req.tags) store::UpsertTag(&v.tags, t);
  v.creation_timestamp = v.last_updated_timestamp = clock_->NowMillis();

  const size_t colon = req.source.find(':');
  const std::string scheme =
      colon == std::string::npos ? "" : AsciiLower(req.source.substr(0, colon));
  const bool external =
      scheme != "runs" && scheme != "models" && scheme != "mlflow-artifacts" &&
      std::find(options_.allowed_source_schemes.begin(), options_.allowed_source_schemes.end(),
                scheme) != options_.allowed_source_schemes.end();
  if (!external) {
    CAIRN_ASSIGN_OR_RETURN(std::string source_path, SourcePath(req));
    v.storage_location =
        std::string(kRegistryArtifactRoot) + "/" + NewStorageId(v.creation_timestamp);
    // Pending until its files are in; a crash between leaves it visibly pending.
    v.status = core::ModelVersionStatus::kPendingRegistration;
    CAIRN_ASSIGN_OR_RETURN(ModelVersion stored, registry_->CreateModelVersion(v));
    Result<int64_t> copied =
        artifacts_->CopyTree(source_path, v.storage_location, kMaxVersionFiles);
    Status done = copied.status();
    if (done.ok() && *copied == 0) done = InvalidSource(req.source, "No files lie there now.");
    if (done.ok()) {
      done = registry_->UpdateModelVersion(v.name, stored.version, std::nullopt,
                                           core::ModelVersionStatus::kReady, std::nullopt,
                                           stored.last_updated_timestamp);
    }
    if (!done.ok()) {
      // Nothing half-made stays behind: the files go, and the version says why it failed.
      (void)RemoveFiles(v.storage_location);
      (void)registry_->UpdateModelVersion(v.name, stored.version, std::nullopt,
                                          core::ModelVersionStatus::kFailedRegistration,
                                          done.message(), clock_->NowMillis());
      return done;
    }
    return registry_->GetModelVersion(v.name, stored.version);
  }
  CAIRN_ASSIGN_OR_RETURN(ModelVersion stored, registry_->CreateModelVersion(v));
  return registry_->GetModelVersion(v.name, stored.version);
}

Result<ModelVersion> RegistryService::GetModelVersion(const std::string& name,
                                                      const std::string& version) {
  CAIRN_RETURN_IF_ERROR(ValidateModelName(name));
  CAIRN_ASSIGN_OR_RETURN(int64_t number, ParseVersion(version));
  return registry_->GetModelVersion(name, number);
}

Result<ModelVersion> RegistryService::UpdateModelVersion(
    const std::string& name, const std::string& version,
    const std::optional<std::string>& description) {
  CAIRN_RETURN_IF_ERROR(ValidateModelName(name));
  CAIRN_ASSIGN_OR_RETURN(int64_t number, ParseVersion(version));
  // MLflow clears the description when the request has none.
  CAIRN_RETURN_IF_ERROR(registry_->UpdateModelVersion(
      name, number, description.value_or(""), std::nullopt, std::nullopt, clock_->NowMillis()));
  return registry_->GetModelVersion(name, number);
}

Result<ModelVersion> RegistryService::TransitionStage(const std::string& name,
                                                      const std::string& version,
                                                      const std::string& stage_text,
                                                      bool archive_existing) {
  CAIRN_RETURN_IF_ERROR(ValidateModelName(name));
  CAIRN_ASSIGN_OR_RETURN(int64_t number, ParseVersion(version));
  CAIRN_ASSIGN_OR_RETURN(core::ModelStage stage, ParseStage(stage_text));
  if (archive_existing && stage != core::ModelStage::kStaging &&
      stage != core::ModelStage::kProduction) {
    return InvalidArgument(
        "Model version transition cannot archive existing model versions because '" + stage_text +
        "' is not an Active stage. Valid stages are ['Staging', 'Production']");
  }
  CAIRN_RETURN_IF_ERROR(registry_->TransitionModelVersionStage(
      name, number, stage, archive_existing, clock_->NowMillis()));
  return registry_->GetModelVersion(name, number);
}

Status RegistryService::DeleteModelVersion(const std::string& name, const std::string& version,
                                           const std::string& actor) {
  CAIRN_RETURN_IF_ERROR(ValidateModelName(name));
  CAIRN_ASSIGN_OR_RETURN(int64_t number, ParseVersion(version));
  CAIRN_ASSIGN_OR_RETURN(ModelVersion removed,
                         registry_->DeleteModelVersion(name, number, actor, clock_->NowMillis()));
  return RemoveFiles(removed.storage_location);
}

Result<RegistryPage<ModelVersion>> RegistryService::SearchModelVersions(
    const RegistrySearchRequest& req) {
  CAIRN_ASSIGN_OR_RETURN(
      int64_t max_results,
      ResolveMaxResults(req.max_results, kDefaultModelVersionResults, kMaxModelVersionResults));
  store::RegistrySearchQuery q;
  CAIRN_ASSIGN_OR_RETURN(q.filter, core::ParseModelVersionFilter(req.filter));
  CAIRN_ASSIGN_OR_RETURN(q.order, core::ParseModelVersionOrderBy(req.order_by));
  if (!req.page_token.empty()) {
    CAIRN_ASSIGN_OR_RETURN(q.offset, DecodePageToken(req.page_token));
  }
  q.max_results = max_results + 1;
  q.visible = req.visible;
  CAIRN_ASSIGN_OR_RETURN(std::vector<ModelVersion> found, registry_->SearchModelVersions(q));
  RegistryPage<ModelVersion> page;
  if (static_cast<int64_t>(found.size()) > max_results) {
    found.pop_back();
    page.next_page_token = EncodePageToken(q.offset + max_results);
  }
  page.items = std::move(found);
  return page;
}

Result<std::string> RegistryService::GetDownloadUri(const std::string& name,
                                                    const std::string& version) {
  CAIRN_ASSIGN_OR_RETURN(ModelVersion v, GetModelVersion(name, version));
  if (v.storage_location.empty()) return v.source;
  return "mlflow-artifacts:/" + v.storage_location;
}

Result<std::string> RegistryService::VersionFilePath(const std::string& name,
                                                     const std::string& version,
                                                     const std::string& path) {
  CAIRN_ASSIGN_OR_RETURN(ModelVersion v, GetModelVersion(name, version));
  if (v.storage_location.empty()) {
    return NotFound("The files of model version (name=" + name + ", version=" + version +
                    ") are not on this server: " + v.source);
  }
  CAIRN_ASSIGN_OR_RETURN(std::string rel, NormalizeArtifactPath(path, /*allow_root=*/false));
  return v.storage_location + "/" + rel;
}

Status RegistryService::SetModelVersionTag(const std::string& name, const std::string& version,
                                           const core::Tag& tag) {
  CAIRN_RETURN_IF_ERROR(ValidateModelName(name));
  CAIRN_ASSIGN_OR_RETURN(int64_t number, ParseVersion(version));
  CAIRN_RETURN_IF_ERROR(ValidateRegistryTag("Model version", tag));
  return registry_->SetModelVersionTag(name, number, tag);
}

Status RegistryService::DeleteModelVersionTag(const std::string& name, const std::string& version,
                                              const std::string& key) {
  CAIRN_RETURN_IF_ERROR(ValidateModelName(name));
  CAIRN_ASSIGN_OR_RETURN(int64_t number, ParseVersion(version));
  CAIRN_RETURN_IF_ERROR(ValidateKey("tag", key));
  return registry_->DeleteModelVersionTag(name, number, key);
}

// --- Aliases -----------------------------------------------------------------------------------

Status RegistryService::SetAlias(const std::string& name, const std::string& alias,
                                 const std::string& version, const std::string& actor) {
  CAIRN_RETURN_IF_ERROR(ValidateModelName(name));
  CAIRN_RETURN_IF_ERROR(core::ValidateModelAlias(alias));
  CAIRN_ASSIGN_OR_RETURN(int64_t number, ParseVersion(version));
  return registry_->SetAlias(name, alias, number, actor, clock_->NowMillis());
}

Status RegistryService::DeleteAlias(const std::string& name, const std::string& alias,
                                    const std::string& actor) {
  CAIRN_RETURN_IF_ERROR(ValidateModelName(name));
  CAIRN_RETURN_IF_ERROR(core::ValidateModelAlias(alias));
  return registry_->DeleteAlias(name, alias, actor, clock_->NowMillis());
}

Result<ModelVersion> RegistryService::GetModelVersionByAlias(const std::string& name,
                                                             const std::string& alias) {
  CAIRN_RETURN_IF_ERROR(ValidateModelName(name));
  CAIRN_RETURN_IF_ERROR(core::ValidateModelAlias(alias));
  return registry_->GetModelVersionByAlias(name, alias);
}

Result<std::vector<core::AliasMove>> RegistryService::AliasHistory(const std::string& name,
                                                                   const std::string& alias) {
  CAIRN_RETURN_IF_ERROR(ValidateModelName(name));
  return registry_->AliasHistory(name, alias);
}

Result<std::optional<int64_t>> RegistryService::RollbackAlias(const std::string& name,
                                                              const std::string& alias,
                                                              const std::string& actor) {
  CAIRN_RETURN_IF_ERROR(ValidateModelName(name));
  CAIRN_RETURN_IF_ERROR(core::ValidateModelAlias(alias));
  return registry_->RollbackAlias(name, alias, actor, clock_->NowMillis());
}

Result<ModelVersion> RegistryService::Resolve(std::string_view uri) {
  const auto malformed = [&]() {
    return InvalidArgument("Not a proper models:/ URI: " + std::string(uri) +
                           ". Models URIs must be of the form 'models:/model_name/suffix' or "
                           "'models:/model_name@alias' where suffix is a model version, stage, "
                           "or the string 'latest' and where alias is a registered model alias. "
                           "Only one of suffix or alias can be defined at a time.");
  };
  if (!uri.starts_with("models:/")) return malformed();
  std::string_view rest = uri.substr(8);
  while (rest.starts_with('/')) rest.remove_prefix(1);
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos) {
    const size_t at = rest.rfind('@');
    if (at == std::string_view::npos || at == 0 || at + 1 == rest.size()) return malformed();
    return GetModelVersionByAlias(std::string(rest.substr(0, at)),
                                  std::string(rest.substr(at + 1)));
  }
  const std::string name(rest.substr(0, slash));
  const std::string suffix(rest.substr(slash + 1));
  if (name.empty() || suffix.empty() || suffix.find('/') != std::string::npos) return malformed();
  if (std::all_of(suffix.begin(), suffix.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return GetModelVersion(name, suffix);
  }
  std::vector<std::string> stages;
  if (AsciiLower(suffix) != "latest") stages.push_back(suffix);
  CAIRN_ASSIGN_OR_RETURN(std::vector<ModelVersion> latest, GetLatestVersions(name, stages));
  if (latest.empty()) {
    return NotFound(stages.empty() ? "No versions of model with name '" + name + "' found"
                                   : "No versions of model with name '" + name + "' and stage '" +
                                         suffix + "' found");
  }
  const ModelVersion& newest = *std::max_element(
      latest.begin(), latest.end(),
      [](const ModelVersion& a, const ModelVersion& b) { return a.version < b.version; });
  return registry_->GetModelVersion(name, newest.version);
}

}  // namespace cairn::service
