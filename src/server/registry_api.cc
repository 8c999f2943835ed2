// Handlers of MLflow's model registry API (model_registry.proto's ModelRegistryService). Each
// decodes, calls one RegistryService method and encodes.
#include <optional>

#include "core/mlflow_json.h"
#include "server/cairn_api.h"
#include "server/routes.h"

namespace cairn::server {
namespace {

using core::ModelVersion;
using core::RegisteredModel;
using core::WriteModelVersion;
using core::WriteRegisteredModel;

constexpr std::string_view kEmptyObject = "{}";

std::string ModelResponse(const RegisteredModel& m) {
  JsonWriter w;
  w.BeginObject().Key("registered_model");
  WriteRegisteredModel(w, m);
  w.EndObject();
  return w.Take();
}

std::string VersionResponse(const ModelVersion& v) {
  JsonWriter w;
  w.BeginObject().Key("model_version");
  WriteModelVersion(w, v);
  w.EndObject();
  return w.Take();
}

std::string VersionsResponse(const std::vector<ModelVersion>& versions,
                             const std::string& next_page_token = {}) {
  JsonWriter w;
  w.BeginObject();
  if (!versions.empty()) {
    w.Key("model_versions").BeginArray();
    for (const ModelVersion& v : versions) WriteModelVersion(w, v);
    w.EndArray();
  }
  if (!next_page_token.empty()) w.Key("next_page_token").String(next_page_token);
  w.EndObject();
  return w.Take();
}

// Who the registry records as doing something: the account, or "" without authentication.
std::string Actor(const ApiContext& ctx) { return ctx.caller ? ctx.caller->username : ""; }

Result<service::RegistrySearchRequest> DecodeSearch(ApiContext& ctx, const Fields& f) {
  service::RegistrySearchRequest req;
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> filter, f.Str("filter"));
  req.filter = filter.value_or("");
  CAIRN_ASSIGN_OR_RETURN(req.max_results, f.Int("max_results"));
  CAIRN_ASSIGN_OR_RETURN(req.order_by, f.StrList("order_by"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> token, f.Str("page_token"));
  req.page_token = token.value_or("");
  req.visible = ctx.may_read_model;
  return req;
}

// --- Registered models -----------------------------------------------------------------------

Result<std::string> CreateRegisteredModel(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.RequiredStr("name"));
  CAIRN_ASSIGN_OR_RETURN(std::vector<core::Tag> tags, DecodeTags(f, "tags"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> description, f.Str("description"));
  // The creator manages what it made.
  CAIRN_ASSIGN_OR_RETURN(RegisteredModel m, ctx.registry->CreateRegisteredModel(
                                                name, tags, description.value_or(""), *ctx.caller));
  return ModelResponse(m);
}

Result<std::string> GetRegisteredModel(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.RequiredStr("name"));
  CAIRN_ASSIGN_OR_RETURN(RegisteredModel m, ctx.registry->GetRegisteredModel(name));
  return ModelResponse(m);
}

Result<std::string> RenameRegisteredModel(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.RequiredStr("name"));
  CAIRN_ASSIGN_OR_RETURN(std::string new_name, f.RequiredStr("new_name"));
  // Permissions follow the model to its new name.
  CAIRN_ASSIGN_OR_RETURN(RegisteredModel m, ctx.registry->RenameRegisteredModel(name, new_name));
  return ModelResponse(m);
}

Result<std::string> UpdateRegisteredModel(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.RequiredStr("name"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> description, f.Str("description"));
  CAIRN_ASSIGN_OR_RETURN(RegisteredModel m,
                         ctx.registry->UpdateRegisteredModel(name, description.value_or("")));
  return ModelResponse(m);
}

Result<std::string> DeleteRegisteredModel(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.RequiredStr("name"));
  // Nobody keeps a permission on what is gone.
  CAIRN_RETURN_IF_ERROR(ctx.registry->DeleteRegisteredModel(name));
  return std::string(kEmptyObject);
}

