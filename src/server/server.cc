#include "server/server.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "blob/content_store.h"
#include "server/access_rules.h"
#include "server/cairn_api.h"
#include "server/cross_site.h"
#include "server/fields.h"
#include "server/gate.h"
#include "server/http_errors.h"
#include "server/media_types.h"
#include "server/range.h"
#include "server/routes.h"
#include "server/ui_files.h"
#include "service/access_service.h"
#include "service/artifact_service.h"
#include "service/identity_service.h"
#include "service/registry_service.h"
#include "service/tracking_service.h"
#include "store/metadata_store.h"
#include "util/clock.h"
#include "util/hash.h"
#include "util/json_writer.h"
#include "util/log.h"

#ifndef CAIRN_VERSION
#define CAIRN_VERSION "0.1.0"
#endif

namespace cairn::server {

const char* Version() { return CAIRN_VERSION; }

namespace {

constexpr std::string_view kApiPrefixes[] = {"/api/2.0/mlflow/", "/ajax-api/2.0/mlflow/"};
// The UI's upload (MLflow's plain route): the raw body of at most 10 MiB, as MLflow takes it.
constexpr std::string_view kUploadArtifactPath = "/ajax-api/2.0/mlflow/upload-artifact";
constexpr uint64_t kMaxUploadArtifactBody = 10 << 20;
// Blobs sent for datasets' versions, raw bytes: PUT datasets/blobs/DIGEST, or POST
// datasets/blobs for bytes whose digest the server computes and answers.
constexpr std::string_view kDataBlobPrefix = "/api/cairn/v1/datasets/blobs/";
constexpr std::string_view kDataBlobPath = "/api/cairn/v1/datasets/blobs";

bool IsDataBlobUpload(const HttpRequest& req) {
  return (req.method == "PUT" && req.path.starts_with(kDataBlobPrefix)) ||
         (req.method == "POST" && req.path == kDataBlobPath);
}

// Routes of MLflow 2.12's server that cairn does not serve: answered 501 naming them rather
// than 404, so that a client can tell "not here" from "mistyped" (docs/api/mlflow.md).
struct Unserved {
  const char* method;
  const char* path;
  const char* what;
};
constexpr Unserved kUnserved[] = {
    {"POST", "/ajax-api/2.0/mlflow/runs/create-promptlab-run", "MLflow's prompt lab"},
    {"GET", "/ajax-api/2.0/mlflow/gateway-proxy", "MLflow's AI gateway proxy"},
    {"POST", "/ajax-api/2.0/mlflow/gateway-proxy", "MLflow's AI gateway proxy"},
    {"GET", "/graphql", "MLflow's GraphQL endpoint"},
    {"POST", "/graphql", "MLflow's GraphQL endpoint"},
};
constexpr std::string_view kArtifactPrefixes[] = {"/api/2.0/mlflow-artifacts/",
                                                  "/ajax-api/2.0/mlflow-artifacts/"};
// Bodies of requests to anything else (the UI, /health) are never used.
constexpr uint64_t kMaxOtherBody = 64 << 10;
constexpr size_t kIoChunk = 1 << 20;

HttpResponse JsonOk(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

HttpResponse NoEndpoint(const HttpRequest& req) {
  for (const Unserved& u : kUnserved) {
    if (req.method == u.method && req.path == u.path) {
      return JsonError(501, "NOT_IMPLEMENTED",
                       "cairn does not serve " + req.method + " " + req.path + " (" + u.what + ")");
    }
  }
  return JsonError(404, "ENDPOINT_NOT_FOUND", "No endpoint " + req.method + " " + req.path);
}

HttpResponse Text(int status, std::string_view text) {
  HttpResponse r;
  r.status = status;
  r.content_type = "text/plain";
  r.body = std::string(text);
  return r;
}

std::string_view StripPrefix(std::string_view path, std::span<const std::string_view> prefixes) {
  for (std::string_view p : prefixes) {
    if (path.starts_with(p)) return path.substr(p.size());
  }
  return std::string_view();
}

bool HasPrefix(std::string_view path, std::span<const std::string_view> prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](std::string_view p) { return path.starts_with(p); });
}

bool IsWrite(std::string_view method) {
  return method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE";
}

// A header-safe quoted file name.
std::string DispositionName(std::string_view name) {
  std::string out;
  for (unsigned char c : name) {
    out.push_back(c < 0x20 || c >= 0x7f || c == '"' || c == '\\' ? '_' : static_cast<char>(c));
  }
  return out;
}

// Sets status, Content-Range and the served slice for a Range decision over `size` bytes.
RangeDecision ApplyRange(const HttpRequest& req, int64_t size, HttpResponse& res) {
  RangeDecision d = DecideRange(req.headers.Get("Range"), size);
  res.SetHeader("Accept-Ranges", "bytes");
  if (d.kind == RangeDecision::Kind::kPartial) {
    res.status = 206;
    res.SetHeader("Content-Range", d.ContentRange(size));
  } else if (d.kind == RangeDecision::Kind::kUnsatisfiable) {
    res.status = 416;
    res.SetHeader("Content-Range", d.ContentRange(size));
  }
  return d;
}

// An artifact PUT: streamed into a blob, indexed under its path once complete.
// An upload through the artifact proxy (PUT), or through the UI's upload-artifact, which
// MLflow answers with an empty body and refuses when empty.
class ArtifactUpload : public UploadSink {
 public:
  enum class Kind { kProxy, kUiUpload };
  ArtifactUpload(service::ArtifactService* artifacts, std::string path,
                 std::unique_ptr<blob::BlobWriter> writer, Gate* gate, PendingAudit audit,
                 Kind kind = Kind::kProxy)
      : artifacts_(artifacts),
        path_(std::move(path)),
        writer_(std::move(writer)),
        gate_(gate),
        audit_(std::move(audit)),
        kind_(kind) {}
  Status Write(std::string_view piece) override {
    bytes_ += piece.size();
    return writer_->Write(piece);
  }
  HttpResponse Finish() override {
    Status s = kind_ == Kind::kUiUpload && bytes_ == 0
                   ? InvalidArgument("Request must specify data.")
                   : artifacts_->CommitUpload(path_, *writer_);
    gate_->Record(std::move(audit_), s);
    if (!s.ok()) return ErrorResponse(s);
    return JsonOk(200, kind_ == Kind::kUiUpload ? "" : "{}");
  }

