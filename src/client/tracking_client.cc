#include "client/tracking_client.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>
#include <vector>

#include "client/credentials.h"
#include "client/json_fields.h"
#include "core/mlflow_json.h"
#include "util/curl_api.h"
#include "util/hash.h"
#include "util/parallel.h"
#include "util/strings.h"

namespace cairn::client {

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

namespace {

using nlohmann::json;

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
  if (error_code == "UNAUTHENTICATED" || http_status == 401) return StatusCode::kUnauthenticated;
  if (error_code == "PERMISSION_DENIED" || http_status == 403) {
    return StatusCode::kPermissionDenied;
  }
  if (http_status == 404) return StatusCode::kNotFound;
  if (http_status >= 400 && http_status < 500) return StatusCode::kInvalidArgument;
  return StatusCode::kUnavailable;
}

// The fields a new run starts with: its name, start time, tags, and the user from the
// mlflow.user tag (as MLflow's clients send it).
void WriteRunStart(JsonWriter& w, const std::string& run_name, int64_t start_time,
                   const std::vector<core::Tag>& tags) {
  if (!run_name.empty()) w.Key("run_name").String(run_name);
  w.Key("start_time").Int(start_time).Key("tags");
  core::WriteTags(w, tags);
  for (const core::Tag& t : tags) {
    if (t.key == "mlflow.user") w.Key("user_id").String(t.value);
  }
}

std::vector<core::Tag> DecodeTags(const json& j) {
  std::vector<core::Tag> tags;
  if (auto it = j.find("tags"); it != j.end() && it->is_array()) {
    for (const json& t : *it) tags.push_back({JsonStr(t, "key"), JsonStr(t, "value")});
  }
  return tags;
}

core::RunInfo DecodeRunInfo(const json& j) {
  core::RunInfo info;
  info.run_id = JsonStr(j, "run_id");
  if (info.run_id.empty()) info.run_id = JsonStr(j, "run_uuid");
  info.experiment_id = JsonStr(j, "experiment_id");
  info.run_name = JsonStr(j, "run_name");
  info.user_id = JsonStr(j, "user_id");
  core::ParseRunStatus(JsonStr(j, "status"), &info.status);
  info.start_time = JsonInt(j, "start_time");
  if (j.contains("end_time")) info.end_time = JsonInt(j, "end_time");
  info.artifact_uri = JsonStr(j, "artifact_uri");
  core::ParseLifecycleStage(JsonStr(j, "lifecycle_stage"), &info.lifecycle_stage);
  return info;
}

core::Run DecodeRun(const json& j) {
  core::Run run;
  if (auto info = j.find("info"); info != j.end()) run.info = DecodeRunInfo(*info);
  auto data = j.find("data");
  if (data == j.end()) return run;
  for (const json& m : data->value("metrics", json::array())) {
    run.data.metrics.push_back(
        {JsonStr(m, "key"), JsonNumber(m, "value"), JsonInt(m, "timestamp"), JsonInt(m, "step")});
  }
  for (const json& p : data->value("params", json::array())) {
    run.data.params.push_back({JsonStr(p, "key"), JsonStr(p, "value")});
  }
  for (const json& t : data->value("tags", json::array())) {
    run.data.tags.push_back({JsonStr(t, "key"), JsonStr(t, "value")});
  }
  if (auto inputs = j.find("inputs"); inputs != j.end() && inputs->is_object()) {
    for (const json& in : inputs->value("dataset_inputs", json::array())) {
      core::DatasetInput d;
      d.tags = DecodeTags(in);
      const json ds = in.value("dataset", json::object());
      d.dataset = {JsonStr(ds, "name"),   JsonStr(ds, "digest"), JsonStr(ds, "source_type"),
                   JsonStr(ds, "source"), JsonStr(ds, "schema"), JsonStr(ds, "profile")};
      run.inputs.push_back(std::move(d));
    }
  }
  return run;
}

core::ModelVersion DecodeModelVersion(const json& j) {
  core::ModelVersion v;
  v.name = JsonStr(j, "name");
  v.version = JsonInt(j, "version");
  v.creation_timestamp = JsonInt(j, "creation_timestamp");
  v.last_updated_timestamp = JsonInt(j, "last_updated_timestamp");
  v.user_id = JsonStr(j, "user_id");
  core::ParseModelStage(JsonStr(j, "current_stage"), &v.current_stage);
  v.description = JsonStr(j, "description");
  v.source = JsonStr(j, "source");
  v.run_id = JsonStr(j, "run_id");
  v.run_link = JsonStr(j, "run_link");
  v.status_message = JsonStr(j, "status_message");
  const std::string status = JsonStr(j, "status");
  if (status == "PENDING_REGISTRATION") v.status = core::ModelVersionStatus::kPendingRegistration;
  if (status == "FAILED_REGISTRATION") v.status = core::ModelVersionStatus::kFailedRegistration;
  v.tags = DecodeTags(j);
  if (auto it = j.find("aliases"); it != j.end() && it->is_array()) {
    for (const json& a : *it) {
      if (a.is_string()) v.aliases.push_back(a.get<std::string>());
    }
  }
  return v;
}

core::RegisteredModel DecodeRegisteredModel(const json& j) {
  core::RegisteredModel m;
  m.name = JsonStr(j, "name");
  m.creation_timestamp = JsonInt(j, "creation_timestamp");
  m.last_updated_timestamp = JsonInt(j, "last_updated_timestamp");
  m.user_id = JsonStr(j, "user_id");
  m.description = JsonStr(j, "description");
  m.tags = DecodeTags(j);
  if (auto it = j.find("aliases"); it != j.end() && it->is_array()) {
    for (const json& a : *it) m.aliases.push_back({JsonStr(a, "alias"), JsonInt(a, "version")});
  }
  if (auto it = j.find("latest_versions"); it != j.end() && it->is_array()) {
    for (const json& v : *it) m.latest_versions.push_back(DecodeModelVersion(v));
  }
  return m;
}

core::Experiment DecodeExperiment(const json& e) {
  core::Experiment out;
  out.experiment_id = JsonStr(e, "experiment_id");
  out.name = JsonStr(e, "name");
  out.artifact_location = JsonStr(e, "artifact_location");
  core::ParseLifecycleStage(JsonStr(e, "lifecycle_stage"), &out.lifecycle_stage);
  out.creation_time = JsonInt(e, "creation_time");
  out.last_update_time = JsonInt(e, "last_update_time");
  if (auto tags = e.find("tags"); tags != e.end() && tags->is_array()) {
    for (const json& t : *tags) out.tags.push_back({JsonStr(t, "key"), JsonStr(t, "value")});
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

namespace {

// One HTTP exchange's answer.
struct Reply {
  long status = 0;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;

  std::string Header(std::string_view name) const {
    for (const auto& [n, v] : headers) {
      if (EqualsIgnoreCase(n, name)) {
        return v;
      }
    }
    return "";
  }
};

// One request: an in-memory body, or a file streamed as a PUT body.
struct Request {
  const char* method = "GET";
  std::string path;  // with the URI's prefix and any query
  std::string_view body;
  const char* content_type = nullptr;
  std::string upload_file;  // send this file's bytes instead of `body` (PUT unless POST)
  const std::atomic<bool>* cancel_upload = nullptr;  // set: the upload stops where it is
  std::string download_file;  // write a successful answer's body here instead of the Reply
  std::string* download_sha256 = nullptr;  // set to the hex SHA-256 of what was written there
};

// Where an answer's body goes: into the file of a download while the status is 2xx, else
// (errors, and every other request) into the Reply, bounded for a download's error.
struct BodySink {
  Reply* reply = nullptr;
  std::FILE* file = nullptr;
  CURL* curl = nullptr;
  bool write_failed = false;
  Sha256Hasher* hasher = nullptr;  // of the file's bytes, when asked for

  // Pieces arrive as the socket yields them, often small. When they are hashed, they are
  // gathered; each full buffer is written on one side thread and hashed on another while the
  // next one fills.
  bool WriteFile(std::string_view piece) {
    if (hasher == nullptr) return Put(piece);
    while (!piece.empty()) {
      const size_t take = std::min(piece.size(), kGather - filling_.size());
      filling_.append(piece.substr(0, take));
      piece.remove_prefix(take);
      if (filling_.size() == kGather && !Hand()) return false;
    }
    return true;
  }
  // Writes what is gathered and waits for the writes; false when the file could not take them.
  bool Flush() {
    if (!filling_.empty() && !Hand()) return false;
    Settle();
    return !failed_;
  }

 private:
  static constexpr size_t kGather = 1 << 20;
  static constexpr size_t kHashBeside = 128 << 10;  // smaller: not worth a thread

  bool Put(std::string_view piece) {
    return std::fwrite(piece.data(), 1, piece.size(), file) == piece.size();
  }
  void Settle() {
    if (writer_ != nullptr) writer_->Wait();
    if (hashing_ != nullptr) hashing_->Wait();
  }
  // Hands the gathered buffer over once the one before it is done.
  bool Hand() {
    Settle();
    if (failed_) return false;
    std::swap(filling_, handed_);
    filling_.clear();
    if (writer_ == nullptr && handed_.size() < kHashBeside) {
      hasher->Update(handed_);
      failed_ = !Put(handed_);
      return !failed_;
    }
    if (writer_ == nullptr) {
      writer_ = std::make_unique<SideThread>();
      hashing_ = std::make_unique<SideThread>();
    }
    writer_->Start([this] { failed_ = !Put(handed_); });
    hashing_->Start([this] { hasher->Update(handed_); });
    return true;
  }

  std::string filling_;
  std::string handed_;
  bool failed_ = false;  // set by the writer; read after Settle
  std::unique_ptr<SideThread> writer_;
  std::unique_ptr<SideThread> hashing_;
};

size_t WriteBody(char* data, size_t size, size_t n, void* out) {
  auto* sink = static_cast<BodySink*>(out);
  const size_t bytes = size * n;
  if (sink->file != nullptr) {
    long status = 0;
    Curl().easy_getinfo(sink->curl, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300) {
      if (!sink->WriteFile(std::string_view(data, bytes))) {
        sink->write_failed = true;
        return 0;  // ends the transfer
      }
      return bytes;
    }
    if (sink->reply->body.size() > (64 << 10)) return bytes;
  }
  sink->reply->body.append(data, bytes);
  return bytes;
}

size_t AppendHeader(char* data, size_t size, size_t n, void* out) {
  std::string_view line(data, size * n);
  const size_t colon = line.find(':');
  if (colon != std::string_view::npos) {
    std::string_view value = Trim(line.substr(colon + 1));
    static_cast<Reply*>(out)->headers.emplace_back(std::string(line.substr(0, colon)),
                                                   std::string(value));
  } else if (line.starts_with("HTTP/")) {
    static_cast<Reply*>(out)->headers.clear();  // a 100 Continue's headers precede the answer's
  }
  return size * n;
}

// How long an upload may wait for its answer after its last byte.
constexpr long kUploadStallSeconds = 600;

// How much of a file an upload reads, or a download receives, at a time.
constexpr long kFileBufferBytes = 1L << 20;

// A file sent as a request's body, which its sender may call off midway.
struct UploadSource {
  std::FILE* file = nullptr;
  const std::atomic<bool>* cancel = nullptr;
  bool cancelled = false;
};

size_t ReadFromFile(char* buffer, size_t size, size_t n, void* in) {
  auto* source = static_cast<UploadSource*>(in);
  if (source->cancel != nullptr && source->cancel->load()) {
    source->cancelled = true;
    return CURL_READFUNC_ABORT;
  }
  return std::fread(buffer, 1, size * n, source->file);
}

// Called about once a second even while nothing moves (waiting for "100 Continue", a full
// socket): a cancelled upload stops then too.
int CheckCancelled(void* in, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* source = static_cast<UploadSource*>(in);
  if (!source->cancel->load()) return 0;
  source->cancelled = true;
  return 1;
}

}  // namespace

struct TrackingClient::Impl {
  ClientOptions options;
  std::string origin;  // scheme://host:port
  std::string prefix;  // path prefix without a trailing '/'
  // One handle, reused so that its connection is kept alive between requests; one request at
  // a time.
  std::mutex mu;
  CURL* curl = nullptr;

  Impl(ClientOptions o, std::string origin_in, std::string prefix_in)
      : options(std::move(o)), origin(std::move(origin_in)), prefix(std::move(prefix_in)) {}
  ~Impl() {
    if (curl != nullptr) Curl().easy_cleanup(curl);
  }

  // One attempt. kUnavailable when no answer came (the server cannot be reached, or the
  // connection failed midway); an HTTP error status is a Reply.
  Result<Reply> Send(const Request& r) {
    const CurlApi& api = Curl();
    if (!api.error.empty()) return Unavailable(api.error);
    if (curl == nullptr) curl = api.easy_init();
    if (curl == nullptr) return Unavailable("curl_easy_init failed");
    api.easy_reset(curl);
    const std::string url = origin + r.path;
    char error[CURL_ERROR_SIZE] = {};
    Reply reply;
    api.easy_setopt(curl, CURLOPT_URL, url.c_str());
    api.easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
    api.easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    api.easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    api.easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
    api.easy_setopt(curl, CURLOPT_USERAGENT, "cairn");
    api.easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, static_cast<long>(options.timeout_seconds));
    if (!options.ca_cert.empty()) api.easy_setopt(curl, CURLOPT_CAINFO, options.ca_cert.c_str());
    Sha256Hasher hasher;  // outlives the sink's threads
    BodySink sink;
    sink.reply = &reply;
    sink.curl = curl;
    if (r.download_sha256 != nullptr) sink.hasher = &hasher;
    if (!r.download_file.empty()) {
      sink.file = std::fopen(r.download_file.c_str(), "wb");
      if (sink.file == nullptr) {
        return InvalidArgument("cannot write " + r.download_file + ": " + std::strerror(errno));
      }
      // A file's bytes in large pieces: fewer calls per gigabyte than the default 16 KiB.
      api.easy_setopt(curl, CURLOPT_BUFFERSIZE, kFileBufferBytes);
    }
    api.easy_setopt(curl, CURLOPT_WRITEFUNCTION, WriteBody);
    api.easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
    api.easy_setopt(curl, CURLOPT_HEADERFUNCTION, AppendHeader);
    api.easy_setopt(curl, CURLOPT_HEADERDATA, &reply);
    curl_slist* headers = nullptr;
    if (!options.authorization.empty()) {
      headers = api.slist_append(headers, ("Authorization: " + options.authorization).c_str());
    }
    if (r.content_type != nullptr) {
      headers = api.slist_append(headers, (std::string("Content-Type: ") + r.content_type).c_str());
    }
    long stall = options.timeout_seconds;
    std::FILE* file = nullptr;
    UploadSource source;
    if (!r.upload_file.empty()) {
      file = std::fopen(r.upload_file.c_str(), "rb");
      source = UploadSource{file, r.cancel_upload};
      if (file == nullptr) {
        if (headers != nullptr) api.slist_free_all(headers);
        return NotFound("cannot read " + r.upload_file);
      }
      std::fseek(file, 0, SEEK_END);
      const long size = std::ftell(file);
      std::rewind(file);
      api.easy_setopt(curl, CURLOPT_UPLOAD, 1L);
      if (std::string_view(r.method) == "POST")
        api.easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "POST");
      api.easy_setopt(curl, CURLOPT_UPLOAD_BUFFERSIZE, kFileBufferBytes);
      api.easy_setopt(curl, CURLOPT_READFUNCTION, ReadFromFile);
      api.easy_setopt(curl, CURLOPT_READDATA, &source);
      if (r.cancel_upload != nullptr) {
        api.easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
        api.easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, CheckCancelled);
        api.easy_setopt(curl, CURLOPT_XFERINFODATA, &source);
      }
      api.easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(size));
      // After the last byte the server makes the blob durable before it answers, which for a
      // large file may take a while.
      stall = std::max<long>(stall, kUploadStallSeconds);
    } else {
      // Small bodies go at once, without waiting for "100 Continue".
      headers = api.slist_append(headers, "Expect:");
      if (std::string_view(r.method) == "GET") {
        api.easy_setopt(curl, CURLOPT_HTTPGET, 1L);
      } else {
        api.easy_setopt(curl, CURLOPT_POSTFIELDS, r.body.data());
        api.easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
        if (std::string_view(r.method) != "POST") {
          api.easy_setopt(curl, CURLOPT_CUSTOMREQUEST, r.method);
        }
      }
    }
    if (headers != nullptr) api.easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    // A stall limit, not a total one: a long search or a large download takes what it takes
    // while bytes keep moving.
    api.easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    api.easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, stall);
    const CURLcode rc = api.easy_perform(curl);
    if (headers != nullptr) api.slist_free_all(headers);
    if (file != nullptr) std::fclose(file);
    if (sink.file != nullptr && (!sink.Flush() || std::fclose(sink.file) != 0)) {
      sink.write_failed = true;
    }
    if (sink.write_failed) {
      return InvalidArgument("cannot write " + r.download_file + ": " + std::strerror(errno));
    }
    if (source.cancelled)
      return FailedPrecondition("the upload of " + r.upload_file + " was called off");
    if (rc != CURLE_OK) {
      return Unavailable(
          "cannot reach the tracking server at " + options.tracking_uri + " (" +
          (error[0] != '\0' ? std::string(error) : std::string(api.easy_strerror(rc))) + ")");
    }
    api.easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply.status);
    if (r.download_sha256 != nullptr) *r.download_sha256 = hasher.HexDigest();
    return reply;
  }

  // Sends a request, retrying connection failures and 5xx answers; a 4xx answer is the
  // Status of the server's MLflow error.
  Result<Reply> Exchange(const std::string& what, const Request& request) {
    std::lock_guard<std::mutex> lock(mu);
    std::string last_error;
    for (int attempt = 0; attempt <= options.retries; ++attempt) {
      if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(200 << attempt));
      Result<Reply> res = Send(request);
      if (!res.ok()) {
        if (res.status().code() != StatusCode::kUnavailable) return res.status();
        last_error = res.status().message();
        continue;
      }
      if (res->status >= 200 && res->status < 300) return res;
      json body = json::parse(res->body, nullptr, /*allow_exceptions=*/false);
      std::string message = body.is_object() ? JsonStr(body, "message") : std::string();
      if (message.empty()) message = res->body.substr(0, 300);
      StatusCode code =
          CodeOfMlflowError(body.is_object() ? JsonStr(body, "error_code") : "", res->status);
      if (res->status >= 500) {
        last_error = what + ": server answered " + std::to_string(res->status) + ": " + message;
        continue;
      }
      if (code == StatusCode::kUnauthenticated) {
        message = options.authorization.empty()
                      ? "the server needs credentials: set CAIRN_TOKEN, or run `cairn login`"
                      : "the server refused these credentials (a wrong password, or a token "
                        "that expired or was revoked)";
      }
      return Status(code, what + ": " + message);
    }
    return Unavailable(last_error);
  }

  // Exchange, with the answer parsed as JSON ({} when it is not JSON).
  Result<json> Call(const std::string& what, const Request& request) {
    CAIRN_ASSIGN_OR_RETURN(Reply reply, Exchange(what, request));
    json body = json::parse(reply.body, nullptr, /*allow_exceptions=*/false);
    return body.is_discarded() ? json::object() : body;
  }

  Result<json> Post(const std::string& endpoint, const json& body) {
    return PostApi(endpoint, body.dump());
  }

  // POSTs a JSON text to an endpoint of the MLflow API.
  Result<json> PostApi(const std::string& endpoint, std::string_view text) {
    return PostText(endpoint, prefix + "/api/2.0/mlflow/" + endpoint, text);
  }

  Result<json> PostText(const std::string& what, const std::string& path, std::string_view text) {
    Request r;
    r.method = "POST";
    r.path = path;
    r.body = text;
    r.content_type = "application/json";
    return Call(what, r);
  }

  Result<json> Get(const std::string& endpoint, const std::string& query) {
    Request r;
    r.path = prefix + "/api/2.0/mlflow/" + endpoint + "?" + query;
    return Call(endpoint, r);
  }

  // PUTs `r` (its body or its file) as the artifact at `artifact_path` of the run whose
  // artifact URI is `artifact_uri`.
  Status Upload(const std::string& artifact_uri, const std::string& artifact_path, Request r) {
    r.method = "PUT";
    CAIRN_ASSIGN_OR_RETURN(r.path, ArtifactPath(artifact_uri, artifact_path));
    r.content_type = "application/octet-stream";
    return Exchange("upload " + artifact_path, r).status();
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
  const size_t scheme = uri.starts_with("http://") ? 7 : uri.starts_with("https://") ? 8 : 0;
  if (scheme == 0) {
    return InvalidArgument("tracking URI must start with http:// or https://, got '" + uri + "'");
  }
  ClientOptions resolved = options;
  if (resolved.ca_cert.empty()) {
    const char* bundle = std::getenv("CAIRN_CA_BUNDLE");
    if (bundle != nullptr) resolved.ca_cert = bundle;
  }
  if (resolved.authorization.empty()) {
    CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> found, ResolveAuthorization(uri));
    resolved.authorization = found.value_or("");
  }
  size_t path_start = uri.find('/', scheme);
  std::string origin = uri.substr(0, path_start);
  std::string prefix = path_start == std::string::npos ? "" : uri.substr(path_start);
  while (prefix.ends_with("/")) prefix.pop_back();
  if (origin.size() <= scheme) return InvalidArgument("tracking URI has no host: '" + uri + "'");
  return std::unique_ptr<TrackingClient>(
      new TrackingClient(std::make_unique<Impl>(resolved, origin, prefix)));
}

