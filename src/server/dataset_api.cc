// Handlers of cairn's dataset API (docs/api/cairn.md, "Datasets"). Each decodes, calls the
// DatasetService and encodes. Blobs arrive through PUT datasets/blobs/DIGEST, a streamed
// upload the server routes itself (server.cc).
#include <algorithm>
#include <map>
#include <optional>

#include "core/tree_manifest.h"
#include "server/cairn_api.h"
#include "server/routes.h"
#include "service/access_service.h"
#include "service/dataset_service.h"
#include "service/validation.h"
#include "util/json_writer.h"

namespace cairn::server {
namespace {

using core::DataVersion;

void WriteVersion(JsonWriter& w, const DataVersion& v) {
  w.BeginObject().Key("name").String(v.name).Key("version").Int(v.version);
  w.Key("digest").String(v.digest).Key("parent").Int(v.parent);
  w.Key("message").String(v.message).Key("creator").String(v.creator);
  w.Key("created_time").Int(v.created_time).Key("metadata").Raw(v.metadata);
  w.Key("files").Int(v.files).Key("bytes").Int(v.bytes);
  if (!v.run_id.empty()) w.Key("run_id").String(v.run_id);
  w.EndObject();
}

void WriteRunRef(JsonWriter& w, const core::RunInfo& r) {
  w.BeginObject().Key("run_id").String(r.run_id).Key("run_name").String(r.run_name);
  w.Key("experiment_id").String(r.experiment_id);
  w.Key("status").String(core::RunStatusName(r.status)).Key("start_time").Int(r.start_time);
  w.EndObject();
}

void WriteFile(JsonWriter& w, const core::FileEntry& f) {
  w.BeginObject().Key("path").String(f.path).Key("size").Int(f.size);
  w.Key("executable").Bool(f.mode == core::kModeExecutable).Key("sha256").String(f.sha256);
  w.EndObject();
}

// The caller's permission on a dataset: every permission where there are no accounts.
Result<core::Permission> DatasetPermission(ApiContext& ctx, const std::string& name) {
  if (ctx.access == nullptr || !ctx.access->enabled() || ctx.caller == nullptr ||
      ctx.caller->ActsAsAdmin()) {
    return core::Permission::kManage;
  }
  return ctx.access->PermissionOn(*ctx.caller, core::ResourceKind::kDataset, name);
}

std::string Username(const ApiContext& ctx) { return ctx.caller ? ctx.caller->username : ""; }

// The version a request names: `name` and `version` (absent: the latest).
Result<DataVersion> NamedVersion(ApiContext& ctx, const Fields& f, std::string_view field) {
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.RequiredStr("name"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> version, f.Int(field));
  if (version && *version < 1) {
    return InvalidArgument("Invalid value " + std::to_string(*version) + " for parameter '" +
                           std::string(field) + "': versions count from 1");
  }
  return ctx.datasets->GetVersion(name, version.value_or(0));
}

// GET datasets: every dataset the caller may read, with its latest version.
Result<CairnResponse> ListDatasets(ApiContext& ctx, const CairnCall&) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<core::DatasetEntry> all, ctx.datasets->List());
  JsonWriter w;
  w.BeginObject().Key("datasets").BeginArray();
  for (const core::DatasetEntry& d : all) {
    if (ctx.may_read_dataset && !ctx.may_read_dataset(d.name)) continue;
    w.BeginObject().Key("name").String(d.name).Key("created_time").Int(d.created_time);
    w.Key("versions").Int(d.versions).Key("latest");
    WriteVersion(w, d.latest);
    w.EndObject();
  }
  w.EndArray().EndObject();
  return CairnResponse{w.Take()};
}

// GET datasets/get?name=N[&version=V]: one version, the latest without `version`.
Result<CairnResponse> GetDataVersion(ApiContext& ctx, const CairnCall& call) {
  CAIRN_ASSIGN_OR_RETURN(DataVersion v, NamedVersion(ctx, call.fields, "version"));
  JsonWriter w;
  w.BeginObject().Key("version");
  WriteVersion(w, v);
  w.EndObject();
  return CairnResponse{w.Take()};
}