Result<std::string> SearchRegisteredModels(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(service::RegistrySearchRequest req, DecodeSearch(ctx, f));
  CAIRN_ASSIGN_OR_RETURN(service::RegistryPage<RegisteredModel> page,
                         ctx.registry->SearchRegisteredModels(req));
  JsonWriter w;
  w.BeginObject();
  if (!page.items.empty()) {
    w.Key("registered_models").BeginArray();
    for (const RegisteredModel& m : page.items) WriteRegisteredModel(w, m);
    w.EndArray();
  }
  if (!page.next_page_token.empty()) w.Key("next_page_token").String(page.next_page_token);
  w.EndObject();
  return w.Take();
}

Result<std::string> GetLatestVersions(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.RequiredStr("name"));
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> stages, f.StrList("stages"));
  CAIRN_ASSIGN_OR_RETURN(std::vector<ModelVersion> versions,
                         ctx.registry->GetLatestVersions(name, stages));
  return VersionsResponse(versions);
}

Result<std::string> SetRegisteredModelTag(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.RequiredStr("name"));
  CAIRN_ASSIGN_OR_RETURN(std::string key, f.RequiredStr("key"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> value, f.Str("value"));
  CAIRN_RETURN_IF_ERROR(ctx.registry->SetRegisteredModelTag(name, {key, value.value_or("")}));
  return std::string(kEmptyObject);
}

Result<std::string> DeleteRegisteredModelTag(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.RequiredStr("name"));
  CAIRN_ASSIGN_OR_RETURN(std::string key, f.RequiredStr("key"));
  CAIRN_RETURN_IF_ERROR(ctx.registry->DeleteRegisteredModelTag(name, key));
  return std::string(kEmptyObject);
}

// --- Aliases ---------------------------------------------------------------------------------

Result<std::string> SetAlias(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.RequiredStr("name"));
  CAIRN_ASSIGN_OR_RETURN(std::string alias, f.RequiredStr("alias"));
  CAIRN_ASSIGN_OR_RETURN(std::string version, f.RequiredStr("version"));
  CAIRN_RETURN_IF_ERROR(ctx.registry->SetAlias(name, alias, version, Actor(ctx)));
  return std::string(kEmptyObject);
}

Result<std::string> DeleteAlias(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.RequiredStr("name"));
  CAIRN_ASSIGN_OR_RETURN(std::string alias, f.RequiredStr("alias"));
  CAIRN_RETURN_IF_ERROR(ctx.registry->DeleteAlias(name, alias, Actor(ctx)));
  return std::string(kEmptyObject);
}

Result<std::string> GetModelVersionByAlias(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.RequiredStr("name"));
  CAIRN_ASSIGN_OR_RETURN(std::string alias, f.RequiredStr("alias"));
  CAIRN_ASSIGN_OR_RETURN(ModelVersion v, ctx.registry->GetModelVersionByAlias(name, alias));
  return VersionResponse(v);
}

// --- Model versions --------------------------------------------------------------------------