const std::string& TrackingClient::tracking_uri() const { return impl_->options.tracking_uri; }

const std::string& TrackingClient::authorization() const { return impl_->options.authorization; }

Result<std::string> TrackingClient::CallJson(const std::string& method, const std::string& path,
                                             const std::string& body) {
  Request r;
  r.method = method.c_str();
  r.path = impl_->prefix + path;
  if (method != "GET") {
    r.body = body.empty() ? std::string_view("{}") : std::string_view(body);
    r.content_type = "application/json";
  }
  CAIRN_ASSIGN_OR_RETURN(Reply reply, impl_->Exchange(method + " " + path, r));
  return reply.body;
}

Result<std::string> TrackingClient::PutFile(const std::string& path,
                                            const std::string& local_path) {
  Request r;
  r.method = "PUT";
  r.path = impl_->prefix + path;
  r.content_type = "application/octet-stream";
  r.upload_file = local_path;
  CAIRN_ASSIGN_OR_RETURN(Reply reply, impl_->Exchange("PUT " + path, r));
  return reply.body;
}

Result<std::string> TrackingClient::PostFile(const std::string& path, const std::string& local_path,
                                             const std::atomic<bool>* cancel) {
  Request r;
  r.method = "POST";
  r.path = impl_->prefix + path;
  r.content_type = "application/octet-stream";
  r.upload_file = local_path;
  r.cancel_upload = cancel;
  CAIRN_ASSIGN_OR_RETURN(Reply reply, impl_->Exchange("POST " + path, r));
  return reply.body;
}