 private:
  service::ArtifactService* artifacts_;
  std::string path_;
  std::unique_ptr<blob::BlobWriter> writer_;
  Gate* gate_;
  PendingAudit audit_;
  Kind kind_;
  uint64_t bytes_ = 0;
};

// A blob sent for a dataset (PUT /api/cairn/v1/datasets/blobs/DIGEST): streamed into the
// content store, kept only when its bytes hash to DIGEST, and recorded as the sender's in the
// upload ledger. With no DIGEST (POST /api/cairn/v1/datasets/blobs), kept under the digest of
// whatever arrived.
class DataBlobUpload : public UploadSink {
 public:
  DataBlobUpload(service::ArtifactService* artifacts, service::DatasetService* datasets,
                 std::string username, std::string digest, std::unique_ptr<blob::BlobWriter> writer,
                 Gate* gate, PendingAudit audit)
      : artifacts_(artifacts),
        datasets_(datasets),
        username_(std::move(username)),
        digest_(std::move(digest)),
        writer_(std::move(writer)),
        gate_(gate),
        audit_(std::move(audit)) {}
  Status Write(std::string_view piece) override { return writer_->Write(piece); }
  HttpResponse Finish() override {
    // Recorded as sent before a collection can see it: the ledger keeps it.
    Result<blob::BlobInfo> info = artifacts_->CommitKept(*writer_, [&](const blob::BlobInfo& b) {
      if (!digest_.empty() && b.digest != digest_) {
        // Left for the collector: another sender may have the same bytes on their way.
        return InvalidArgument("The bytes sent hash to " + b.digest + ", not " + digest_ + ".");
      }
      return datasets_->BlobSent(username_, b.digest);
    });
    Status s = info.status();
    gate_->Record(std::move(audit_), s);
    if (!s.ok()) return ErrorResponse(s);
    JsonWriter w;
    w.BeginObject().Key("digest").String(info->digest).Key("size").Int(info->size).EndObject();
    return JsonOk(200, w.Take());
  }

 private:
  service::ArtifactService* artifacts_;
  service::DatasetService* datasets_;
  std::string username_;
  std::string digest_;
  std::unique_ptr<blob::BlobWriter> writer_;
  Gate* gate_;
  PendingAudit audit_;
};

// Runs an answer-later handler and waits for its answer (on a handler thread).
Result<std::string> WaitForAnswer(AsyncHandler handler, ApiContext& ctx, const Fields& fields) {
  std::promise<Result<std::string>> answer;
  std::future<Result<std::string>> done = answer.get_future();
  handler(ctx, fields, [&answer](Result<std::string> out) { answer.set_value(std::move(out)); });
  return done.get();
}

}  // namespace

struct Server::Impl : HttpHandler {
  ServerOptions options;
  CrossSitePolicy cross_site;
  std::unique_ptr<store::MetadataStore> store;
  std::unique_ptr<blob::ContentStore> blobs;
  std::unique_ptr<service::TrackingService> tracking;
  std::unique_ptr<service::ArtifactService> artifacts;
  std::unique_ptr<service::AccessService> access;
  std::unique_ptr<service::IdentityService> identity;
  std::unique_ptr<service::RegistryService> registry;
  std::unique_ptr<service::TaskService> tasks;
  std::unique_ptr<service::DatasetService> datasets;
  std::unique_ptr<service::RetentionService> retention;
  std::unique_ptr<Gate> gate;
  ApiContext ctx{};
  std::unordered_map<std::string, ApiHandler> routes;  // "POST runs/log-batch"
  std::unordered_map<std::string, StreamHandler> stream_routes;
  std::unordered_map<std::string, AsyncHandler> async_routes;
  UiFiles ui;  // the web UI at "/"
  std::unique_ptr<HttpServer> http;

  // Every second, ends task attempts whose agent stopped renewing its lease; a few times per
  // heartbeat timeout, marks runs whose wrapper stopped heartbeating FAILED.
  std::thread reaper;
  std::mutex reaper_mu;
  std::condition_variable reaper_cv;
  bool reaper_stop = false;

  void StartReaper() {
    const int64_t timeout_ms = int64_t{options.run_heartbeat_timeout_seconds} * 1000;
    const int64_t heartbeat_period_ms = std::clamp<int64_t>(timeout_ms / 4, 250, 30000);
    reaper = std::thread([this, timeout_ms, heartbeat_period_ms] {
      int64_t next_heartbeat_check = 0;
      std::unique_lock<std::mutex> lock(reaper_mu);
      while (!reaper_cv.wait_for(
          lock, std::chrono::milliseconds(std::min<int64_t>(heartbeat_period_ms, 1000)),
          [this] { return reaper_stop; })) {
        lock.unlock();
        Result<int> lost = tasks->ExpireLeases();
        if (!lost.ok()) {
          LogWarning("checking task leases failed: " + lost.status().ToString());
        } else if (*lost > 0) {
          LogInfo("ended " + std::to_string(*lost) + " task attempt(s): agent lost");
        }
        const int64_t now = SystemClock()->NowMillis();
        if (timeout_ms > 0 && now >= next_heartbeat_check) {
          next_heartbeat_check = now + heartbeat_period_ms;
          Result<int> failed = tracking->FailStaleRuns(timeout_ms);
          if (!failed.ok()) {
            LogWarning("checking run heartbeats failed: " + failed.status().ToString());
          } else if (*failed > 0) {
            LogInfo("marked " + std::to_string(*failed) + " run(s) FAILED: no heartbeat");
          }
        }
        lock.lock();
      }
    });
  }

