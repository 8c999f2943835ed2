// Private to the HTTP edge (http_server.cc, http_connection.cc): what the server's lifecycle
// (accepting, TLS handshakes, the connection limit, shutdown) shares with the code that serves
// one connection's requests (reading heads and bodies within the limits, running handlers,
// writing answers). It includes Boost.Beast: include it nowhere else.
#pragma once

#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <memory>
#include <optional>

#include "server/http_errors.h"
#include "server/http_server.h"
#include "util/log.h"
#include "util/process.h"

namespace cairn::server::edge {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using asio::awaitable;
using asio::use_awaitable;
using error_code = boost::system::error_code;

inline constexpr auto kTuple = asio::as_tuple(use_awaitable);
// Bodies of refused requests up to this size are read and dropped, so that the connection
// stays usable and a client that reads only after sending gets its answer.
inline constexpr uint64_t kDrainLimit = 1 << 20;

struct ConnState {
  asio::any_io_executor ex;
  beast::tcp_stream* tcp = nullptr;
  bool idle = false;  // waiting for a request; touched on `ex` only
  std::string peer;   // the client's address
};

// The server's state that serving a connection uses: its options, the handler, the thread
// pools handlers and streamed answers run on, and the shutdown flags.
struct ServerCore {
  HttpServerOptions options;
  HttpHandler* handler = nullptr;
  std::unique_ptr<asio::thread_pool> pool;
  // Streamed answers run here: a slow reader holds one of these threads while its answer's
  // next piece waits to be written, never a handler thread.
  std::unique_ptr<asio::thread_pool> stream_pool;
  // Bytes of request bodies held in memory (HttpLimits::max_buffered_bytes).
  std::atomic<uint64_t> buffered{0};
  std::atomic<bool> stopping{false};
  // Set once the grace period is over: producers of streamed answers give up.
  std::atomic<bool> forced{false};

  // Runs `fn` on a handler thread and resumes the coroutine with its result on its own thread.
  template <typename F>
  auto OnPool(F& fn) -> awaitable<std::invoke_result_t<F&>> {
    using R = std::invoke_result_t<F&>;
    co_return co_await asio::async_initiate<decltype(use_awaitable), void(R)>(
        [this, &fn](auto handler) {
          asio::post(*pool, [handler = std::move(handler), &fn]() mutable {
            static thread_local bool named = (NameThisThread("cairn-handler"), true);
            (void)named;
            R r = fn();
            auto ex = asio::get_associated_executor(handler);
            asio::dispatch(ex, [handler = std::move(handler), r = std::move(r)]() mutable {
              std::move(handler)(std::move(r));
            });
          });
        },
        use_awaitable);
  }

  // Runs the handler on this thread and resumes once it has responded (perhaps from another
  // thread); nullopt when the handler declined and the request needs a handler thread.
  awaitable<std::optional<HttpResponse>> HandleInline(HttpRequest& req) {
    using Answer = std::optional<HttpResponse>;
    co_return co_await asio::async_initiate<decltype(use_awaitable), void(Answer)>(
        [this, &req](auto handler) {
          // std::function wants a copyable callable; the handler moves once.
          auto slot = std::make_shared<std::optional<decltype(handler)>>(std::move(handler));
          auto finish = [slot](Answer r) {
            auto h = std::move(**slot);
            slot->reset();
            auto ex = asio::get_associated_executor(h);
            asio::dispatch(ex, [h = std::move(h), r = std::move(r)]() mutable {
              std::move(h)(std::move(r));
            });
          };
          auto respond = [finish](HttpResponse r) { finish(Answer(std::move(r))); };
          try {
            if (!this->handler->HandleInline(req, respond)) finish(std::nullopt);
          } catch (const std::exception& e) {
            LogError(req.method + " " + req.path + ": " + e.what());
            if (slot->has_value()) respond(JsonError(500, "INTERNAL_ERROR", e.what()));
          }
        },
        use_awaitable);
  }

  // Waits, holding no thread, for a deferred answer (HttpResponse::deferred).
  awaitable<HttpResponse> AwaitDeferred(
      std::function<void(std::function<void(HttpResponse)>)> deferred) {
    co_return co_await asio::async_initiate<decltype(use_awaitable), void(HttpResponse)>(
        [&deferred](auto handler) {
          auto slot = std::make_shared<std::optional<decltype(handler)>>(std::move(handler));
          auto once = std::make_shared<std::atomic<bool>>(false);
          deferred([slot, once](HttpResponse r) {
            if (once->exchange(true)) return;
            auto h = std::move(**slot);
            slot->reset();
            auto ex = asio::get_associated_executor(h);
            asio::dispatch(ex, [h = std::move(h), r = std::move(r)]() mutable {
              std::move(h)(std::move(r));
            });
          });
        },
        use_awaitable);
  }

  HttpResponse SafeHandle(HttpRequest& req) {
    try {
      return handler->Handle(req);
    } catch (const std::exception& e) {
      LogError(req.method + " " + req.path + ": " + e.what());
      return JsonError(500, "INTERNAL_ERROR", e.what());
    }
  }
};

// Serves requests on a connection until it should close; returns how many bytes of the last
// request's body may still be arriving (the caller reads and drops them for a moment before
// closing, so that the close does not reset the connection under the answer).
awaitable<uint64_t> ServeConnection(ServerCore& core, beast::tcp_stream& stream,
                                    const std::shared_ptr<ConnState>& state);
awaitable<uint64_t> ServeConnection(ServerCore& core, beast::ssl_stream<beast::tcp_stream>& stream,
                                    const std::shared_ptr<ConnState>& state);

}  // namespace cairn::server::edge
