#include "server/http_server.h"

#include <sys/resource.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "server/http_connection.h"

namespace cairn::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using asio::awaitable;
using edge::ConnState;
using edge::error_code;
using edge::kDrainLimit;
using edge::kTuple;

// Before closing under a body still arriving: read and drop for at most this long.
constexpr auto kLingerTime = std::chrono::seconds(2);

}  // namespace

struct HttpServer::Impl : edge::ServerCore {
  std::vector<std::unique_ptr<asio::io_context>> ios;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::vector<std::thread> threads;
  std::unique_ptr<tcp::acceptor> acceptor;
  std::unique_ptr<asio::ssl::context> tls;
  int port = 0;
  size_t next_io = 0;

  std::atomic<size_t> open{0};
  std::thread watchdog;
  std::mutex stop_mu;
  std::condition_variable stop_cv;
  bool stop_requested = false;
  std::atomic<bool> clean{true};
  bool waited = false;

  std::mutex conns_mu;
  std::unordered_set<std::shared_ptr<ConnState>> conns;

  ~Impl() {
    if (!threads.empty() && !waited) {
      Stop();
      Wait();
    }
    // Connections cut off at the end of the grace period end here, their coroutines destroyed;
    // what refers to an io_context goes before it.
    acceptor.reset();
    work.clear();
    ios.clear();
  }

  awaitable<void> Accept() {
    for (;;) {
      asio::io_context& io = *ios[next_io++ % ios.size()];
      auto [ec, socket] = co_await acceptor->async_accept(io, kTuple);
      if (stopping) co_return;
      if (ec) {
        if (ec == asio::error::operation_aborted) co_return;
        // Out of descriptors or memory: wait a little rather than spin.
        asio::steady_timer pause(acceptor->get_executor(), std::chrono::milliseconds(50));
        co_await pause.async_wait(kTuple);
        continue;
      }
      error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      if (open.load() >= options.limits.max_connections) {
        asio::co_spawn(io, Refuse(std::move(socket)), asio::detached);
        continue;
      }
      ++open;
      asio::co_spawn(io, Session(std::move(socket)), asio::detached);
    }
  }

  // Beyond the connection limit: a 503 and the door closed (over TLS, just the door: answering
  // would take a handshake).
  awaitable<void> Refuse(tcp::socket socket) {
    beast::tcp_stream stream(std::move(socket));
    if (tls) co_return;
    stream.expires_after(std::chrono::seconds(1));
    HttpResponse r = LimitError(
        503, "The server has reached its limit of " +
                 std::to_string(options.limits.max_connections) + " open connections");
    http::response<http::string_body> out{http::status::service_unavailable, 11, r.body};
    out.set(http::field::content_type, "application/json");
    out.set(http::field::retry_after, "1");
    out.keep_alive(false);
    out.prepare_payload();
    co_await http::async_write(stream, out, kTuple);
    error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
    co_await Linger(stream, kDrainLimit);
  }

  struct OpenGuard {
    Impl* impl;
    std::shared_ptr<ConnState> state;
    ~OpenGuard() {
      {
        std::lock_guard<std::mutex> lock(impl->conns_mu);
        impl->conns.erase(state);
      }
      --impl->open;
    }
  };

  awaitable<void> Session(tcp::socket socket) {
    auto state = std::make_shared<ConnState>();
    state->ex = socket.get_executor();
    error_code peer_ec;
    const tcp::endpoint peer = socket.remote_endpoint(peer_ec);
    if (!peer_ec) state->peer = peer.address().to_string();
    {
      std::lock_guard<std::mutex> lock(conns_mu);
      conns.insert(state);
    }
    OpenGuard guard{this, state};
    if (tls) {
      beast::ssl_stream<beast::tcp_stream> stream(std::move(socket), *tls);
      state->tcp = &beast::get_lowest_layer(stream);
      state->tcp->expires_after(options.limits.header_timeout);
      auto [ec] = co_await stream.async_handshake(asio::ssl::stream_base::server, kTuple);
      if (!ec) {
        co_await edge::ServeConnection(*this, stream, state);
        state->tcp->expires_after(std::chrono::seconds(1));
        co_await stream.async_shutdown(kTuple);
      }
    } else {
      beast::tcp_stream stream(std::move(socket));
      state->tcp = &stream;
      const uint64_t unread = co_await edge::ServeConnection(*this, stream, state);
      error_code ignored;
      stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
      if (unread > 0) co_await Linger(stream, unread);
    }
    state->tcp = nullptr;
  }

  // After an answer sent before the request's body was read: read and drop what the client is
  // still sending for a moment, so that closing does not reset the connection (and lose the
  // answer) while its bytes are in flight.
  awaitable<void> Linger(beast::tcp_stream& stream, uint64_t at_most) {
    std::vector<char> scratch(64 << 10);
    uint64_t dropped = 0;
    stream.expires_after(kLingerTime);
    while (dropped < at_most) {
      auto [ec, n] = co_await stream.async_read_some(asio::buffer(scratch), kTuple);
      if (ec) break;
      dropped += n;
    }
  }