// GET datasets/versions?name=N: every version, newest first.
Result<CairnResponse> ListDataVersions(ApiContext& ctx, const CairnCall& call) {
  CAIRN_ASSIGN_OR_RETURN(std::string name, call.fields.RequiredStr("name"));
  CAIRN_ASSIGN_OR_RETURN(std::vector<DataVersion> versions, ctx.datasets->Versions(name));
  JsonWriter w;
  w.BeginObject().Key("versions").BeginArray();
  for (const DataVersion& v : versions) WriteVersion(w, v);
  w.EndArray().EndObject();
  return CairnResponse{w.Take()};
}

// GET datasets/manifest?name=N&version=V: the version's manifest as it is stored
// (docs/formats/manifest.md); its SHA-256 is the version's digest.
Result<CairnResponse> GetDataManifest(ApiContext& ctx, const CairnCall& call) {
  CAIRN_ASSIGN_OR_RETURN(DataVersion v, NamedVersion(ctx, call.fields, "version"));
  CAIRN_ASSIGN_OR_RETURN(std::string bytes, ctx.datasets->ManifestBytes(v));
  CairnResponse out{std::move(bytes)};
  out.headers.emplace_back("X-Cairn-Data-Version", std::to_string(v.version));
  return out;
}

// GET datasets/files?name=N&version=V[&prefix=P][&offset=O][&max_results=M]: a page of the
// version's files in path order, those under directory P when given.
Result<CairnResponse> ListDataFiles(ApiContext& ctx, const CairnCall& call) {
  const Fields& f = call.fields;
  CAIRN_ASSIGN_OR_RETURN(DataVersion v, NamedVersion(ctx, f, "version"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> prefix, f.Str("prefix"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> offset, f.Int("offset"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> max_results, f.Int("max_results"));
  const int64_t limit = max_results.value_or(1000);
  if (limit < 1 || limit > 10000) {
    return InvalidArgument("Invalid value " + std::to_string(limit) +
                           " for parameter 'max_results': expected 1 to 10000");
  }
  if (offset.value_or(0) < 0) return InvalidArgument("'offset' may not be negative");
  std::string dir = prefix.value_or("");
  while (dir.ends_with('/')) dir.pop_back();
  if (!dir.empty()) dir += '/';
  CAIRN_ASSIGN_OR_RETURN(std::vector<core::FileEntry> files, ctx.datasets->Files(v));
  JsonWriter w;
  w.BeginObject().Key("files").BeginArray();
  int64_t matched = 0;
  int64_t bytes = 0;
  for (const core::FileEntry& file : files) {
    if (!file.path.starts_with(dir)) continue;
    if (matched >= offset.value_or(0) && matched < offset.value_or(0) + limit) {
      WriteFile(w, file);
    }
    ++matched;
    bytes += file.size;
  }
  w.EndArray().Key("total_files").Int(matched).Key("total_bytes").Int(bytes).EndObject();
  return CairnResponse{w.Take()};
}

// GET datasets/diff?name=N&from=V1&to=V2: the files added, removed and changed from V1 to V2.
Result<CairnResponse> DiffDataVersions(ApiContext& ctx, const CairnCall& call) {
  const Fields& f = call.fields;
  if (!f.Has("from")) return service::MissingParameter("from");
  CAIRN_ASSIGN_OR_RETURN(DataVersion from, NamedVersion(ctx, f, "from"));
  CAIRN_ASSIGN_OR_RETURN(DataVersion to, NamedVersion(ctx, f, "to"));
  CAIRN_ASSIGN_OR_RETURN(std::vector<core::FileEntry> a, ctx.datasets->Files(from));
  CAIRN_ASSIGN_OR_RETURN(std::vector<core::FileEntry> b, ctx.datasets->Files(to));
  const core::ManifestDiff d = core::DiffManifests(a, b);
  JsonWriter w;
  w.BeginObject().Key("from");
  WriteVersion(w, from);
  w.Key("to");
  WriteVersion(w, to);
  w.Key("added").BeginArray();
  for (const core::FileEntry& e : d.added) WriteFile(w, e);
  w.EndArray().Key("removed").BeginArray();
  for (const core::FileEntry& e : d.removed) WriteFile(w, e);
  w.EndArray().Key("changed").BeginArray();
  for (const auto& [old_file, new_file] : d.changed) {
    w.BeginObject().Key("path").String(new_file.path);
    w.Key("from_size").Int(old_file.size).Key("to_size").Int(new_file.size);
    w.Key("from_sha256").String(old_file.sha256).Key("to_sha256").String(new_file.sha256);
    w.Key("from_executable").Bool(old_file.mode == core::kModeExecutable);
    w.Key("to_executable").Bool(new_file.mode == core::kModeExecutable);
    w.EndObject();
  }
  w.EndArray().EndObject();
  return CairnResponse{w.Take()};
}

// POST datasets/missing {"name", "digests": [...]}: the blobs the caller must send before
// naming them in a version of `name`.
Result<CairnResponse> MissingDataBlobs(ApiContext& ctx, const CairnCall& call) {
  CAIRN_ASSIGN_OR_RETURN(std::string name, call.fields.RequiredStr("name"));
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> digests, call.fields.StrList("digests"));
  CAIRN_RETURN_IF_ERROR(core::ValidateDatasetName(name));
  CAIRN_ASSIGN_OR_RETURN(core::Permission p, DatasetPermission(ctx, name));
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> missing,
                         ctx.datasets->MissingBlobs(Username(ctx), name,
                                                    core::Allows(p, core::Access::kRead), digests));
  JsonWriter w;
  w.BeginObject().Key("missing").BeginArray();
  for (const std::string& d : missing) w.String(d);
  w.EndArray().EndObject();
  return CairnResponse{w.Take()};
}

// POST blobs/missing {"digests": [...]}: of these, the blobs the caller must send before
// naming them outside a dataset (a run's output files, runs/records' blob op).
Result<CairnResponse> MissingBlobs(ApiContext& ctx, const CairnCall& call) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> digests, call.fields.StrList("digests"));
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> missing,
                         ctx.datasets->MissingBlobs(Username(ctx), digests));
  JsonWriter w;
  w.BeginObject().Key("missing").BeginArray();
  for (const std::string& d : missing) w.String(d);
  w.EndArray().EndObject();
  return CairnResponse{w.Take()};
}

