#include "data/dataset_client.h"

#include <nlohmann/json.hpp>

#include "util/hash.h"

namespace cairn::data {
namespace {

using nlohmann::json;

constexpr std::string_view kApi = "/api/cairn/v1/";

Result<json> ParseAnswer(const std::string& text, std::string_view what) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object())
    return Unavailable("the server's answer to " + std::string(what) + " is not a JSON object");
  return j;
}

core::DataVersion DecodeVersion(const json& j) {
  core::DataVersion v;
  if (!j.is_object()) return v;
  v.name = j.value("name", std::string());
  v.version = j.value("version", int64_t{0});
  v.digest = j.value("digest", std::string());
  v.parent = j.value("parent", int64_t{0});
  v.message = j.value("message", std::string());
  v.creator = j.value("creator", std::string());
  v.created_time = j.value("created_time", int64_t{0});
  v.metadata = j.contains("metadata") ? j["metadata"].dump() : "{}";
  v.files = j.value("files", int64_t{0});
  v.bytes = j.value("bytes", int64_t{0});
  v.run_id = j.value("run_id", std::string());
  return v;
}

core::FileEntry DecodeFile(const json& j) {
  core::FileEntry f;
  if (!j.is_object()) return f;
  f.path = j.value("path", std::string());
  f.size = j.value("size", int64_t{0});
  f.mode = j.value("executable", false) ? core::kModeExecutable : core::kModeFile;
  f.sha256 = j.value("sha256", std::string());
  return f;
}

std::string Query(const std::string& name, std::string_view key = {}, int64_t version = 0) {
  std::string q = "name=" + client::PercentEncode(name);
  if (!key.empty() && version > 0) q += "&" + std::string(key) + "=" + std::to_string(version);
  return q;
}

}  // namespace

Result<std::unique_ptr<DatasetClient>> DatasetClient::Open(const client::ClientOptions& options) {
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<client::TrackingClient> main,
                         client::TrackingClient::Create(options));
  auto out = std::make_unique<DatasetClient>(
      main.get(), [options] { return client::TrackingClient::Create(options); });
  out->owned_ = std::move(main);
  return out;
}

Result<core::DataVersion> ParseDataVersion(std::string_view json_text) {
  json j = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return InvalidArgument("not a JSON object");
  return DecodeVersion(j);
}

Result<std::vector<core::DatasetEntry>> DatasetClient::List() {
  CAIRN_ASSIGN_OR_RETURN(std::string text,
                         client_->CallJson("GET", std::string(kApi) + "datasets", ""));
  CAIRN_ASSIGN_OR_RETURN(json j, ParseAnswer(text, "datasets"));
  std::vector<core::DatasetEntry> out;
  for (const json& d : j.value("datasets", json::array())) {
    if (!d.is_object()) continue;
    core::DatasetEntry e;
    e.name = d.value("name", std::string());
    e.created_time = d.value("created_time", int64_t{0});
    e.versions = d.value("versions", int64_t{0});
    e.latest = DecodeVersion(d.value("latest", json::object()));
    out.push_back(std::move(e));
  }
  return out;
}

Result<core::DataVersion> DatasetClient::Get(const std::string& name, int64_t version) {
  CAIRN_ASSIGN_OR_RETURN(
      std::string text,
      client_->CallJson("GET",
                        std::string(kApi) + "datasets/get?" + Query(name, "version", version), ""));
  CAIRN_ASSIGN_OR_RETURN(json j, ParseAnswer(text, "datasets/get"));
  return DecodeVersion(j.value("version", json::object()));
}

Result<std::vector<core::DataVersion>> DatasetClient::Versions(const std::string& name) {
  CAIRN_ASSIGN_OR_RETURN(
      std::string text,
      client_->CallJson("GET", std::string(kApi) + "datasets/versions?" + Query(name), ""));
  CAIRN_ASSIGN_OR_RETURN(json j, ParseAnswer(text, "datasets/versions"));
  std::vector<core::DataVersion> out;
  for (const json& v : j.value("versions", json::array())) out.push_back(DecodeVersion(v));
  return out;
}

Result<std::vector<core::FileEntry>> DatasetClient::Files(const core::DataVersion& v) {
  CAIRN_ASSIGN_OR_RETURN(
      std::string bytes,
      client_->CallJson(
          "GET", std::string(kApi) + "datasets/manifest?" + Query(v.name, "version", v.version),
          ""));
  if (Sha256Hex(bytes) != v.digest) {
    return FailedPrecondition("the manifest of " + core::DataRefText(v.name, v.version) +
                              " that the server sent does not match its digest " + v.digest);
  }
  return core::ParseManifestJson(bytes);
}

