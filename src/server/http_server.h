// The HTTP/1.1 edge: an event-driven server on Boost.Beast and Asio (kept out of this header).
//
// Connections are served by coroutines on one I/O thread per core; no thread is held by an
// open connection. Handlers run on a separate pool of handler threads, so a request that waits
// on the store (a long search) never delays the I/O of other connections; streamed answers run
// on a pool of their own, so slow readers of downloads cannot take the handlers' threads. Every
// limit a hostile client could push on has a bound (HttpLimits), and exceeding one is answered
// with a 4xx or 503 and an MLflow-shaped JSON error, then the connection is closed.
//
// Start() binds and begins serving on background threads; Stop() (from any thread, a signal
// watcher included) stops accepting, closes idle connections, lets requests in flight finish
// for up to HttpLimits::shutdown_grace, then stops; Wait() returns once everything is stopped.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "server/http_errors.h"
#include "server/http_message.h"
#include "util/status.h"

namespace cairn::server {

struct HttpLimits {
  size_t max_header_bytes = 16 << 10;  // request line and headers
  size_t max_headers = 100;
  std::chrono::milliseconds header_timeout{10'000};  // from a request's first byte
  std::chrono::milliseconds idle_timeout{60'000};    // between requests on a keep-alive connection
  // The longest one read or write may take before the connection is dropped: a buffered
  // request body, an in-memory answer, a 256 KiB piece of an upload or a piece of a streamed
  // answer.
  std::chrono::milliseconds io_timeout{300'000};
  size_t max_connections = 10'000;
  // Request bodies held in memory at once, over all connections (each counts from its read
  // until its answer is written); past it, 503 with Retry-After.
  uint64_t max_buffered_bytes = uint64_t{512} << 20;
  std::chrono::milliseconds shutdown_grace{30'000};
};

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0 picks a free port
  int io_threads = 0;        // 0: one per core
  int handler_threads = 32;  // requests handled at once
  int stream_threads = 16;   // streamed answers (downloads, metric histories) at once
  HttpLimits limits;
  // PEM files; both set serves HTTPS only.
  std::string tls_cert_file;
  std::string tls_key_file;
};

// How a request's body is taken, decided from its head before any of the body is read.
struct BodyPlan {
  enum class Mode { kBuffer, kUpload };
  Mode mode = Mode::kBuffer;
  uint64_t limit = 0;  // bytes; larger bodies get 413
  // kBuffer only: the request goes to HandleInline on the I/O thread instead of Handle on a
  // handler thread (for handlers that never block).
  bool inline_handler = false;
  // An answer given at once, without reading the body (a refused Host, a wrong Content-Type).
  std::optional<HttpResponse> reject;
  // The answer to a body over `limit` (its size when declared); default 413.
  std::function<HttpResponse(std::optional<uint64_t> size)> too_large;
};

class HttpHandler {
 public:
  virtual ~HttpHandler() = default;
  // On an I/O thread, for every request once its head is in: must not block.
  virtual BodyPlan Plan(const HttpRequest& head) = 0;
  // On a handler thread, with the body read (Mode::kBuffer).
  virtual HttpResponse Handle(HttpRequest& request) = 0;
  // On the I/O thread, with the body read, for requests planned inline: must not block. Either
  // answers through `respond` (exactly once, then or later, from any thread) and returns true,
  // or returns false without calling it, and the request goes to Handle on a handler thread
  // (when answering would need to wait, on a lock or the store).
  using Respond = std::function<void(HttpResponse)>;
  virtual bool HandleInline(HttpRequest& request, Respond respond) { return false; }
  // On a handler thread, before the body is read (Mode::kUpload). An error is answered as the
  // response and the body is not read.
  virtual Result<std::unique_ptr<UploadSink>> OpenUpload(const HttpRequest& head) = 0;
};

class HttpServer {
 public:
  // Binds the socket and loads the TLS key pair; nothing is served before Start().
  static Result<std::unique_ptr<HttpServer>> Bind(const HttpServerOptions& options,
                                                  HttpHandler* handler);
  ~HttpServer();

  int port() const;
  bool tls() const;
  void Start();
  void Stop();
  // Blocks until the server has stopped; true when every connection ended before the grace
  // period ran out.
  bool Wait();

  // Open connections (for tests and the shutdown log).
  size_t connections() const;

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cairn::server