Status TrackingClient::GetToFile(const std::string& path, const std::string& local_path,
                                 std::string* sha256) {
  Request r;
  r.path = impl_->prefix + path;
  r.download_file = local_path;
  r.download_sha256 = sha256;
  return impl_->Exchange("GET " + path, r).status();
}

Result<std::string> TrackingClient::GetOrCreateExperiment(const std::string& name) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    Result<json> found =
        impl_->Get("experiments/get-by-name", "experiment_name=" + PercentEncode(name));
    if (found.ok()) return JsonStr((*found)["experiment"], "experiment_id");
    if (found.status().code() != StatusCode::kNotFound) return found.status();
    Result<json> created = impl_->Post("experiments/create", {{"name", name}});
    if (created.ok()) return JsonStr(*created, "experiment_id");
    // Another client created it in between: look it up again.
    if (created.status().code() != StatusCode::kAlreadyExists) return created.status();
  }
  return Unavailable("experiment '" + name + "' could neither be found nor created");
}

Result<core::Experiment> TrackingClient::GetExperiment(const std::string& experiment_id) {
  CAIRN_ASSIGN_OR_RETURN(
      json r, impl_->Get("experiments/get", "experiment_id=" + PercentEncode(experiment_id)));
  const json& e = r["experiment"];
  core::Experiment out;
  out.experiment_id = JsonStr(e, "experiment_id");
  out.name = JsonStr(e, "name");
  out.artifact_location = JsonStr(e, "artifact_location");
  core::ParseLifecycleStage(JsonStr(e, "lifecycle_stage"), &out.lifecycle_stage);
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
  page.next_page_token = JsonStr(r, "next_page_token");
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
  page.next_page_token = JsonStr(r, "next_page_token");
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
      files.push_back({JsonStr(f, "path"),
                       is_dir != f.end() && is_dir->is_boolean() && is_dir->get<bool>(),
                       JsonInt(f, "file_size")});
    }
  }
  return files;
}

