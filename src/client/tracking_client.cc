#include "client/tracking_client.h"

#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

namespace cairn::client {
namespace {

using nlohmann::json;

std::string PercentEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

// Percent-encodes each segment of a '/'-separated path, keeping the slashes.
std::string EncodePath(std::string_view path) {
  std::string out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    if (start > 0) out.push_back('/');
    out += PercentEncode(path.substr(start, slash - start));
    start = slash + 1;
  }
  return out;
}

StatusCode CodeOfMlflowError(std::string_view error_code, int http_status) {
  if (error_code == "RESOURCE_DOES_NOT_EXIST" || error_code == "NOT_FOUND") {
    return StatusCode::kNotFound;
  }
  if (error_code == "INVALID_PARAMETER_VALUE" || error_code == "BAD_REQUEST" ||
      error_code == "MALFORMED_REQUEST") {
    return StatusCode::kInvalidArgument;
  }
  if (error_code == "RESOURCE_ALREADY_EXISTS") return StatusCode::kAlreadyExists;
  if (error_code == "INVALID_STATE") return StatusCode::kFailedPrecondition;
  if (error_code == "NOT_IMPLEMENTED") return StatusCode::kUnimplemented;
  if (http_status == 404) return StatusCode::kNotFound;
  if (http_status >= 400 && http_status < 500) return StatusCode::kInvalidArgument;
  return StatusCode::kUnavailable;
}

std::string Str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

int64_t Int(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_string()) return std::strtoll(it->get<std::string>().c_str(), nullptr, 10);
  return 0;
}

double Number(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return 0;
  if (it->is_number()) return it->get<double>();
  if (it->is_string()) {  // "NaN", "Infinity", "-Infinity"
    const std::string s = it->get<std::string>();
    if (s == "NaN") return std::nan("");
    if (s == "Infinity") return INFINITY;
    if (s == "-Infinity") return -INFINITY;
    return std::strtod(s.c_str(), nullptr);
  }
  return 0;
}

json MetricJson(const core::Metric& m) {
  json v;
  if (std::isnan(m.value)) {
    v = "NaN";
  } else if (std::isinf(m.value)) {
    v = m.value > 0 ? "Infinity" : "-Infinity";
  } else {
    v = m.value;
  }
  return {{"key", m.key}, {"value", v}, {"timestamp", m.timestamp}, {"step", m.step}};
}

template <typename KeyValue>
json KeyValues(const std::vector<KeyValue>& items) {
  json out = json::array();
  for (const KeyValue& kv : items) out.push_back({{"key", kv.key}, {"value", kv.value}});
  return out;
}

core::RunInfo DecodeRunInfo(const json& j) {
  core::RunInfo info;
  info.run_id = Str(j, "run_id");
  if (info.run_id.empty()) info.run_id = Str(j, "run_uuid");
  info.experiment_id = Str(j, "experiment_id");
  info.run_name = Str(j, "run_name");
  info.user_id = Str(j, "user_id");
  core::ParseRunStatus(Str(j, "status"), &info.status);
  info.start_time = Int(j, "start_time");
  if (j.contains("end_time")) info.end_time = Int(j, "end_time");
  info.artifact_uri = Str(j, "artifact_uri");
  core::ParseLifecycleStage(Str(j, "lifecycle_stage"), &info.lifecycle_stage);
  return info;
}

core::Run DecodeRun(const json& j) {
  core::Run run;
  if (auto info = j.find("info"); info != j.end()) run.info = DecodeRunInfo(*info);
  auto data = j.find("data");
  if (data == j.end()) return run;
  for (const json& m : data->value("metrics", json::array())) {
    run.data.metrics.push_back({Str(m, "key"), Number(m, "value"), Int(m, "timestamp"),
                                Int(m, "step")});
  }
  for (const json& p : data->value("params", json::array())) {
    run.data.params.push_back({Str(p, "key"), Str(p, "value")});
  }
  for (const json& t : data->value("tags", json::array())) {
    run.data.tags.push_back({Str(t, "key"), Str(t, "value")});
  }
  return run;
}