// POST datasets/versions {"name", "digest", "message", "metadata": {...}}: a new version
// whose manifest (sent before, like its files) has SHA-256 `digest`.
Result<CairnResponse> CreateDataVersion(ApiContext& ctx, const CairnCall& call) {
  const Fields& f = call.fields;
  service::NewDataVersion req;
  CAIRN_ASSIGN_OR_RETURN(req.name, f.RequiredStr("name"));
  CAIRN_ASSIGN_OR_RETURN(req.digest, f.RequiredStr("digest"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> message, f.Str("message"));
  req.message = message.value_or("");
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> metadata, f.ObjectJson("metadata"));
  req.metadata = metadata.value_or("{}");
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> run_id, f.Str("run_id"));
  if (run_id && !run_id->empty()) {
    // Naming the run that made it is writing into that run's record.
    CAIRN_RETURN_IF_ERROR(RequireRunAccess(ctx, *run_id, core::Access::kUpdate));
    req.run_id = *run_id;
  }
  CAIRN_RETURN_IF_ERROR(core::ValidateDatasetName(req.name));
  CAIRN_ASSIGN_OR_RETURN(core::Permission p, DatasetPermission(ctx, req.name));
  core::Principal anonymous;
  CAIRN_ASSIGN_OR_RETURN(
      service::CreatedDataVersion created,
      ctx.datasets->CreateVersion(ctx.caller != nullptr ? *ctx.caller : anonymous, req,
                                  core::Allows(p, core::Access::kRead),
                                  core::Allows(p, core::Access::kUpdate)));
  JsonWriter w;
  w.BeginObject().Key("version");
  WriteVersion(w, created.version);
  w.Key("unchanged").Bool(created.unchanged).EndObject();
  return CairnResponse{w.Take()};
}