Result<std::string> TrackingClient::DownloadArtifact(const std::string& artifact_uri,
                                                     const std::string& artifact_path) {
  Request r;
  CAIRN_ASSIGN_OR_RETURN(r.path, impl_->ArtifactPath(artifact_uri, artifact_path));
  CAIRN_ASSIGN_OR_RETURN(Reply reply, impl_->Exchange("download " + artifact_path, r));
  return std::move(reply.body);
}

Result<core::RunInfo> TrackingClient::CreateRun(const std::string& experiment_id,
                                                const std::string& run_name, int64_t start_time,
                                                const std::vector<core::Tag>& tags) {
  JsonWriter w;
  w.BeginObject().Key("experiment_id").String(experiment_id);
  WriteRunStart(w, run_name, start_time, tags);
  w.EndObject();
  CAIRN_ASSIGN_OR_RETURN(json r, impl_->PostApi("runs/create", w.str()));
  return DecodeRunInfo(r["run"]["info"]);
}

Result<core::RunInfo> TrackingClient::CreateRunWithId(
    const std::string& run_id, const std::string& experiment_id, const std::string& experiment_name,
    const std::string& run_name, int64_t start_time, const std::vector<core::Tag>& tags,
    bool scheduled) {
  JsonWriter w;
  w.BeginObject().Key("run_id").String(run_id);
  if (scheduled) w.Key("status").String("SCHEDULED");
  if (!experiment_id.empty()) w.Key("experiment_id").String(experiment_id);
  if (!experiment_name.empty()) w.Key("experiment_name").String(experiment_name);
  WriteRunStart(w, run_name, start_time, tags);
  w.EndObject();
  CAIRN_ASSIGN_OR_RETURN(
      json r, impl_->PostText("create run", impl_->prefix + "/api/cairn/v1/runs", w.str()));
  core::RunInfo info;
  info.run_id = JsonStr(r, "run_id");
  info.experiment_id = JsonStr(r, "experiment_id");
  info.artifact_uri = JsonStr(r, "artifact_uri");
  info.run_name = run_name;
  return info;
}