core::Experiment DecodeExperiment(const json& e) {
  core::Experiment out;
  out.experiment_id = Str(e, "experiment_id");
  out.name = Str(e, "name");
  out.artifact_location = Str(e, "artifact_location");
  core::ParseLifecycleStage(Str(e, "lifecycle_stage"), &out.lifecycle_stage);
  out.creation_time = Int(e, "creation_time");
  out.last_update_time = Int(e, "last_update_time");
  if (auto tags = e.find("tags"); tags != e.end() && tags->is_array()) {
    for (const json& t : *tags) out.tags.push_back({Str(t, "key"), Str(t, "value")});
  }
  return out;
}

// The search request fields both searches share, in MLflow's JSON form.
void AddSearchFields(json* body, const std::string& filter,
                     const std::vector<std::string>& order_by, int64_t max_results,
                     const std::string& page_token) {
  if (!filter.empty()) (*body)["filter"] = filter;
  if (!order_by.empty()) (*body)["order_by"] = order_by;
  if (max_results > 0) (*body)["max_results"] = max_results;
  if (!page_token.empty()) (*body)["page_token"] = page_token;
}

}  // namespace

std::string ResolveTrackingUri(const std::string& flag) {
  if (!flag.empty()) return flag;
  for (const char* name : {"CAIRN_TRACKING_URI", "MLFLOW_TRACKING_URI"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return v;
  }
  return "http://127.0.0.1:5000";
}

struct TrackingClient::Impl {
  ClientOptions options;
  std::string origin;  // scheme://host:port
  std::string prefix;  // path prefix without a trailing '/'
  httplib::Client http;

  Impl(ClientOptions o, std::string origin_in, std::string prefix_in)
      : options(std::move(o)),
        origin(std::move(origin_in)),
        prefix(std::move(prefix_in)),
        http(origin) {
    http.set_connection_timeout(options.timeout_seconds);
    http.set_read_timeout(options.timeout_seconds);
    http.set_write_timeout(options.timeout_seconds);
    http.set_keep_alive(true);
    http.set_tcp_nodelay(true);
  }

  // Sends a request, retrying connection failures and 5xx answers; parses the JSON answer.
  // `send` makes one attempt.
  Result<json> Call(const std::string& what, const std::function<httplib::Result()>& send) {
    std::string last_error;
    for (int attempt = 0; attempt <= options.retries; ++attempt) {
      if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(200 << attempt));
      httplib::Result res = send();
      if (!res) {
        last_error = "cannot reach the tracking server at " + options.tracking_uri + " (" +
                     httplib::to_string(res.error()) + ")";
        continue;
      }
      json body = json::parse(res->body, nullptr, /*allow_exceptions=*/false);
      if (res->status >= 200 && res->status < 300) {
        return body.is_discarded() ? json::object() : body;
      }
      std::string message = body.is_object() ? Str(body, "message") : std::string();
      if (message.empty()) message = res->body.substr(0, 300);
      StatusCode code =
          CodeOfMlflowError(body.is_object() ? Str(body, "error_code") : "", res->status);
      if (res->status >= 500) {
        last_error = what + ": server answered " + std::to_string(res->status) + ": " + message;
        continue;
      }
      return Status(code, what + ": " + message);
    }
    return Unavailable(last_error);
  }

  Result<json> Post(const std::string& endpoint, const json& body) {
    std::string path = prefix + "/api/2.0/mlflow/" + endpoint;
    std::string text = body.dump();
    return Call(endpoint, [&] { return http.Post(path, text, "application/json"); });
  }

  Result<json> Get(const std::string& endpoint, const std::string& query) {
    std::string path = prefix + "/api/2.0/mlflow/" + endpoint + "?" + query;
    return Call(endpoint, [&] { return http.Get(path); });
  }

  Result<std::string> ArtifactPath(const std::string& artifact_uri,
                                   const std::string& artifact_path) {
    constexpr std::string_view kScheme = "mlflow-artifacts:";
    if (!artifact_uri.starts_with(kScheme)) {
      return Unimplemented("the run's artifacts are at '" + artifact_uri +
                           "', which is not served through the tracking server");
    }
    std::string_view rest = std::string_view(artifact_uri).substr(kScheme.size());
    if (rest.starts_with("//")) {  // mlflow-artifacts://host/path
      rest.remove_prefix(2);
      size_t slash = rest.find('/');
      rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
    }
    while (rest.starts_with("/")) rest.remove_prefix(1);
    std::string full(rest);
    if (!artifact_path.empty()) full += (full.empty() ? "" : "/") + artifact_path;
    return prefix + "/api/2.0/mlflow-artifacts/artifacts/" + EncodePath(full);
  }
};