Result<VersionDiff> DatasetClient::Diff(const std::string& name, int64_t from, int64_t to) {
  std::string q = Query(name, "from", from);
  if (to > 0) q += "&to=" + std::to_string(to);
  CAIRN_ASSIGN_OR_RETURN(std::string text,
                         client_->CallJson("GET", std::string(kApi) + "datasets/diff?" + q, ""));
  CAIRN_ASSIGN_OR_RETURN(json j, ParseAnswer(text, "datasets/diff"));
  VersionDiff d;
  d.from = DecodeVersion(j.value("from", json::object()));
  d.to = DecodeVersion(j.value("to", json::object()));
  for (const json& f : j.value("added", json::array())) d.files.added.push_back(DecodeFile(f));
  for (const json& f : j.value("removed", json::array())) d.files.removed.push_back(DecodeFile(f));
  for (const json& c : j.value("changed", json::array())) {
    if (!c.is_object()) continue;
    core::FileEntry a, b;
    a.path = b.path = c.value("path", std::string());
    a.size = c.value("from_size", int64_t{0});
    b.size = c.value("to_size", int64_t{0});
    a.sha256 = c.value("from_sha256", std::string());
    b.sha256 = c.value("to_sha256", std::string());
    a.mode = c.value("from_executable", false) ? core::kModeExecutable : core::kModeFile;
    b.mode = c.value("to_executable", false) ? core::kModeExecutable : core::kModeFile;
    d.files.changed.emplace_back(std::move(a), std::move(b));
  }
  return d;
}

Result<std::vector<std::string>> DatasetClient::Missing(const std::string& name,
                                                        const std::vector<std::string>& digests) {
  std::vector<std::string> missing;
  for (size_t start = 0; start < digests.size(); start += kDigestsPerRequest) {
    const size_t end = std::min(digests.size(), start + kDigestsPerRequest);
    json body = {{"name", name},
                 {"digests", std::vector<std::string>(digests.begin() + static_cast<long>(start),
                                                      digests.begin() + static_cast<long>(end))}};
    CAIRN_ASSIGN_OR_RETURN(
        std::string text,
        client_->CallJson("POST", std::string(kApi) + "datasets/missing", body.dump()));
    CAIRN_ASSIGN_OR_RETURN(json j, ParseAnswer(text, "datasets/missing"));
    for (const json& d : j.value("missing", json::array())) {
      if (d.is_string()) missing.push_back(d.get<std::string>());
    }
  }
  return missing;
}

Status DatasetClient::SendBlob(client::TrackingClient& via, const std::string& digest,
                               const std::string& local_path) {
  return via.PutFile(std::string(kApi) + "datasets/blobs/" + digest, local_path).status();
}

Result<std::string> DatasetClient::SendUnnamedBlob(client::TrackingClient& via,
                                                   const std::string& local_path,
                                                   const std::atomic<bool>* cancel) {
  CAIRN_ASSIGN_OR_RETURN(std::string text,
                         via.PostFile(std::string(kApi) + "datasets/blobs", local_path, cancel));
  CAIRN_ASSIGN_OR_RETURN(json j, ParseAnswer(text, "datasets/blobs"));
  std::string digest = j.value("digest", std::string());
  if (!IsSha256Hex(digest))
    return Unavailable("the server's answer to datasets/blobs names no digest");
  return digest;
}

Result<CreatedVersion> DatasetClient::CreateVersion(const std::string& name,
                                                    const std::string& digest,
                                                    const std::string& message,
                                                    const std::string& metadata,
                                                    const std::string& run_id) {
  json meta = json::parse(metadata.empty() ? "{}" : metadata, nullptr, false);
  if (!meta.is_object()) return InvalidArgument("a version's metadata must be a JSON object");
  json body = {{"name", name}, {"digest", digest}, {"message", message}, {"metadata", meta}};
  if (!run_id.empty()) body["run_id"] = run_id;
  CAIRN_ASSIGN_OR_RETURN(
      std::string text,
      client_->CallJson("POST", std::string(kApi) + "datasets/versions", body.dump()));
  CAIRN_ASSIGN_OR_RETURN(json j, ParseAnswer(text, "datasets/versions"));
  return CreatedVersion{DecodeVersion(j.value("version", json::object())),
                        j.value("unchanged", false)};
}

Status DatasetClient::FetchFile(client::TrackingClient& via, const core::DataVersion& v,
                                const std::string& path, const std::string& local_path,
                                std::string* sha256) {
  std::string encoded;
  const std::string full = "datasets/" + v.name + "/" + v.digest + "/" + path;
  size_t start = 0;
  for (;;) {
    const size_t slash = full.find('/', start);
    encoded += client::PercentEncode(full.substr(start, slash - start));
    if (slash == std::string::npos) break;
    encoded += '/';
    start = slash + 1;
  }
  return via.GetToFile("/api/2.0/mlflow-artifacts/artifacts/" + encoded, local_path, sha256);
}

}  // namespace cairn::data