Result<core::Run> TrackingClient::GetRun(const std::string& run_id) {
  CAIRN_ASSIGN_OR_RETURN(json r, impl_->Get("runs/get", "run_id=" + PercentEncode(run_id)));
  return DecodeRun(r["run"]);
}

Result<std::vector<core::Metric>> TrackingClient::GetMetricHistory(const std::string& run_id,
                                                                   const std::string& key) {
  std::vector<core::Metric> out;
  std::string token;
  do {
    std::string query = "run_id=" + PercentEncode(run_id) + "&metric_key=" + PercentEncode(key) +
                        "&max_results=25000";
    if (!token.empty()) query += "&page_token=" + PercentEncode(token);
    CAIRN_ASSIGN_OR_RETURN(json r, impl_->Get("metrics/get-history", query));
    for (const json& m : r.value("metrics", json::array())) {
      out.push_back({key, JsonNumber(m, "value"), JsonInt(m, "timestamp"), JsonInt(m, "step")});
    }
    token = JsonStr(r, "next_page_token");
  } while (!token.empty());
  return out;
}

Result<std::vector<core::RegisteredModel>> TrackingClient::SearchRegisteredModels(
    const std::string& filter, int64_t max_results) {
  std::vector<core::RegisteredModel> out;
  std::string token;
  do {
    std::string query = "max_results=" + std::to_string(std::min<int64_t>(max_results, 1000));
    if (!filter.empty()) query += "&filter=" + PercentEncode(filter);
    if (!token.empty()) query += "&page_token=" + PercentEncode(token);
    CAIRN_ASSIGN_OR_RETURN(json r, impl_->Get("registered-models/search", query));
    for (const json& m : r.value("registered_models", json::array())) {
      out.push_back(DecodeRegisteredModel(m));
    }
    token = JsonStr(r, "next_page_token");
  } while (!token.empty() && static_cast<int64_t>(out.size()) < max_results);
  if (static_cast<int64_t>(out.size()) > max_results) out.resize(static_cast<size_t>(max_results));
  return out;
}