TrackingClient::TrackingClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TrackingClient::~TrackingClient() = default;

Result<std::unique_ptr<TrackingClient>> TrackingClient::Create(const ClientOptions& options) {
  const std::string& uri = options.tracking_uri;
  if (uri.starts_with("https://")) {
    return Unimplemented("https tracking URIs are not supported yet: " + uri);
  }
  if (!uri.starts_with("http://")) {
    return InvalidArgument("tracking URI must start with http://, got '" + uri + "'");
  }
  size_t path_start = uri.find('/', 7);
  std::string origin = uri.substr(0, path_start);
  std::string prefix = path_start == std::string::npos ? "" : uri.substr(path_start);
  while (prefix.ends_with("/")) prefix.pop_back();
  if (origin.size() <= 7) return InvalidArgument("tracking URI has no host: '" + uri + "'");
  return std::unique_ptr<TrackingClient>(
      new TrackingClient(std::make_unique<Impl>(options, origin, prefix)));
}

const std::string& TrackingClient::tracking_uri() const { return impl_->options.tracking_uri; }

Result<std::string> TrackingClient::GetOrCreateExperiment(const std::string& name) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    Result<json> found =
        impl_->Get("experiments/get-by-name", "experiment_name=" + PercentEncode(name));
    if (found.ok()) return Str((*found)["experiment"], "experiment_id");
    if (found.status().code() != StatusCode::kNotFound) return found.status();
    Result<json> created = impl_->Post("experiments/create", {{"name", name}});
    if (created.ok()) return Str(*created, "experiment_id");
    // Another client created it in between: look it up again.
    if (created.status().code() != StatusCode::kAlreadyExists) return created.status();
  }
  return Unavailable("experiment '" + name + "' could neither be found nor created");
}

Result<core::Experiment> TrackingClient::GetExperiment(const std::string& experiment_id) {
  CAIRN_ASSIGN_OR_RETURN(json r, impl_->Get("experiments/get",
                                            "experiment_id=" + PercentEncode(experiment_id)));
  const json& e = r["experiment"];
  core::Experiment out;
  out.experiment_id = Str(e, "experiment_id");
  out.name = Str(e, "name");
  out.artifact_location = Str(e, "artifact_location");
  core::ParseLifecycleStage(Str(e, "lifecycle_stage"), &out.lifecycle_stage);
  return out;
}

Result<TrackingClient::ExperimentPage> TrackingClient::SearchExperiments(
    const ExperimentSearch& search) {
  json body = {{"view_type", std::string(core::ViewTypeName(search.view))}};
  AddSearchFields(&body, search.filter, search.order_by, search.max_results, search.page_token);
  CAIRN_ASSIGN_OR_RETURN(json r, impl_->Post("experiments/search", body));
  ExperimentPage page;
  if (auto items = r.find("experiments"); items != r.end() && items->is_array()) {
    for (const json& e : *items) page.experiments.push_back(DecodeExperiment(e));
  }
  page.next_page_token = Str(r, "next_page_token");
  return page;
}

Result<core::Experiment> TrackingClient::GetExperimentByName(const std::string& name) {
  CAIRN_ASSIGN_OR_RETURN(
      json r, impl_->Get("experiments/get-by-name", "experiment_name=" + PercentEncode(name)));
  return DecodeExperiment(r["experiment"]);
}

Result<TrackingClient::RunPage> TrackingClient::SearchRuns(const RunSearch& search) {
  json body = {{"experiment_ids", search.experiment_ids},
               {"run_view_type", std::string(core::ViewTypeName(search.view))}};
  AddSearchFields(&body, search.filter, search.order_by, search.max_results, search.page_token);
  CAIRN_ASSIGN_OR_RETURN(json r, impl_->Post("runs/search", body));
  RunPage page;
  if (auto items = r.find("runs"); items != r.end() && items->is_array()) {
    for (const json& run : *items) page.runs.push_back(DecodeRun(run));
  }
  page.next_page_token = Str(r, "next_page_token");
  return page;
}