Result<std::string> CreateModelVersion(ApiContext& ctx, const Fields& f) {
  service::CreateVersionRequest req;
  CAIRN_ASSIGN_OR_RETURN(req.name, f.RequiredStr("name"));
  CAIRN_ASSIGN_OR_RETURN(req.source, f.RequiredStr("source"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> run_id, f.Str("run_id"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> run_link, f.Str("run_link"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> description, f.Str("description"));
  CAIRN_ASSIGN_OR_RETURN(req.tags, DecodeTags(f, "tags"));
  req.run_id = run_id.value_or("");
  req.run_link = run_link.value_or("");
  req.description = description.value_or("");
  req.user_id = Actor(ctx);
  // The version's readers see its files: they may come only from what the creator may read.
  if (ctx.access->enabled() && !ctx.caller->ActsAsAdmin()) {
    service::AccessService* access = ctx.access;
    const core::Principal* who = ctx.caller;
    auto may_read = [access, who](core::ResourceKind kind, std::string_view id) {
      Result<core::Permission> p = access->PermissionOn(*who, kind, id);
      return p.ok() && core::Allows(*p, core::Access::kRead);
    };
    req.may_read_experiment = [may_read](std::string_view id) {
      return may_read(core::ResourceKind::kExperiment, id);
    };
    req.may_read_model = [may_read](std::string_view name) {
      return may_read(core::ResourceKind::kRegisteredModel, name);
    };
  }
  CAIRN_ASSIGN_OR_RETURN(ModelVersion v, ctx.registry->CreateModelVersion(req));
  return VersionResponse(v);
}

Result<std::string> GetModelVersion(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.RequiredStr("name"));
  CAIRN_ASSIGN_OR_RETURN(std::string version, f.RequiredStr("version"));
  CAIRN_ASSIGN_OR_RETURN(ModelVersion v, ctx.registry->GetModelVersion(name, version));
  return VersionResponse(v);
}

Result<std::string> UpdateModelVersion(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.RequiredStr("name"));
  CAIRN_ASSIGN_OR_RETURN(std::string version, f.RequiredStr("version"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> description, f.Str("description"));
  CAIRN_ASSIGN_OR_RETURN(ModelVersion v,
                         ctx.registry->UpdateModelVersion(name, version, description));
  return VersionResponse(v);
}

Result<std::string> TransitionStage(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.RequiredStr("name"));
  CAIRN_ASSIGN_OR_RETURN(std::string version, f.RequiredStr("version"));
  CAIRN_ASSIGN_OR_RETURN(std::string stage, f.RequiredStr("stage"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<bool> archive, f.Bool("archive_existing_versions"));
  CAIRN_ASSIGN_OR_RETURN(
      ModelVersion v, ctx.registry->TransitionStage(name, version, stage, archive.value_or(false)));
  return VersionResponse(v);
}

Result<std::string> DeleteModelVersion(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.RequiredStr("name"));
  CAIRN_ASSIGN_OR_RETURN(std::string version, f.RequiredStr("version"));
  CAIRN_RETURN_IF_ERROR(ctx.registry->DeleteModelVersion(name, version, Actor(ctx)));
  return std::string(kEmptyObject);
}

Result<std::string> SearchModelVersions(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(service::RegistrySearchRequest req, DecodeSearch(ctx, f));
  CAIRN_ASSIGN_OR_RETURN(service::RegistryPage<ModelVersion> page,
                         ctx.registry->SearchModelVersions(req));
  return VersionsResponse(page.items, page.next_page_token);
}

Result<std::string> GetDownloadUri(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.RequiredStr("name"));
  CAIRN_ASSIGN_OR_RETURN(std::string version, f.RequiredStr("version"));
  CAIRN_ASSIGN_OR_RETURN(std::string uri, ctx.registry->GetDownloadUri(name, version));
  JsonWriter w;
  w.BeginObject().Key("artifact_uri").String(uri).EndObject();
  return w.Take();
}

Result<std::string> SetModelVersionTag(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.RequiredStr("name"));
  CAIRN_ASSIGN_OR_RETURN(std::string version, f.RequiredStr("version"));
  CAIRN_ASSIGN_OR_RETURN(std::string key, f.RequiredStr("key"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> value, f.Str("value"));
  CAIRN_RETURN_IF_ERROR(ctx.registry->SetModelVersionTag(name, version, {key, value.value_or("")}));
  return std::string(kEmptyObject);
}

Result<std::string> DeleteModelVersionTag(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.RequiredStr("name"));
  CAIRN_ASSIGN_OR_RETURN(std::string version, f.RequiredStr("version"));
  CAIRN_ASSIGN_OR_RETURN(std::string key, f.RequiredStr("key"));
  CAIRN_RETURN_IF_ERROR(ctx.registry->DeleteModelVersionTag(name, version, key));
  return std::string(kEmptyObject);
}