  // Every --gc-interval, on a thread of its own (a collection of many blobs takes a while),
  // the blobs no artifact names and older than the grace window are removed.
  std::thread collector;

  void StartCollector() {
    if (options.gc_interval_seconds <= 0) return;
    collector = std::thread([this] {
      std::unique_lock<std::mutex> lock(reaper_mu);
      while (!reaper_cv.wait_for(lock, std::chrono::seconds(options.gc_interval_seconds),
                                 [this] { return reaper_stop; })) {
        lock.unlock();
        Result<service::StorageCollection> c = retention->Collect(
            service::kDefaultGcGraceSeconds * 1000, false, SystemClock()->NowMillis());
        if (!c.ok()) {
          LogWarning("collecting storage failed: " + c.status().ToString());
        } else {
          for (const std::string& p : c->retention.problems) LogWarning("retention: " + p);
          if (c->retention.files > 0) {
            LogInfo("retention rules removed " + std::to_string(c->retention.files) +
                    " artifact file(s)");
          }
          if (c->blobs.collected > 0) {
            LogInfo("collected " + std::to_string(c->blobs.collected) + " unreferenced blob(s), " +
                    std::to_string(c->blobs.bytes_freed) + " bytes");
          }
        }
        lock.lock();
      }
    });
  }

  void StopReaper() {
    {
      std::lock_guard<std::mutex> lock(reaper_mu);
      reaper_stop = true;
    }
    reaper_cv.notify_all();
    if (reaper.joinable()) reaper.join();
    if (collector.joinable()) collector.join();
    // Agents waiting for work are answered now, with none, so that stopping does not wait for
    // their long polls.
    if (tasks) tasks->StopWaiting();
  }

  ~Impl() override {
    StopReaper();
    // The edge stops first; then the store, whose writer answers the writes still queued (to
    // I/O threads that are stopped but not yet gone); then the edge is torn down.
    if (http) {
      http->Stop();
      http->Wait();
    }
    artifacts.reset();
    tracking.reset();
    store.reset();
    http.reset();
  }

  void InstallRoutes() {
    for (std::span<const Route> table : {MlflowRoutes(), MlflowAuthRoutes(), RegistryRoutes()}) {
      for (const Route& r : table) routes[std::string(r.method) + " " + r.path] = r.handler;
    }
    for (const StreamRoute& r : MlflowStreamRoutes()) {
      stream_routes[std::string(r.method) + " " + r.path] = r.handler;
    }
    for (const AsyncRoute& r : MlflowAsyncRoutes()) {
      async_routes[std::string(r.method) + " " + r.path] = r.handler;
    }
  }

  // The edge's checks, from the request's head alone.
  BodyPlan Plan(const HttpRequest& req) override {
    BodyPlan plan;
    if (std::optional<HttpResponse> refusal = Refusal(req)) {
      plan.reject = std::move(refusal);
      AddCors(req, *plan.reject);
      return plan;
    }
    const std::string_view path = req.path;
    if ((HasPrefix(path, kArtifactPrefixes) && req.method == "PUT") || IsDataBlobUpload(req)) {
      plan.mode = BodyPlan::Mode::kUpload;
      plan.limit = options.max_upload_bytes;
    } else if (path == kUploadArtifactPath && req.method == "POST") {
      plan.mode = BodyPlan::Mode::kUpload;
      plan.limit = kMaxUploadArtifactBody;
      plan.too_large = [](std::optional<uint64_t>) {
        return JsonError(400, "INVALID_PARAMETER_VALUE",
                         "Artifact size is too large. Max size is 10MB.");
      };
    } else if (path.starts_with(kCairnApiPrefix)) {
      plan.limit = kMaxCairnApiBody;
    } else if (HasPrefix(path, kApiPrefixes) || HasPrefix(path, kArtifactPrefixes)) {
      plan.limit = kMaxJsonBody;
      plan.inline_handler = FindAsync(req) != nullptr;
      // As MLflow answers a body over its limit: 400, with its wording for log-batch.
      const bool log_batch = path.ends_with("runs/log-batch");
      plan.too_large = [log_batch](std::optional<uint64_t> size) {
        const std::string got =
            size ? std::to_string(*size) : "over " + std::to_string(kMaxJsonBody);
        return JsonError(400, "INVALID_PARAMETER_VALUE",
                         log_batch
                             ? "Batched logging API requests must be at most " +
                                   std::to_string(kMaxJsonBody) + " bytes, got a request of size " +
                                   got + "."
                             : "Request bodies must be at most " + std::to_string(kMaxJsonBody) +
                                   " bytes, got a request of size " + got + ".");
      };
    } else {
      plan.limit = kMaxOtherBody;
      // Answered from memory: no need for a handler thread.
      plan.inline_handler = req.method == "GET" && (path == "/health" || path == "/version");
    }
    return plan;
  }

  // Why a request is refused before its body is read, if it is: a foreign Host, a preflight, a
  // cross-origin write, a JSON API write that is not JSON.
  std::optional<HttpResponse> Refusal(const HttpRequest& req) {
    const std::string_view path = req.path;
    const std::string_view host = req.headers.Get("Host");
    if (path != "/health" && path != "/version" && !HostAllowed(host, cross_site)) {
      LogWarning("refused a request with Host: " + std::string(host.substr(0, 200)));
      return Text(403, kInvalidHostMessage);
    }
    if (req.method == "OPTIONS") return Preflight(req);
    if (!IsWrite(req.method)) return std::nullopt;
    if (!OriginMayWrite(req.headers.Get("Origin"), host, cross_site)) {
      return Text(403, kCrossOriginMessage);
    }
    if (!HasPrefix(path, kApiPrefixes) && !path.starts_with(kCairnApiPrefix)) return std::nullopt;
    if (path == kUploadArtifactPath) return std::nullopt;  // a file's raw bytes
    // A PUT is preflighted by any browser; a raw POST must say it is raw bytes, which a form
    // or a simple cross-site request cannot.
    if (IsDataBlobUpload(req) && req.method == "PUT") return std::nullopt;
    const std::string_view wanted =
        IsDataBlobUpload(req) ? "application/octet-stream" : "application/json";
    const std::string* type = req.headers.Find("Content-Type");
    if (type == nullptr) {
      return JsonError(400, "INVALID_PARAMETER_VALUE",
                       "Bad Request. Content-Type header is missing.");
    }
    std::string_view media = std::string_view(*type).substr(0, type->find(';'));
    while (media.ends_with(' ')) media.remove_suffix(1);
    if (media != wanted) {
      return JsonError(400, "INVALID_PARAMETER_VALUE",
                       "Bad Request. Content-Type must be one of ['" + std::string(wanted) + "'].");
    }
    return std::nullopt;
  }