// GET datasets/lineage?name=N&version=V: the run that made the version, and the runs that
// used it (those the caller may read; `hidden` counts the others).
Result<CairnResponse> DataLineage(ApiContext& ctx, const CairnCall& call) {
  CAIRN_ASSIGN_OR_RETURN(DataVersion v, NamedVersion(ctx, call.fields, "version"));
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> ids, ctx.datasets->RunsUsing(v, 1000));
  std::map<std::string, bool> readable;  // by experiment
  auto may_read = [&](const core::RunInfo& r) -> Result<bool> {
    auto it = readable.find(r.experiment_id);
    if (it != readable.end()) return it->second;
    CAIRN_ASSIGN_OR_RETURN(bool may, CallerMay(ctx, core::ResourceKind::kExperiment,
                                               r.experiment_id, core::Access::kRead));
    readable[r.experiment_id] = may;
    return may;
  };
  JsonWriter w;
  w.BeginObject();
  int64_t hidden = 0;
  if (!v.run_id.empty()) {
    Result<core::RunInfo> maker = ctx.tracking->GetRunInfo(v.run_id);
    if (maker.ok()) {
      CAIRN_ASSIGN_OR_RETURN(bool may, may_read(*maker));
      if (may) {
        w.Key("produced_by");
        WriteRunRef(w, *maker);
      } else {
        ++hidden;
      }
    }
  }
  std::vector<core::RunInfo> users;
  for (const std::string& id : ids) {
    Result<core::RunInfo> r = ctx.tracking->GetRunInfo(id);
    if (!r.ok()) continue;
    CAIRN_ASSIGN_OR_RETURN(bool may, may_read(*r));
    if (!may) {
      ++hidden;
      continue;
    }
    users.push_back(*std::move(r));
  }
  std::sort(users.begin(), users.end(), [](const core::RunInfo& a, const core::RunInfo& b) {
    return a.start_time > b.start_time;
  });
  w.Key("used_by").BeginArray();
  for (const core::RunInfo& r : users) WriteRunRef(w, r);
  w.EndArray().Key("hidden").Int(hidden).EndObject();
  return CairnResponse{w.Take()};
}

// GET datasets/produced?run_id=R: the versions run R made, of the datasets the caller may read.
Result<CairnResponse> DataMadeByRun(ApiContext& ctx, const CairnCall& call) {
  CAIRN_ASSIGN_OR_RETURN(std::string run_id, call.fields.RequiredStr("run_id"));
  CAIRN_ASSIGN_OR_RETURN(std::vector<DataVersion> made, ctx.datasets->MadeBy(run_id));
  JsonWriter w;
  w.BeginObject().Key("versions").BeginArray();
  for (const DataVersion& v : made) {
    CAIRN_ASSIGN_OR_RETURN(
        bool may, CallerMay(ctx, core::ResourceKind::kDataset, v.name, core::Access::kRead));
    if (may) WriteVersion(w, v);
  }
  w.EndArray().EndObject();
  return CairnResponse{w.Take()};
}

constexpr CairnRoute kDatasetRoutes[] = {
    {"GET", "datasets/lineage", DataLineage},
    {"GET", "datasets/produced", DataMadeByRun},
    {"GET", "datasets", ListDatasets},
    {"GET", "datasets/get", GetDataVersion},
    {"GET", "datasets/versions", ListDataVersions},
    {"GET", "datasets/manifest", GetDataManifest},
    {"GET", "datasets/files", ListDataFiles},
    {"GET", "datasets/diff", DiffDataVersions},
    {"POST", "datasets/missing", MissingDataBlobs},
    {"POST", "blobs/missing", MissingBlobs},
    {"POST", "datasets/versions", CreateDataVersion},
};

}  // namespace

std::span<const CairnRoute> CairnDatasetRoutes() { return kDatasetRoutes; }

}  // namespace cairn::server