Result<core::RegisteredModel> TrackingClient::GetRegisteredModel(const std::string& name) {
  CAIRN_ASSIGN_OR_RETURN(json r,
                         impl_->Get("registered-models/get", "name=" + PercentEncode(name)));
  return DecodeRegisteredModel(r["registered_model"]);
}

Result<core::ModelVersion> TrackingClient::GetModelVersion(const std::string& name,
                                                           const std::string& version) {
  CAIRN_ASSIGN_OR_RETURN(
      json r, impl_->Get("model-versions/get",
                         "name=" + PercentEncode(name) + "&version=" + PercentEncode(version)));
  return DecodeModelVersion(r["model_version"]);
}

Result<core::ModelVersion> TrackingClient::GetModelVersionByAlias(const std::string& name,
                                                                  const std::string& alias) {
  CAIRN_ASSIGN_OR_RETURN(
      json r, impl_->Get("registered-models/alias",
                         "name=" + PercentEncode(name) + "&alias=" + PercentEncode(alias)));
  return DecodeModelVersion(r["model_version"]);
}

Result<std::vector<core::ModelVersion>> TrackingClient::SearchModelVersions(
    const std::string& filter, int64_t max_results) {
  std::string query = "max_results=" + std::to_string(max_results);
  if (!filter.empty()) query += "&filter=" + PercentEncode(filter);
  CAIRN_ASSIGN_OR_RETURN(json r, impl_->Get("model-versions/search", query));
  std::vector<core::ModelVersion> out;
  for (const json& v : r.value("model_versions", json::array())) {
    out.push_back(DecodeModelVersion(v));
  }
  return out;
}