  HttpResponse Preflight(const HttpRequest& req) {
    const std::string_view origin = req.headers.Get("Origin");
    if (!CorsAllowed(origin, cross_site)) {
      if (!origin.empty()) return Text(403, kCrossOriginMessage);
      HttpResponse r = Text(204, "");
      r.SetHeader("Allow", "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS");
      return r;
    }
    HttpResponse r = Text(204, "");
    AddCors(req, r);
    r.SetHeader("Access-Control-Allow-Methods", "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS");
    r.SetHeader("Access-Control-Allow-Headers", "Content-Type, Authorization, Range");
    r.SetHeader("Access-Control-Max-Age", "600");
    return r;
  }

  void AddCors(const HttpRequest& req, HttpResponse& res) {
    const std::string_view origin = req.headers.Get("Origin");
    if (CorsAllowed(origin, cross_site)) AddCorsHeaders(origin, res);
  }

  static void AddCorsHeaders(std::string_view origin, HttpResponse& res) {
    res.SetHeader("Access-Control-Allow-Origin", std::string(origin));
    res.SetHeader("Access-Control-Expose-Headers",
                  "Content-Range, X-Cairn-Log-Offset, X-Cairn-Log-Next-Offset, "
                  "X-Cairn-Run-Status");
    res.SetHeader("Vary", "Origin");
  }

  AsyncHandler FindAsync(const HttpRequest& req) const {
    if (!HasPrefix(req.path, kApiPrefixes)) return nullptr;
    auto it =
        async_routes.find(req.method + " " + std::string(StripPrefix(req.path, kApiPrefixes)));
    return it == async_routes.end() ? nullptr : it->second;
  }

  // The logging calls: decoded here, on the I/O thread, and answered once the store has
  // committed them, with no thread waiting in between. When who is asking, or whether they may,
  // is not in memory yet, the request goes to a handler thread, which may ask the store.
  bool HandleInline(HttpRequest& req, Respond respond) override {
    AsyncHandler handler = FindAsync(req);
    if (handler == nullptr) return false;
    const AccessRule* rule =
        FindAccessRule(Api::kMlflow, req.method, StripPrefix(req.path, kApiPrefixes));
    if (rule == nullptr) return false;
    std::optional<Identified> who = gate->IdentifyCached(req);
    if (!who) return false;
    auto answer = [this, origin = std::string(req.headers.Get("Origin")),
                   respond = std::move(respond)](HttpResponse res) {
      if (CorsAllowed(origin, cross_site)) AddCorsHeaders(origin, res);
      respond(std::move(res));
    };
    if (auto* refusal = std::get_if<HttpResponse>(&*who)) {
      answer(std::move(*refusal));
      return true;
    }
    const Caller& caller = std::get<Caller>(*who);
    Result<JsonDocument> json = ParseJsonObject(req.body);
    if (!json.ok()) {
      answer(ErrorResponse(json.status()));
      return true;
    }
    Fields fields(*json);
    const CallSubject call{rule, &fields, {}, {}};
    std::optional<Status> allowed = gate->AuthorizeCached(caller, call);
    if (!allowed) return false;
    if (!allowed->ok()) {
      gate->Audit(caller, req, call, *allowed);
      answer(gate->Refusal(*allowed, req));
      return true;
    }
    ApiContext c = ContextFor(caller, req);
    handler(c, fields,
            [this, what = req.method + " " + req.path, audit = gate->Describe(caller, req, call),
             answer = std::move(answer)](Result<std::string> out) mutable {
              gate->Record(std::move(audit), out.status());
              answer(ApiAnswer(what, std::move(out)));
            });
    return true;
  }

  // The context a handler gets for a caller's request.
  ApiContext ContextFor(const Caller& caller, const HttpRequest& req) {
    ApiContext c = ctx;
    c.caller = &caller.principal;
    c.remote_address = req.remote_address;
    c.session_id = caller.session_id;
    return c;
  }

  // The same for a listing: filtered for callers who may not read everything.
  Result<ApiContext> ListingContextFor(const Caller& caller, const HttpRequest& req,
                                       const AccessRule& rule) {
    ApiContext c = ContextFor(caller, req);
    if (rule.target == Target::kSignedIn && access->enabled() && !caller.principal.ActsAsAdmin()) {
      CAIRN_ASSIGN_OR_RETURN(service::Visibility v, access->VisibilityOf(caller.principal));
      c.may_read_experiment = [v](std::string_view id) { return v.MayReadExperiment(id); };
      c.may_read_model = [v](std::string_view name) {
        return v.MayRead(core::ResourceKind::kRegisteredModel, name);
      };
      c.may_read_dataset = [v = std::move(v)](std::string_view name) {
        return v.MayRead(core::ResourceKind::kDataset, name);
      };
    }
    return c;
  }

