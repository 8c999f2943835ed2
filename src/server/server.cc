#include "server/server.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "blob/content_store.h"
#include "server/cairn_api.h"
#include "server/fields.h"
#include "server/http_errors.h"
#include "server/routes.h"
#include "server/ui_files.h"
#include "service/artifact_service.h"
#include "service/tracking_service.h"
#include "store/metadata_store.h"
#include "util/clock.h"
#include "util/json_writer.h"
#include "util/log.h"

#ifndef CAIRN_VERSION
#define CAIRN_VERSION "0.1.0"
#endif

namespace cairn::server {

const char* Version() { return CAIRN_VERSION; }

namespace {

constexpr std::string_view kApiPrefixes[] = {"/api/2.0/mlflow/", "/ajax-api/2.0/mlflow/"};
constexpr std::string_view kArtifactPrefixes[] = {"/api/2.0/mlflow-artifacts/",
                                                  "/ajax-api/2.0/mlflow-artifacts/"};
// MLflow's cap on log-batch bodies; other JSON bodies get the same generous bound.
constexpr size_t kMaxJsonBody = 1'000'000;
constexpr size_t kIoChunk = 1 << 20;

void SendBody(httplib::Response& res, int status, std::string body,
              const std::string& content_type) {
  res.status = status;
  if (body.size() < (64 << 10)) {
    res.set_content(body, content_type);
    return;
  }
  // set_content copies; a large body (a long metric history) is handed out in slices instead.
  auto shared = std::make_shared<const std::string>(std::move(body));
  res.set_content_provider(shared->size(), content_type,
                           [shared](size_t offset, size_t length, httplib::DataSink& sink) {
                             return sink.write(shared->data() + offset,
                                               std::min(length, kIoChunk));
                           });
}

void SendJson(httplib::Response& res, int status, std::string body) {
  SendBody(res, status, std::move(body), "application/json");
}

void SendError(httplib::Response& res, const Status& status) {
  HttpError e = ToHttpError(status.code());
  SendJson(res, e.http_status, ErrorBody(e.error_code, status.message()));
}

void SendNotFound(httplib::Response& res, const httplib::Request& req) {
  SendJson(res, 404,
           ErrorBody("ENDPOINT_NOT_FOUND", "No endpoint " + req.method + " " + req.path));
}

std::string_view StripPrefix(std::string_view path, std::span<const std::string_view> prefixes) {
  for (std::string_view p : prefixes) {
    if (path.starts_with(p)) return path.substr(p.size());
  }
  return std::string_view();
}

bool HasPrefix(std::string_view path, std::span<const std::string_view> prefixes) {
  for (std::string_view p : prefixes) {
    if (path.starts_with(p)) return true;
  }
  return false;
}

std::string ContentTypeFor(std::string_view name) {
  auto ends = [&](std::string_view ext) { return name.ends_with(ext); };
  if (ends(".json")) return "application/json";
  if (ends(".txt") || ends(".log") || ends(".md") || ends(".yaml") || ends(".yml") ||
      ends(".csv") || ends(".toml") || ends(".py") || name == "MLmodel") {
    return "text/plain";
  }
  if (ends(".html")) return "text/plain";  // never rendered as a page of the server's origin
  if (ends(".png")) return "image/png";
  if (ends(".jpg") || ends(".jpeg")) return "image/jpeg";
  if (ends(".gif")) return "image/gif";
  if (ends(".webp")) return "image/webp";
  // Shown in an <img> by the UI; opened directly, it is a download under a CSP that runs no
  // script (see Download).
  if (ends(".svg")) return "image/svg+xml";
  return "application/octet-stream";
}

// A header-safe quoted file name.
std::string DispositionName(std::string_view name) {
  std::string out;
  for (unsigned char c : name) {
    out.push_back(c < 0x20 || c >= 0x7f || c == '"' || c == '\\' ? '_' : static_cast<char>(c));
  }
  return out;
}

// Reads a request body of at most `limit` bytes.
Result<std::string> ReadBody(const httplib::Request& req, const httplib::ContentReader& reader,
                             size_t limit) {
  if (req.has_header("Content-Length")) {
    uint64_t declared = std::strtoull(req.get_header_value("Content-Length").c_str(), nullptr, 10);
    if (declared > limit) {
      return ResourceExhausted("Request body of " + std::to_string(declared) +
                               " bytes exceeds the limit of " + std::to_string(limit) + " bytes");
    }
  }
  std::string body;
  bool too_large = false;
  reader([&](const char* data, size_t len) {
    if (body.size() + len > limit) {
      too_large = true;
      return false;
    }
    body.append(data, len);
    return true;
  });
  if (too_large) {
    return ResourceExhausted("Request body exceeds the limit of " + std::to_string(limit) +
                             " bytes");
  }
  return body;
}

}  // namespace

struct Server::Impl {
  ServerOptions options;
  std::unique_ptr<store::MetadataStore> store;
  std::unique_ptr<blob::ContentStore> blobs;
  std::unique_ptr<service::TrackingService> tracking;
  std::unique_ptr<service::ArtifactService> artifacts;
  ApiContext ctx{};
  std::unordered_map<std::string, ApiHandler> routes;  // "POST runs/log-batch"
  std::unordered_map<std::string, StreamHandler> stream_routes;
  httplib::Server http;
  UiFiles ui;  // the web UI at "/"
  int port = 0;