Result<std::vector<TrackingClient::ArtifactFile>> TrackingClient::ListArtifacts(
    const std::string& run_id, const std::string& path) {
  std::string query = "run_id=" + PercentEncode(run_id);
  if (!path.empty()) query += "&path=" + PercentEncode(path);
  CAIRN_ASSIGN_OR_RETURN(json r, impl_->Get("artifacts/list", query));
  std::vector<ArtifactFile> files;
  if (auto items = r.find("files"); items != r.end() && items->is_array()) {
    for (const json& f : *items) {
      auto is_dir = f.find("is_dir");
      files.push_back({Str(f, "path"),
                       is_dir != f.end() && is_dir->is_boolean() && is_dir->get<bool>(),
                       Int(f, "file_size")});
    }
  }
  return files;
}

Result<std::string> TrackingClient::DownloadArtifact(const std::string& artifact_uri,
                                                     const std::string& artifact_path) {
  CAIRN_ASSIGN_OR_RETURN(std::string path, impl_->ArtifactPath(artifact_uri, artifact_path));
  std::string content;
  auto get = [&]() -> httplib::Result {
    httplib::Result res = impl_->http.Get(path);
    if (res && res->status == 200) {
      content = std::move(res->body);
      res->body = "{}";  // the content is taken; Call parses the body as JSON
    }
    return res;
  };
  CAIRN_RETURN_IF_ERROR(impl_->Call("download " + artifact_path, get).status());
  return content;
}

Result<core::RunInfo> TrackingClient::CreateRun(const std::string& experiment_id,
                                                 const std::string& run_name, int64_t start_time,
                                                 const std::vector<core::Tag>& tags) {
  json body = {{"experiment_id", experiment_id}, {"start_time", start_time},
               {"tags", KeyValues(tags)}};
  if (!run_name.empty()) body["run_name"] = run_name;
  for (const core::Tag& t : tags) {
    if (t.key == "mlflow.user") body["user_id"] = t.value;  // as MLflow's clients send it
  }
  CAIRN_ASSIGN_OR_RETURN(json r, impl_->Post("runs/create", body));
  return DecodeRunInfo(r["run"]["info"]);
}

Result<core::RunInfo> TrackingClient::CreateRunWithId(const std::string& run_id,
                                                       const std::string& experiment_id,
                                                       const std::string& experiment_name,
                                                       const std::string& run_name,
                                                       int64_t start_time,
                                                       const std::vector<core::Tag>& tags) {
  json body = {{"run_id", run_id}, {"start_time", start_time}, {"tags", KeyValues(tags)}};
  if (!experiment_id.empty()) body["experiment_id"] = experiment_id;
  if (!experiment_name.empty()) body["experiment_name"] = experiment_name;
  if (!run_name.empty()) body["run_name"] = run_name;
  for (const core::Tag& t : tags) {
    if (t.key == "mlflow.user") body["user_id"] = t.value;
  }
  std::string path = impl_->prefix + "/api/cairn/v1/runs";
  std::string text = body.dump();
  CAIRN_ASSIGN_OR_RETURN(json r, impl_->Call("create run", [&] {
    return impl_->http.Post(path, text, "application/json");
  }));
  core::RunInfo info;
  info.run_id = Str(r, "run_id");
  info.experiment_id = Str(r, "experiment_id");
  info.artifact_uri = Str(r, "artifact_uri");
  info.run_name = run_name;
  return info;
}

Result<core::Run> TrackingClient::GetRun(const std::string& run_id) {
  CAIRN_ASSIGN_OR_RETURN(json r, impl_->Get("runs/get", "run_id=" + PercentEncode(run_id)));
  return DecodeRun(r["run"]);
}

Status TrackingClient::LogBatch(const std::string& run_id,
                                const std::vector<core::Metric>& metrics,
                                const std::vector<core::Param>& params,
                                const std::vector<core::Tag>& tags) {
  json m = json::array();
  for (const core::Metric& metric : metrics) m.push_back(MetricJson(metric));
  json body = {{"run_id", run_id}, {"metrics", m}, {"params", KeyValues(params)},
               {"tags", KeyValues(tags)}};
  return impl_->Post("runs/log-batch", body).status();
}