  // Runs `serve` with the request's fields: the query of a GET, else the JSON body.
  template <typename F>
  static HttpResponse WithFields(const HttpRequest& req, F&& serve) {
    if (req.method == "GET") {
      Fields fields(&req.query);
      return serve(fields);
    }
    Result<JsonDocument> json = ParseJsonObject(req.body);
    if (!json.ok()) return ErrorResponse(json.status());
    Fields fields(*json);
    return serve(fields);
  }

  // Checks the caller may make the call; the answer to give when not (audited).
  std::optional<HttpResponse> Refused(const Caller& caller, const HttpRequest& req,
                                      const CallSubject& call) {
    Status allowed = gate->Authorize(caller, call);
    if (allowed.ok()) return std::nullopt;
    gate->Audit(caller, req, call, allowed);
    return gate->Refusal(allowed, req);
  }

  HttpResponse Handle(HttpRequest& req) override {
    HttpResponse res = Dispatch(req);
    AddCors(req, res);
    if (res.deferred) {
      const std::string origin(req.headers.Get("Origin"));
      const bool cors = CorsAllowed(origin, cross_site);
      res.deferred = [inner = std::move(res.deferred), origin, cors](Respond respond) {
        inner([respond = std::move(respond), origin, cors](HttpResponse later) {
          if (cors) AddCorsHeaders(origin, later);
          respond(std::move(later));
        });
      };
    }
    return res;
  }

  HttpResponse Dispatch(HttpRequest& req) {
    const std::string_view path = req.path;
    if (HasPrefix(path, kApiPrefixes)) return ServeApi(req);
    if (HasPrefix(path, kArtifactPrefixes)) return ServeArtifacts(req);
    if (path.starts_with(kCairnApiPrefix)) return ServeCairnApi(req);
    if (req.method == "GET" &&
        (path == "/get-artifact" || path == "/model-versions/get-artifact")) {
      return ServeFileOf(req, path.substr(1));
    }
    if (req.method == "GET" && path == "/health") return Text(200, "OK");
    if (req.method == "GET" && path == "/version") return Text(200, Version());
    if (req.method == "GET") {
      if (std::optional<UiFile> f = ui.Find(path)) return ServeUiFile(req, *f);
    }
    return NoEndpoint(req);
  }

  HttpResponse ServeUiFile(const HttpRequest& req, const UiFile& f) {
    HttpResponse res;
    res.content_type = f.content_type;
    res.SetHeader("Cache-Control", f.cache_control);
    res.SetHeader("Content-Security-Policy", std::string(UiFiles::kContentSecurityPolicy));
    RangeDecision d = ApplyRange(req, static_cast<int64_t>(f.body->size()), res);
    res.shared_body = f.body;
    res.shared_offset = static_cast<size_t>(d.first);
    res.shared_length = static_cast<size_t>(d.length);
    return res;
  }

  HttpResponse ServeApi(HttpRequest& req) {
    const std::string_view rest = StripPrefix(req.path, kApiPrefixes);
    const std::string route_key = req.method + " " + std::string(rest);
    StreamHandler stream = nullptr;
    ApiHandler handler = nullptr;
    AsyncHandler async = nullptr;
    if (auto it = stream_routes.find(route_key); it != stream_routes.end()) stream = it->second;
    if (auto it = routes.find(route_key); it != routes.end()) handler = it->second;
    if (auto it = async_routes.find(route_key); it != async_routes.end()) async = it->second;
    // Every route has a rule (access_rules_test.cc); a route without one is never served.
    const AccessRule* rule = FindAccessRule(Api::kMlflow, req.method, rest);
    if ((stream == nullptr && handler == nullptr && async == nullptr) || rule == nullptr) {
      return NoEndpoint(req);
    }
    Identified who = gate->Identify(req);
    if (auto* refusal = std::get_if<HttpResponse>(&who)) return std::move(*refusal);
    const Caller& caller = std::get<Caller>(who);
    return WithFields(req, [&](const Fields& fields) -> HttpResponse {
      const CallSubject call{rule, &fields, {}, {}};
      if (std::optional<HttpResponse> refusal = Refused(caller, req, call)) return *refusal;
      Result<ApiContext> c = ListingContextFor(caller, req, *rule);
      if (!c.ok()) return ErrorResponse(c.status());
      if (stream != nullptr) {
        Result<BodyStream> body = stream(*c, fields);
        gate->Audit(caller, req, call, body.status());
        if (!body.ok()) return ErrorResponse(body.status());
        HttpResponse res;
        res.stream = std::move(body).value();
        return res;
      }
      Result<std::string> out =
          handler != nullptr ? handler(*c, fields) : WaitForAnswer(async, *c, fields);
      gate->Audit(caller, req, call, out.status());
      return ApiAnswer(req.method + " " + req.path, std::move(out));
    });
  }

  // An MLflow handler's outcome as an answer; failures of the server's own making are logged.
  static HttpResponse ApiAnswer(std::string_view what, Result<std::string> out) {
    if (out.ok()) return JsonOk(200, std::move(out).value());
    if (out.status().code() == StatusCode::kInternal ||
        out.status().code() == StatusCode::kUnavailable) {
      LogError(std::string(what) + ": " + out.status().ToString());
    }
    return ErrorResponse(out.status());
  }

  static HttpResponse CairnAnswer(Result<CairnResponse> out) {
    if (!out.ok()) return ErrorResponse(out.status());
    HttpResponse res = JsonOk(200, std::move(out->body));
    res.content_type = out->content_type;
    for (auto& [name, value] : out->headers) res.SetHeader(name, value);
    return res;
  }