  // Marks runs whose wrapper stopped heartbeating FAILED, a few times per timeout.
  std::thread reaper;
  std::mutex reaper_mu;
  std::condition_variable reaper_cv;
  bool reaper_stop = false;

  void StartReaper() {
    const int64_t timeout_ms = int64_t{options.run_heartbeat_timeout_seconds} * 1000;
    if (timeout_ms <= 0) return;
    const auto period = std::chrono::milliseconds(std::clamp<int64_t>(timeout_ms / 4, 250, 30000));
    reaper = std::thread([this, timeout_ms, period] {
      std::unique_lock<std::mutex> lock(reaper_mu);
      while (!reaper_cv.wait_for(lock, period, [this] { return reaper_stop; })) {
        lock.unlock();
        Result<int> failed = tracking->FailStaleRuns(timeout_ms);
        if (!failed.ok()) {
          LogWarning("checking run heartbeats failed: " + failed.status().ToString());
        } else if (*failed > 0) {
          LogInfo("marked " + std::to_string(*failed) + " run(s) FAILED: no heartbeat");
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
  }

  ~Impl() { StopReaper(); }

  void Install() {
    for (const Route& r : MlflowRoutes()) {
      routes[std::string(r.method) + " " + r.path] = r.handler;
    }
    for (const StreamRoute& r : MlflowStreamRoutes()) {
      stream_routes[std::string(r.method) + " " + r.path] = r.handler;
    }
    http.new_task_queue = [n = options.threads] {
      return new httplib::ThreadPool(static_cast<size_t>(n));
    };
    http.set_payload_max_length(std::numeric_limits<size_t>::max());
    http.set_keep_alive_max_count(1'000'000);
    // Idle keep-alive connections close after 2 s (gunicorn's default, which MLflow's server
    // uses); shutdown waits for them, so this also bounds how long Stop() takes.
    http.set_keep_alive_timeout(2);
    http.set_tcp_nodelay(true);
    http.set_read_timeout(300);
    http.set_write_timeout(300);
    http.set_exception_handler([](const httplib::Request&, httplib::Response& res,
                                  std::exception_ptr ep) {
      std::string what = "unexpected error";
      try {
        std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      LogError("request failed: " + what);
      SendError(res, Internal(what));
    });

    auto plain = [this](const httplib::Request& req, httplib::Response& res) {
      Dispatch(req, res, nullptr);
    };
    auto with_body = [this](const httplib::Request& req, httplib::Response& res,
                            const httplib::ContentReader& reader) { Dispatch(req, res, &reader); };
    http.Get(".*", plain);
    http.Post(".*", with_body);
    http.Put(".*", with_body);
    http.Patch(".*", with_body);
    http.Delete(".*", with_body);
  }

  void Dispatch(const httplib::Request& req, httplib::Response& res,
                const httplib::ContentReader* reader) {
    RouteRequest(req, res, reader);
    // An error may answer before the body was read (a bad artifact path, a body too large);
    // the rest of it must not be taken for the next request on this connection.
    if (reader != nullptr && res.status >= 400) res.set_header("Connection", "close");
  }

  void RouteRequest(const httplib::Request& req, httplib::Response& res,
                    const httplib::ContentReader* reader) {
    std::string_view path = req.path;
    if (HasPrefix(path, kApiPrefixes)) return ServeApi(req, res, reader);
    if (HasPrefix(path, kArtifactPrefixes)) return ServeArtifacts(req, res, reader);
    if (path.starts_with(kCairnApiPrefix)) return ServeCairnApi(req, res, reader);
    if (req.method == "GET" && path == "/health") return res.set_content("OK", "text/plain");
    if (req.method == "GET" && path == "/version") {
      return res.set_content(Version(), "text/plain");
    }
    if (req.method == "GET") {
      if (std::optional<UiFile> f = ui.Find(path)) return ServeUiFile(*f, res);
    }
    SendNotFound(res, req);
  }

  void ServeUiFile(const UiFile& f, httplib::Response& res) {
    res.status = 200;
    res.set_header("Cache-Control", f.cache_control);
    res.set_header("Content-Security-Policy", std::string(UiFiles::kContentSecurityPolicy));
    res.set_header("X-Content-Type-Options", "nosniff");
    std::shared_ptr<const std::string> body = f.body;
    res.set_content_provider(body->size(), f.content_type,
                             [body](size_t offset, size_t length, httplib::DataSink& sink) {
                               return sink.write(body->data() + offset, length);
                             });
  }

  void ServeApi(const httplib::Request& req, httplib::Response& res,
                const httplib::ContentReader* reader) {
    std::string_view rest = StripPrefix(req.path, kApiPrefixes);
    std::string route_key = req.method + " " + std::string(rest);
    if (auto st = stream_routes.find(route_key); st != stream_routes.end() && reader == nullptr) {
      return ServeStream(req, res, st->second);
    }
    auto it = routes.find(route_key);
    if (it == routes.end()) return SendNotFound(res, req);
    Result<std::string> out = std::string();
    if (reader == nullptr) {
      Fields fields(&req.params);
      out = it->second(ctx, fields);
    } else {
      Result<std::string> body = ReadBody(req, *reader, kMaxJsonBody);
      if (!body.ok()) return SendError(res, body.status());
      Result<Json> json = ParseJsonObject(*body);
      if (!json.ok()) return SendError(res, json.status());
      Fields fields(&*json, "");
      out = it->second(ctx, fields);
    }
    if (!out.ok()) {
      if (out.status().code() == StatusCode::kInternal ||
          out.status().code() == StatusCode::kUnavailable) {
        LogError(req.method + " " + req.path + ": " + out.status().ToString());
      }
      return SendError(res, out.status());
    }
    SendJson(res, 200, std::move(out).value());
  }

  void ServeCairnApi(const httplib::Request& req, httplib::Response& res,
                     const httplib::ContentReader* reader) {
    std::string body;
    if (reader != nullptr) {
      Result<std::string> read = ReadBody(req, *reader, kMaxCairnApiBody);
      if (!read.ok()) return SendError(res, read.status());
      body = std::move(read).value();
    }
    Result<CairnResponse> out =
        HandleCairnApi(ctx, req.method, std::string_view(req.path).substr(kCairnApiPrefix.size()),
                       req.params, body);
    if (!out.ok()) return SendError(res, out.status());
    for (auto& [name, value] : out->headers) res.set_header(name, value);
    SendBody(res, 200, std::move(out->body), out->content_type);
  }

  void ServeStream(const httplib::Request& req, httplib::Response& res, StreamHandler handler) {
    Fields fields(&req.params);
    Result<BodyStream> stream = handler(ctx, fields);
    if (!stream.ok()) return SendError(res, stream.status());
    res.status = 200;
    res.set_chunked_content_provider(
        "application/json",
        [body = std::move(stream).value(), path = req.path](size_t, httplib::DataSink& sink) {
          Status s = body([&](std::string_view piece) { return sink.write(piece.data(),
                                                                          piece.size()); });
          if (!s.ok()) {
            if (s.code() != StatusCode::kUnavailable) LogError(path + ": " + s.ToString());
            return false;
          }
          sink.done();
          return true;
        });
  }

  void ServeArtifacts(const httplib::Request& req, httplib::Response& res,
                      const httplib::ContentReader* reader) {
    std::string_view rest = StripPrefix(req.path, kArtifactPrefixes);
    if (rest.starts_with("mpu/")) {
      return SendError(res, Unimplemented("Multipart upload is not supported for the current "
                                          "artifact repository"));
    }
    if (rest == "artifacts" || rest == "artifacts/") {
      if (req.method != "GET") return SendNotFound(res, req);
      return ListProxy(req, res);
    }
    if (!rest.starts_with("artifacts/")) return SendNotFound(res, req);
    Result<std::string> path =
        service::NormalizeArtifactPath(rest.substr(std::string_view("artifacts/").size()), false);
    if (!path.ok()) return SendError(res, path.status());
    if (req.method == "GET") return Download(req, *path, res);
    if (req.method == "PUT") return Upload(*path, *reader, res);
    if (req.method == "DELETE") {
      Status s = artifacts->Delete(*path);
      if (!s.ok()) return SendError(res, s);
      return SendJson(res, 200, "{}");
    }
    SendNotFound(res, req);
  }

  void ListProxy(const httplib::Request& req, httplib::Response& res) {
    Result<std::string> path =
        service::NormalizeArtifactPath(req.get_param_value("path"), /*allow_root=*/true);
    if (!path.ok()) return SendError(res, path.status());
    Result<std::vector<store::ArtifactEntry>> entries = artifacts->List(*path);
    if (!entries.ok()) return SendError(res, entries.status());
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
    SendJson(res, 200, w.Take());
  }

  void Download(const httplib::Request& req, const std::string& path, httplib::Response& res) {
    Result<service::Download> d = artifacts->Open(path);
    if (!d.ok()) return SendError(res, d.status());
    // A range that runs past the end means up to the end (RFC 9110, 14.1.2); cpp-httplib
    // would answer the requested length and then run out of bytes. An empty file has no range
    // to serve and is sent whole, as the RFC allows. cpp-httplib reads the ranges after this
    // handler returns, from the request it owns.
    auto& ranges = const_cast<httplib::Request&>(req).ranges;
    if (d->size == 0) ranges.clear();
    for (auto& [first, last] : ranges) {
      if (last >= static_cast<ssize_t>(d->size)) last = d->size - 1;
    }
    res.set_header("Content-Disposition",
                   "attachment; filename=\"" + DispositionName(d->file_name) + "\"");
    res.set_header("X-Content-Type-Options", "nosniff");
    // An artifact is the user's data, never a page of this origin: nothing in it may run.
    res.set_header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox");
    std::shared_ptr<blob::BlobReader> blob = std::move(d->reader);
    // One buffer per download, reused for every piece.
    auto buf = std::make_shared<std::string>(kIoChunk, '\0');
    res.set_content_provider(
        static_cast<size_t>(d->size), ContentTypeFor(d->file_name),
        [blob, buf](size_t offset, size_t length, httplib::DataSink& sink) {
          Result<size_t> n = blob->ReadAt(static_cast<int64_t>(offset), buf->data(),
                                          std::min(length, buf->size()));
          if (!n.ok() || *n == 0) return false;
          return sink.write(buf->data(), *n);
        });
  }

  void Upload(const std::string& path, const httplib::ContentReader& reader,
              httplib::Response& res) {
    Result<std::unique_ptr<blob::BlobWriter>> writer = artifacts->NewUpload();
    if (!writer.ok()) return SendError(res, writer.status());
    Status write_status;
    bool complete = reader([&](const char* data, size_t len) {
      write_status = (*writer)->Write(std::string_view(data, len));
      return write_status.ok();
    });
    if (!write_status.ok()) return SendError(res, write_status);
    if (!complete) return SendError(res, InvalidArgument("the upload was cut short"));
    Status s = artifacts->CommitUpload(path, **writer);
    if (!s.ok()) return SendError(res, s);
    SendJson(res, 200, "{}");
  }
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() = default;

Result<std::unique_ptr<Server>> Server::Open(const ServerOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  store::StoreOptions store_options;
  CAIRN_ASSIGN_OR_RETURN(impl->store,
                         store::OpenMetadataStore(options.backend_store_uri, store_options));
  CAIRN_ASSIGN_OR_RETURN(impl->blobs, blob::OpenContentStore(options.artifacts_destination));
  impl->tracking = std::make_unique<service::TrackingService>(impl->store.get(), SystemClock());
  impl->artifacts =
      std::make_unique<service::ArtifactService>(impl->store.get(), impl->blobs.get());
  impl->ctx = {impl->tracking.get(), impl->artifacts.get()};
  CAIRN_ASSIGN_OR_RETURN(
      impl->ui, UiFiles::Load(options.ui_dir.empty() ? UiFiles::DefaultDir() : options.ui_dir));
  impl->Install();
  if (options.port == 0) {
    impl->port = impl->http.bind_to_any_port(options.host);
  } else {
    impl->port = impl->http.bind_to_port(options.host, options.port) ? options.port : -1;
  }
  if (impl->port <= 0) {
    return Unavailable("cannot listen on " + options.host + ":" + std::to_string(options.port) +
                       " (is the port in use?)");
  }
  impl->StartReaper();
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

int Server::port() const { return impl_->port; }

std::string Server::url() const {
  return "http://" + impl_->options.host + ":" + std::to_string(impl_->port);
}

std::string Server::ui_dir() const { return impl_->ui.built() ? impl_->ui.dir() : ""; }

void Server::Serve() { impl_->http.listen_after_bind(); }

void Server::Stop() {
  impl_->StopReaper();
  impl_->http.stop();
}

}  // namespace cairn::server