  void Stop() {
    if (stopping.exchange(true)) return;
    asio::post(ios[0]->get_executor(), [this] {
      error_code ignored;
      acceptor->close(ignored);
    });
    {
      std::lock_guard<std::mutex> lock(conns_mu);
      for (const std::shared_ptr<ConnState>& c : conns) {
        asio::post(c->ex, [c] {
          if (c->idle && c->tcp != nullptr) c->tcp->cancel();
        });
      }
    }
    {
      std::lock_guard<std::mutex> lock(stop_mu);
      stop_requested = true;
    }
    stop_cv.notify_all();
  }

  // Started with the server: once Stop() is called, waits for the connections to end (at
  // most shutdown_grace), then stops the I/O threads.
  void Watchdog() {
    {
      std::unique_lock<std::mutex> lock(stop_mu);
      stop_cv.wait(lock, [this] { return stop_requested; });
    }
    const auto deadline = std::chrono::steady_clock::now() + options.limits.shutdown_grace;
    while (open.load() > 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    clean = open.load() == 0;
    forced = true;
    for (auto& w : work) w.reset();
    for (auto& io : ios) io->stop();
  }

  bool Wait() {
    if (waited) return clean;
    for (std::thread& t : threads) t.join();
    if (watchdog.joinable()) watchdog.join();
    pool->join();
    stream_pool->join();
    waited = true;
    return clean;
  }
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpServer::~HttpServer() = default;

Result<std::unique_ptr<HttpServer>> HttpServer::Bind(const HttpServerOptions& options,
                                                     HttpHandler* handler) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->handler = handler;
  // Each connection is a descriptor: allow as many as the hard limit does.
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 &&
      files.rlim_cur < options.limits.max_connections + 64) {
    LogWarning("the descriptor limit (" + std::to_string(files.rlim_cur) +
               ") is below --max-connections; connections beyond it wait to be accepted");
  }
  int io_threads = options.io_threads > 0 ? options.io_threads
                                          : static_cast<int>(std::thread::hardware_concurrency());
  io_threads = std::max(io_threads, 1);
  for (int i = 0; i < io_threads; ++i) {
    impl->ios.push_back(std::make_unique<asio::io_context>(1));
    impl->work.push_back(asio::make_work_guard(*impl->ios.back()));
  }
  impl->pool = std::make_unique<asio::thread_pool>(std::max(options.handler_threads, 1));
  impl->stream_pool = std::make_unique<asio::thread_pool>(std::max(options.stream_threads, 1));

  if (!options.tls_cert_file.empty() || !options.tls_key_file.empty()) {
    if (options.tls_cert_file.empty() || options.tls_key_file.empty()) {
      return InvalidArgument("TLS needs both a certificate (--tls-cert) and a key (--tls-key)");
    }
    auto ctx = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
    ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                     asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                     asio::ssl::context::no_tlsv1_1 | asio::ssl::context::single_dh_use);
    error_code ec;
    ctx->use_certificate_chain_file(options.tls_cert_file, ec);
    if (ec) {
      return InvalidArgument("cannot load the TLS certificate " + options.tls_cert_file + ": " +
                             ec.message());
    }
    ctx->use_private_key_file(options.tls_key_file, asio::ssl::context::pem, ec);
    if (ec) {
      return InvalidArgument("cannot load the TLS key " + options.tls_key_file + ": " +
                             ec.message());
    }
    impl->tls = std::move(ctx);
  }

  error_code ec;
  asio::ip::address address = asio::ip::make_address(options.host, ec);
  if (ec) {
    tcp::resolver resolver(*impl->ios[0]);
    auto found = resolver.resolve(options.host, "", ec);
    if (ec || found.empty()) {
      return InvalidArgument("cannot resolve the address to listen on, '" + options.host +
                             "': " + ec.message());
    }
    address = found.begin()->endpoint().address();
  }
  const tcp::endpoint endpoint(address, static_cast<unsigned short>(options.port));
  auto acceptor = std::make_unique<tcp::acceptor>(*impl->ios[0]);
  acceptor->open(endpoint.protocol(), ec);
  if (!ec) acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor->bind(endpoint, ec);
  if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Unavailable("cannot listen on " + options.host + ":" + std::to_string(options.port) +
                       ": " + ec.message() +
                       (ec == asio::error::address_in_use ? " (is the port in use?)" : ""));
  }
  impl->port = acceptor->local_endpoint().port();
  impl->acceptor = std::move(acceptor);
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

int HttpServer::port() const { return impl_->port; }
bool HttpServer::tls() const { return impl_->tls != nullptr; }
size_t HttpServer::connections() const { return impl_->open.load(); }

void HttpServer::Start() {
  Impl* impl = impl_.get();
  asio::co_spawn(*impl->ios[0], impl->Accept(), asio::detached);
  impl->watchdog = std::thread([impl] {
    NameThisThread("cairn-watchdog");
    impl->Watchdog();
  });
  for (auto& io : impl->ios) {
    impl->threads.emplace_back([ctx = io.get()] {
      NameThisThread("cairn-io");
      ctx->run();
    });
  }
}

void HttpServer::Stop() { impl_->Stop(); }

bool HttpServer::Wait() { return impl_->Wait(); }

}  // namespace cairn::server