  HttpResponse ServeCairnApi(HttpRequest& req) {
    const std::string_view rest = std::string_view(req.path).substr(kCairnApiPrefix.size());
    std::string_view wildcard;
    const CairnRoute* route = FindCairnRoute(req.method, rest, &wildcard);
    const AccessRule* rule = FindAccessRule(Api::kCairn, req.method, rest);
    if (route == nullptr || rule == nullptr) return NoEndpoint(req);
    Identified who = gate->Identify(req);
    // Signing in needs no credentials, and stale ones (an ended session) do not stand in the way.
    if (std::holds_alternative<HttpResponse>(who) && rule->target == Target::kPublic) {
      Caller nobody;
      nobody.principal.scopes = {};
      who = std::move(nobody);
    }
    if (auto* refusal = std::get_if<HttpResponse>(&who)) return std::move(*refusal);
    const Caller& caller = std::get<Caller>(who);
    return WithFields(req, [&](const Fields& fields) -> HttpResponse {
      const CallSubject call{rule, &fields, wildcard, {}};
      if (std::optional<HttpResponse> refusal = Refused(caller, req, call)) return *refusal;
      Result<ApiContext> c = ListingContextFor(caller, req, *rule);
      if (!c.ok()) return ErrorResponse(c.status());
      Result<CairnResponse> out = route->handler(*c, CairnCall{wildcard, fields});
      gate->Audit(caller, req, call, out.status());
      if (out.ok() && out->deferred) {
        HttpResponse res;
        res.deferred = [later = std::move(out->deferred)](Respond respond) {
          later([respond = std::move(respond)](Result<CairnResponse> r) {
            respond(CairnAnswer(std::move(r)));
          });
        };
        return res;
      }
      return CairnAnswer(std::move(out));
    });
  }

  // The artifact path of a request under the artifact prefixes: nullopt when the request names
  // no artifact endpoint; an error for multipart uploads and for paths that are not valid.
  Result<std::optional<std::string>> ArtifactPathOf(const HttpRequest& req) {
    std::string_view rest = StripPrefix(req.path, kArtifactPrefixes);
    if (rest.starts_with("mpu/")) {
      return Unimplemented(
          "Multipart upload is not supported for the current artifact "
          "repository");
    }
    constexpr std::string_view kArtifacts = "artifacts/";
    if (!rest.starts_with(kArtifacts)) return std::optional<std::string>();
    CAIRN_ASSIGN_OR_RETURN(std::string path,
                           service::NormalizeArtifactPath(rest.substr(kArtifacts.size()), false));
    return std::optional<std::string>(std::move(path));
  }

  // Who asks for an artifact call, and whether they may; the answer when refused.
  std::variant<Caller, HttpResponse> AdmitArtifactCall(const HttpRequest& req,
                                                       const CallSubject& call) {
    Identified who = gate->Identify(req);
    if (auto* refusal = std::get_if<HttpResponse>(&who)) return std::move(*refusal);
    Caller caller = std::get<Caller>(std::move(who));
    if (std::optional<HttpResponse> refusal = Refused(caller, req, call)) return *refusal;
    return caller;
  }

  HttpResponse ServeArtifacts(const HttpRequest& req) {
    const std::string_view rest = StripPrefix(req.path, kArtifactPrefixes);
    if (rest == "artifacts" || rest == "artifacts/") {
      if (req.method != "GET") return NoEndpoint(req);
      const AccessRule* rule = FindAccessRule(Api::kArtifacts, "GET", "artifacts");
      Fields fields(&req.query);
      std::variant<Caller, HttpResponse> who = AdmitArtifactCall(req, {rule, &fields, {}, {}});
      if (auto* refusal = std::get_if<HttpResponse>(&who)) return std::move(*refusal);
      return ListProxy(req);
    }
    Result<std::optional<std::string>> path = ArtifactPathOf(req);
    if (!path.ok()) return ErrorResponse(path.status());
    if (!path->has_value()) return NoEndpoint(req);
    const AccessRule* rule = FindAccessRule(Api::kArtifacts, req.method, rest);
    if (rule == nullptr || (req.method != "GET" && req.method != "DELETE")) {
      return NoEndpoint(req);
    }
    const CallSubject call{rule, nullptr, {}, **path};
    std::variant<Caller, HttpResponse> who = AdmitArtifactCall(req, call);
    if (auto* refusal = std::get_if<HttpResponse>(&who)) return std::move(*refusal);
    if (req.method == "GET") return Download(req, **path);
    Status s = artifacts->Delete(**path);
    gate->Audit(std::get<Caller>(who), req, call, s);
    return s.ok() ? JsonOk(200, "{}") : ErrorResponse(s);
  }