Status TrackingClient::SetTag(const std::string& run_id, const std::string& key,
                              const std::string& value) {
  return impl_->Post("runs/set-tag", {{"run_id", run_id}, {"key", key}, {"value", value}})
      .status();
}

Status TrackingClient::UpdateRun(const std::string& run_id, core::RunStatus status,
                                 std::optional<int64_t> end_time) {
  json body = {{"run_id", run_id}, {"status", std::string(core::RunStatusName(status))}};
  if (end_time) body["end_time"] = *end_time;
  return impl_->Post("runs/update", body).status();
}

Result<int64_t> TrackingClient::AppendRunLog(const std::string& run_id,
                                             const std::vector<core::ConsoleChunk>& chunks) {
  json items = json::array();
  for (const core::ConsoleChunk& c : chunks) {
    items.push_back({{"offset", c.offset},
                     {"stream", std::string(core::ConsoleStreamName(c.stream))},
                     {"timestamp", c.timestamp},
                     {"data", c.data}});
  }
  std::string path = impl_->prefix + "/api/cairn/v1/runs/" + PercentEncode(run_id) + "/log";
  // Console text is UTF-8 already (the wrapper decodes it); replace anything else rather
  // than fail the upload.
  std::string text = json{{"chunks", items}}.dump(-1, ' ', false, json::error_handler_t::replace);
  CAIRN_ASSIGN_OR_RETURN(json r, impl_->Call("console log upload", [&] {
    return impl_->http.Post(path, text, "application/json");
  }));
  return Int(r, "length");
}

Result<TrackingClient::LogPage> TrackingClient::ReadRunLog(const std::string& run_id,
                                                           int64_t offset) {
  std::string path = impl_->prefix + "/api/cairn/v1/runs/" + PercentEncode(run_id) +
                     "/log?offset=" + std::to_string(offset);
  LogPage page;
  CAIRN_RETURN_IF_ERROR(impl_->Call("console log", [&]() -> httplib::Result {
    httplib::Result res = impl_->http.Get(path);
    if (res && res->status == 200) {
      page.text = res->body;
      page.next_offset = std::strtoll(res->get_header_value("X-Cairn-Log-Next-Offset").c_str(),
                                      nullptr, 10);
      core::ParseRunStatus(res->get_header_value("X-Cairn-Run-Status"), &page.run_status);
      res->body = "{}";  // the text is taken; Call parses the body as JSON
    }
    return res;
  }).status());
  return page;
}

Status TrackingClient::UploadArtifact(const std::string& artifact_uri,
                                      const std::string& artifact_path,
                                      const std::string& content) {
  CAIRN_ASSIGN_OR_RETURN(std::string path, impl_->ArtifactPath(artifact_uri, artifact_path));
  return impl_
      ->Call("upload " + artifact_path,
             [&] { return impl_->http.Put(path, content, "application/octet-stream"); })
      .status();
}

Status TrackingClient::UploadArtifactFile(const std::string& artifact_uri,
                                          const std::string& artifact_path,
                                          const std::string& local_path) {
  CAIRN_ASSIGN_OR_RETURN(std::string path, impl_->ArtifactPath(artifact_uri, artifact_path));
  std::ifstream probe(local_path, std::ios::binary | std::ios::ate);
  if (!probe) return NotFound("cannot read " + local_path);
  const size_t size = static_cast<size_t>(probe.tellg());
  return impl_
      ->Call("upload " + artifact_path,
             [&]() -> httplib::Result {
               auto in = std::make_shared<std::ifstream>(local_path, std::ios::binary);
               return impl_->http.Put(
                   path, size,
                   [in](size_t offset, size_t length, httplib::DataSink& sink) {
                     char buf[64 * 1024];
                     in->seekg(static_cast<std::streamoff>(offset));
                     size_t n = std::min(length, sizeof(buf));
                     in->read(buf, static_cast<std::streamsize>(n));
                     std::streamsize got = in->gcount();
                     if (got <= 0) return false;
                     return sink.write(buf, static_cast<size_t>(got));
                   },
                   "application/octet-stream");
             })
      .status();
}

}  // namespace cairn::client