// --- cairn's registry calls: an alias's history and its rollback ------------------------------

void WriteMove(JsonWriter& w, const core::AliasMove& m) {
  w.BeginObject().Key("id").Int(m.id).Key("alias").String(m.alias);
  w.Key("kind").String(core::AliasMoveKindName(m.kind)).Key("version");
  if (m.version) {
    w.String(std::to_string(*m.version));
  } else {
    w.Null();
  }
  w.Key("time").Int(m.time).Key("actor").String(m.actor).EndObject();
}

Result<CairnResponse> AliasHistory(ApiContext& ctx, const CairnCall& call) {
  CAIRN_ASSIGN_OR_RETURN(std::string name, call.fields.RequiredStr("name"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> alias, call.fields.Str("alias"));
  CAIRN_ASSIGN_OR_RETURN(std::vector<core::AliasMove> moves,
                         ctx.registry->AliasHistory(name, alias.value_or("")));
  JsonWriter w;
  w.BeginObject().Key("name").String(name).Key("moves").BeginArray();
  for (const core::AliasMove& m : moves) WriteMove(w, m);
  w.EndArray().EndObject();
  return CairnResponse{w.Take()};
}

Result<CairnResponse> RollbackAlias(ApiContext& ctx, const CairnCall& call) {
  CAIRN_ASSIGN_OR_RETURN(std::string name, call.fields.RequiredStr("name"));
  CAIRN_ASSIGN_OR_RETURN(std::string alias, call.fields.RequiredStr("alias"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> version,
                         ctx.registry->RollbackAlias(name, alias, Actor(ctx)));
  JsonWriter w;
  w.BeginObject().Key("name").String(name).Key("alias").String(alias).Key("version");
  if (version) {
    w.String(std::to_string(*version));
  } else {
    w.Null();
  }
  w.EndObject();
  return CairnResponse{w.Take()};
}

constexpr CairnRoute kCairnRoutes[] = {
    {"GET", "models/alias-history", AliasHistory},
    {"POST", "models/rollback", RollbackAlias},
};

constexpr Route kRegistryRoutes[] = {
    {"POST", "registered-models/create", CreateRegisteredModel},
    {"GET", "registered-models/get", GetRegisteredModel},
    {"POST", "registered-models/rename", RenameRegisteredModel},
    {"PATCH", "registered-models/update", UpdateRegisteredModel},
    {"DELETE", "registered-models/delete", DeleteRegisteredModel},
    {"GET", "registered-models/search", SearchRegisteredModels},
    {"POST", "registered-models/get-latest-versions", GetLatestVersions},
    {"GET", "registered-models/get-latest-versions", GetLatestVersions},
    {"POST", "registered-models/set-tag", SetRegisteredModelTag},
    {"DELETE", "registered-models/delete-tag", DeleteRegisteredModelTag},
    {"POST", "registered-models/alias", SetAlias},
    {"DELETE", "registered-models/alias", DeleteAlias},
    {"GET", "registered-models/alias", GetModelVersionByAlias},
    {"POST", "model-versions/create", CreateModelVersion},
    {"GET", "model-versions/get", GetModelVersion},
    {"PATCH", "model-versions/update", UpdateModelVersion},
    {"POST", "model-versions/transition-stage", TransitionStage},
    {"DELETE", "model-versions/delete", DeleteModelVersion},
    {"GET", "model-versions/search", SearchModelVersions},
    {"GET", "model-versions/get-download-uri", GetDownloadUri},
    {"POST", "model-versions/set-tag", SetModelVersionTag},
    {"DELETE", "model-versions/delete-tag", DeleteModelVersionTag},
};

}  // namespace

std::span<const Route> RegistryRoutes() { return kRegistryRoutes; }

std::span<const CairnRoute> CairnRegistryRoutes() { return kCairnRoutes; }

}  // namespace cairn::server