  // The artifact path a plain route names: a run's file (get-artifact, upload-artifact) or a
  // model version's (model-versions/get-artifact).
  Result<std::string> PlainRouteFile(std::string_view route, const Fields& fields) {
    if (route == "model-versions/get-artifact") {
      CAIRN_ASSIGN_OR_RETURN(std::string name, fields.RequiredStr("name"));
      CAIRN_ASSIGN_OR_RETURN(std::string version, fields.RequiredStr("version"));
      CAIRN_ASSIGN_OR_RETURN(std::string file, fields.RequiredStr("path"));
      return registry->VersionFilePath(name, version, file);
    }
    std::string run_id;
    if (route == "upload-artifact") {
      CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> id, fields.Str("run_uuid"));
      if (!id || id->empty()) return InvalidArgument("Request must specify run_uuid.");
      run_id = *id;
    } else {
      CAIRN_ASSIGN_OR_RETURN(run_id, fields.RunId());
    }
    CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> file, fields.Str("path"));
    if (!file || file->empty()) return InvalidArgument("Request must specify path.");
    CAIRN_ASSIGN_OR_RETURN(core::RunInfo info, tracking->GetRunInfo(run_id));
    CAIRN_ASSIGN_OR_RETURN(std::string root, service::ProxyPathOfUri(info.artifact_uri));
    Result<std::string> rel = service::NormalizeArtifactPath(*file, /*allow_root=*/false);
    if (!rel.ok()) return InvalidArgument("Invalid path");
    return root + "/" + *rel;
  }

  // get-artifact and model-versions/get-artifact: a file, as the artifact proxy sends it.
  HttpResponse ServeFileOf(const HttpRequest& req, std::string_view route) {
    const AccessRule* rule = FindAccessRule(Api::kPlain, "GET", route);
    Fields fields(&req.query);
    std::variant<Caller, HttpResponse> who = AdmitArtifactCall(req, {rule, &fields, {}, {}});
    if (auto* refusal = std::get_if<HttpResponse>(&who)) return std::move(*refusal);
    Result<std::string> path = PlainRouteFile(route, fields);
    if (!path.ok()) return ErrorResponse(path.status());
    return Download(req, *path);
  }

  // upload-artifact: the body becomes the run's file at `path`.
  // Who sends an upload, when the gate lets it through; a refusal is audited.
  Result<Caller> AdmitUpload(const HttpRequest& req, const CallSubject& call) {
    Identified who = gate->Identify(req);
    if (std::holds_alternative<HttpResponse>(who)) return Unauthenticated("no valid credentials");
    Caller caller = std::get<Caller>(std::move(who));
    Status allowed = gate->Authorize(caller, call);
    if (!allowed.ok()) {
      gate->Audit(caller, req, call, allowed);
      return allowed;
    }
    return caller;
  }

  Result<std::unique_ptr<UploadSink>> OpenRunUpload(const HttpRequest& req) {
    const AccessRule* rule = FindAccessRule(Api::kPlain, "POST", "upload-artifact");
    Fields fields(&req.query);
    const CallSubject call{rule, &fields, {}, {}};
    CAIRN_ASSIGN_OR_RETURN(const Caller caller, AdmitUpload(req, call));
    CAIRN_ASSIGN_OR_RETURN(std::string path, PlainRouteFile("upload-artifact", fields));
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<blob::BlobWriter> writer, artifacts->NewUpload());
    return std::unique_ptr<UploadSink>(std::make_unique<ArtifactUpload>(
        artifacts.get(), std::move(path), std::move(writer), gate.get(),
        gate->Describe(caller, req, call), ArtifactUpload::Kind::kUiUpload));
  }

  // PUT datasets/blobs/DIGEST or POST datasets/blobs: a blob for a dataset's version.
  Result<std::unique_ptr<UploadSink>> OpenDataBlobUpload(const HttpRequest& req) {
    const std::string_view rest = std::string_view(req.path).substr(kCairnApiPrefix.size());
    std::string_view digest;
    const AccessRule* rule = FindAccessRule(Api::kCairn, req.method, rest, &digest);
    if (rule == nullptr) return NotFound("No endpoint " + req.method + " " + req.path);
    if (req.method == "PUT" && !IsSha256Hex(digest)) {
      return InvalidArgument("'" + std::string(digest.substr(0, 80)) +
                             "' is not a SHA-256 digest (64 lowercase hex digits)");
    }
    const CallSubject call{rule, nullptr, digest, {}};
    CAIRN_ASSIGN_OR_RETURN(const Caller caller, AdmitUpload(req, call));
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<blob::BlobWriter> writer, artifacts->NewUpload());
    return std::unique_ptr<UploadSink>(std::make_unique<DataBlobUpload>(
        artifacts.get(), datasets.get(), caller.principal.username, std::string(digest),
        std::move(writer), gate.get(), gate->Describe(caller, req, call)));
  }

  Result<std::unique_ptr<UploadSink>> OpenUpload(const HttpRequest& req) override {
    if (req.path == kUploadArtifactPath) return OpenRunUpload(req);
    if (IsDataBlobUpload(req)) return OpenDataBlobUpload(req);
    CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> path, ArtifactPathOf(req));
    const AccessRule* rule =
        FindAccessRule(Api::kArtifacts, req.method, StripPrefix(req.path, kArtifactPrefixes));
    if (!path || rule == nullptr) return NotFound("No endpoint " + req.method + " " + req.path);
    const CallSubject call{rule, nullptr, {}, *path};
    CAIRN_ASSIGN_OR_RETURN(const Caller caller, AdmitUpload(req, call));
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<blob::BlobWriter> writer, artifacts->NewUpload());
    return std::unique_ptr<UploadSink>(
        std::make_unique<ArtifactUpload>(artifacts.get(), std::move(*path), std::move(writer),
                                         gate.get(), gate->Describe(caller, req, call)));
  }

  HttpResponse ListProxy(const HttpRequest& req) {
    auto param = req.query.find("path");
    Result<std::string> path = service::NormalizeArtifactPath(
        param == req.query.end() ? std::string_view() : std::string_view(param->second),
        /*allow_root=*/true);
    if (!path.ok()) return ErrorResponse(path.status());
    Result<std::vector<store::ArtifactEntry>> entries = artifacts->List(*path);
    if (!entries.ok()) return ErrorResponse(entries.status());
    JsonWriter w;
    w.BeginObject();
    if (!entries->empty()) {
      w.Key("files").BeginArray();
      for (const store::ArtifactEntry& e : *entries) {
        w.BeginObject().Key("path").String(e.name).Key("is_dir").Bool(e.is_dir);
        if (!e.is_dir) w.Key("file_size").Int(e.size);
        w.EndObject();
      }
      w.EndArray();
    }
    w.EndObject();
    return JsonOk(200, w.Take());
  }

  HttpResponse Download(const HttpRequest& req, const std::string& path) {
    Result<service::Download> d = artifacts->Open(path);
    if (!d.ok()) return ErrorResponse(d.status());
    HttpResponse res;
    res.content_type = ArtifactContentType(d->file_name);
    res.SetHeader("Content-Disposition",
                  "attachment; filename=\"" + DispositionName(d->file_name) + "\"");
    // An artifact is the user's data, never a page of this origin: nothing in it may run.
    res.SetHeader("Content-Security-Policy",
                  "default-src 'none'; style-src 'unsafe-inline'; sandbox");
    RangeDecision range = ApplyRange(req, d->size, res);
    if (range.kind == RangeDecision::Kind::kUnsatisfiable) {
      res.content_type = "text/plain";
      return res;
    }
    std::shared_ptr<blob::BlobReader> blob = std::move(d->reader);
    res.stream_length = range.length;
    res.stream = [blob, first = range.first, length = range.length](const BodyWriter& write) {
      std::string buf(static_cast<size_t>(std::min<int64_t>(length, kIoChunk)), '\0');
      for (int64_t done = 0; done < length;) {
        const size_t want = static_cast<size_t>(std::min<int64_t>(length - done, buf.size()));
        CAIRN_ASSIGN_OR_RETURN(size_t n, blob->ReadAt(first + done, buf.data(), want));
        if (n == 0) return Internal("an artifact blob ended before its recorded size");
        if (!write(std::string_view(buf.data(), n))) return Unavailable("the client went away");
        done += static_cast<int64_t>(n);
      }
      return Status();
    };
    return res;
  }
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() = default;