Status TrackingClient::CreateRegisteredModel(const std::string& name) {
  return impl_->Post("registered-models/create", json{{"name", name}}).status();
}

Result<core::ModelVersion> TrackingClient::CreateModelVersion(const std::string& name,
                                                              const std::string& source,
                                                              const std::string& run_id) {
  CAIRN_ASSIGN_OR_RETURN(json r,
                         impl_->Post("model-versions/create",
                                     json{{"name", name}, {"source", source}, {"run_id", run_id}}));
  return DecodeModelVersion(r["model_version"]);
}

Status TrackingClient::SetModelAlias(const std::string& name, const std::string& alias,
                                     const std::string& version) {
  return impl_
      ->Post("registered-models/alias",
             json{{"name", name}, {"alias", alias}, {"version", version}})
      .status();
}

Result<std::optional<int64_t>> TrackingClient::RollbackModelAlias(const std::string& name,
                                                                  const std::string& alias) {
  CAIRN_ASSIGN_OR_RETURN(std::string body, CallJson("POST", "/api/cairn/v1/models/rollback",
                                                    json{{"name", name}, {"alias", alias}}.dump()));
  json r = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (r.is_discarded() || !r.contains("version")) return Unavailable("unreadable answer: " + body);
  if (r["version"].is_null()) return std::optional<int64_t>();
  return std::optional<int64_t>(JsonInt(r, "version"));
}

Result<std::vector<core::AliasMove>> TrackingClient::ModelAliasHistory(const std::string& name,
                                                                       const std::string& alias) {
  std::string path = "/api/cairn/v1/models/alias-history?name=" + PercentEncode(name);
  if (!alias.empty()) path += "&alias=" + PercentEncode(alias);
  CAIRN_ASSIGN_OR_RETURN(std::string body, CallJson("GET", path, ""));
  json r = json::parse(body, nullptr, /*allow_exceptions=*/false);
  std::vector<core::AliasMove> out;
  if (r.is_discarded()) return out;
  for (const json& m : r.value("moves", json::array())) {
    core::AliasMove move;
    move.id = JsonInt(m, "id");
    move.alias = JsonStr(m, "alias");
    core::ParseAliasMoveKind(JsonStr(m, "kind"), &move.kind);
    if (m.contains("version") && !m["version"].is_null()) move.version = JsonInt(m, "version");
    move.time = JsonInt(m, "time");
    move.actor = JsonStr(m, "actor");
    out.push_back(std::move(move));
  }
  return out;
}

Status TrackingClient::LogBatch(const std::string& run_id, const std::vector<core::Metric>& metrics,
                                const std::vector<core::Param>& params,
                                const std::vector<core::Tag>& tags) {
  JsonWriter w;
  w.BeginObject().Key("run_id").String(run_id).Key("metrics").BeginArray();
  for (const core::Metric& metric : metrics) core::WriteMetric(w, metric);
  w.EndArray().Key("params");
  core::WriteParams(w, params);
  w.Key("tags");
  core::WriteTags(w, tags);
  w.EndObject();
  return impl_->PostApi("runs/log-batch", w.str()).status();
}