bool IsLoopback(std::string_view host) {
  return host == "localhost" || host == "::1" || host.starts_with("127.");
}

Result<std::unique_ptr<Server>> Server::Open(const ServerOptions& options) {
  if (!IsLoopback(options.host) && !options.auth && !options.insecure_no_auth) {
    return FailedPrecondition(
        "refusing to listen on " + options.host +
        " without authentication: other machines "
        "could read and delete every run. Start with --auth on (and create the first admin "
        "with --init-admin NAME), or pass --insecure-no-auth on a network you trust.");
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->cross_site = {options.host, options.allowed_hosts, options.cors_origins};
  store::StoreOptions store_options;
  CAIRN_ASSIGN_OR_RETURN(impl->store,
                         store::OpenMetadataStore(options.backend_store_uri, store_options));
  CAIRN_ASSIGN_OR_RETURN(impl->blobs, blob::OpenContentStore(options.artifacts_destination));
  impl->tracking = std::make_unique<service::TrackingService>(impl->store.get(), SystemClock());
  impl->artifacts =
      std::make_unique<service::ArtifactService>(impl->store.get(), impl->blobs.get());
  service::AccessOptions access_options;
  access_options.enabled = options.auth;
  access_options.default_permission = options.default_permission;
  access_options.audit_reads = options.audit_reads;
  impl->access =
      std::make_unique<service::AccessService>(impl->store.get(), SystemClock(), access_options);
  impl->identity = std::make_unique<service::IdentityService>(impl->store.get(), impl->access.get(),
                                                              SystemClock());
  service::RegistryOptions registry_options;
  registry_options.allowed_source_schemes = options.model_source_schemes;
  impl->registry = std::make_unique<service::RegistryService>(
      impl->store.get(), impl->artifacts.get(), impl->identity.get(), SystemClock(),
      registry_options);
  impl->tasks = std::make_unique<service::TaskService>(impl->store.get(), impl->tracking.get(),
                                                       SystemClock(), impl->artifacts.get());
  impl->datasets = std::make_unique<service::DatasetService>(impl->store.get(), impl->blobs.get(),
                                                             impl->artifacts.get(),
                                                             impl->identity.get(), SystemClock());
  impl->gate = std::make_unique<Gate>(impl->access.get());
  if (!options.init_admin.empty()) {
    Result<service::UserDetails> existing = impl->identity->GetUser(options.init_admin);
    if (existing.ok()) {
      LogInfo("the account " + options.init_admin + " exists; its password is left unchanged");
    } else if (existing.status().code() == StatusCode::kNotFound) {
      CAIRN_RETURN_IF_ERROR(
          impl->identity->CreateUser(options.init_admin, options.init_admin_password, true, false)
              .status()
              .WithContext("creating the admin " + options.init_admin));
      LogInfo("created the admin account " + options.init_admin);
    } else {
      return existing.status();
    }
  }
  impl->ctx.tracking = impl->tracking.get();
  impl->ctx.artifacts = impl->artifacts.get();
  impl->ctx.access = impl->access.get();
  impl->ctx.identity = impl->identity.get();
  impl->ctx.registry = impl->registry.get();
  impl->ctx.tasks = impl->tasks.get();
  impl->ctx.datasets = impl->datasets.get();
  impl->retention = std::make_unique<service::RetentionService>(
      impl->store.get(), impl->artifacts.get(), impl->options.retention);
  impl->ctx.retention = impl->retention.get();
  impl->ctx.tls = !options.tls_cert_file.empty();
  CAIRN_ASSIGN_OR_RETURN(impl->ui, UiFiles::Load(options.ui_dir));
  impl->InstallRoutes();
  HttpServerOptions http;
  http.host = options.host;
  http.port = options.port;
  http.io_threads = options.io_threads;
  http.handler_threads = options.threads;
  http.limits = options.limits;
  http.tls_cert_file = options.tls_cert_file;
  http.tls_key_file = options.tls_key_file;
  CAIRN_ASSIGN_OR_RETURN(impl->http, HttpServer::Bind(http, impl.get()));
  if (!IsLoopback(options.host) && !options.auth) {
    LogWarning("listening on " + options.host +
               " without authentication (--insecure-no-auth): "
               "anyone who reaches this port can read and change every run");
  } else if (!IsLoopback(options.host) && options.tls_cert_file.empty()) {
    LogWarning("listening on " + options.host +
               " without TLS: passwords and tokens cross the "
               "network in the clear; serve HTTPS with --tls-cert and --tls-key");
  }
  impl->StartReaper();
  impl->StartCollector();
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

int Server::port() const { return impl_->http->port(); }

std::string Server::url() const {
  const std::string& host = impl_->options.host;
  const bool v6 = host.find(':') != std::string::npos;
  return std::string(impl_->http->tls() ? "https://" : "http://") + (v6 ? "[" : "") + host +
         (v6 ? "]" : "") + ":" + std::to_string(port());
}

std::string Server::ui_source() const { return impl_->ui.source(); }

bool Server::Serve() {
  impl_->http->Start();
  return impl_->http->Wait();
}

void Server::Stop() {
  impl_->StopReaper();
  impl_->http->Stop();
}

}  // namespace cairn::server