Status TrackingClient::SetTag(const std::string& run_id, const std::string& key,
                              const std::string& value) {
  return impl_->Post("runs/set-tag", {{"run_id", run_id}, {"key", key}, {"value", value}}).status();
}

Status TrackingClient::DeleteTag(const std::string& run_id, const std::string& key) {
  return impl_->Post("runs/delete-tag", {{"run_id", run_id}, {"key", key}}).status();
}

Status TrackingClient::LogInputs(const std::string& run_id,
                                 const std::vector<core::DatasetInput>& inputs) {
  return impl_->Post("runs/log-inputs", {{"run_id", run_id}, {"datasets", InputsJson(inputs)}})
      .status();
}

Status TrackingClient::UpdateRun(const std::string& run_id, core::RunStatus status,
                                 std::optional<int64_t> end_time) {
  json body = {{"run_id", run_id}, {"status", std::string(core::RunStatusName(status))}};
  if (end_time) body["end_time"] = *end_time;
  return impl_->Post("runs/update", body).status();
}

Result<std::vector<std::string>> TrackingClient::MissingBlobs(
    const std::vector<std::string>& digests) {
  CAIRN_ASSIGN_OR_RETURN(
      json r, impl_->PostText("blobs/missing", impl_->prefix + "/api/cairn/v1/blobs/missing",
                              json({{"digests", digests}}).dump()));
  std::vector<std::string> missing;
  for (const json& d : r.value("missing", json::array())) {
    if (d.is_string()) missing.push_back(d.get<std::string>());
  }
  return missing;
}

Status TrackingClient::SendBlob(const std::string& digest, const std::string& local_path) {
  return PutFile("/api/cairn/v1/datasets/blobs/" + digest, local_path).status();
}

Result<std::vector<TrackingClient::RecordFailure>> TrackingClient::ApplyRunRecords(
    const std::vector<std::string>& records) {
  std::string body = R"({"records":[)";
  for (size_t i = 0; i < records.size(); ++i) {
    if (i > 0) body += ',';
    body += records[i];
  }
  body += "]}";
  CAIRN_ASSIGN_OR_RETURN(
      json r, impl_->PostText("run records", impl_->prefix + "/api/cairn/v1/runs/records", body));
  std::vector<RecordFailure> failures;
  for (const json& f : r.value("failures", json::array())) {
    const size_t index = f.value("index", size_t{0});
    if (index >= records.size()) return Internal("the server named a record it was not sent");
    // An error code this client does not know (the server's own trouble) is one to retry.
    failures.push_back(
        {index, Status(CodeOfMlflowError(f.value("error_code", ""), 500), f.value("message", ""))});
  }
  return failures;
}

Result<int64_t> TrackingClient::AppendRunLog(const std::string& run_id,
                                             const std::vector<core::ConsoleChunk>& chunks) {
  JsonWriter w;
  w.BeginObject().Key("chunks").BeginArray();
  for (const core::ConsoleChunk& c : chunks) core::WriteConsoleChunk(w, c);
  w.EndArray().EndObject();
  std::string path = impl_->prefix + "/api/cairn/v1/runs/" + PercentEncode(run_id) + "/log";
  // Console text is UTF-8 already (the wrapper decodes it); the writer replaces anything else
  // rather than fail the upload.
  CAIRN_ASSIGN_OR_RETURN(json r, impl_->PostText("console log upload", path, w.str()));
  return JsonInt(r, "length");
}

Result<TrackingClient::LogPage> TrackingClient::ReadRunLog(const std::string& run_id,
                                                           int64_t offset) {
  std::string path = impl_->prefix + "/api/cairn/v1/runs/" + PercentEncode(run_id) +
                     "/log?offset=" + std::to_string(offset);
  Request r;
  r.path = path;
  CAIRN_ASSIGN_OR_RETURN(Reply reply, impl_->Exchange("console log", r));
  LogPage page;
  page.text = std::move(reply.body);
  page.next_offset = std::strtoll(reply.Header("X-Cairn-Log-Next-Offset").c_str(), nullptr, 10);
  core::ParseRunStatus(reply.Header("X-Cairn-Run-Status"), &page.run_status);
  return page;
}

Status TrackingClient::UploadArtifact(const std::string& artifact_uri,
                                      const std::string& artifact_path,
                                      const std::string& content) {
  Request r;
  r.body = content;
  return impl_->Upload(artifact_uri, artifact_path, std::move(r));
}

Status TrackingClient::UploadArtifactFile(const std::string& artifact_uri,
                                          const std::string& artifact_path,
                                          const std::string& local_path) {
  Request r;
  r.upload_file = local_path;
  return impl_->Upload(artifact_uri, artifact_path, std::move(r));
}

}  // namespace cairn::client
