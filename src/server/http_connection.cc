#include "server/http_connection.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <variant>
#include <vector>

namespace cairn::server::edge {
namespace {

// Room in a connection's read buffer beyond the header limit: one read's worth. While a body of
// declared length is read (nothing can pile up in the buffer then), it may use more, which
// saves reads on large bodies; it is given back afterwards.
constexpr size_t kReadSlack = 64 << 10;
constexpr size_t kBodyReadBuffer = 1 << 20;
constexpr size_t kReadChunk = 4096;
constexpr size_t kUploadChunk = 256 << 10;
// The largest read of a body of declared length.
constexpr size_t kSizedBodyChunk = 1 << 20;
// Pieces of a streamed answer waiting to be written: bounds a stream's memory.
constexpr size_t kMaxQueuedPieces = 1;
// Uploads refused before their body: read and dropped up to this size (see kDrainLimit).
constexpr uint64_t kUploadDrainLimit = 64 << 20;
// Before closing under a body still arriving: drop at most this much.
constexpr uint64_t kLingerBytes = 8 << 20;

std::string Seconds(std::chrono::milliseconds ms) {
  char text[32];
  if (ms.count() % 1000 == 0) {
    std::snprintf(text, sizeof(text), "%lld", static_cast<long long>(ms.count() / 1000));
  } else {
    std::snprintf(text, sizeof(text), "%.1f", static_cast<double>(ms.count()) / 1000);
  }
  return std::string(text) + (ms.count() == 1000 ? " second" : " seconds");
}

// Pieces of a streamed answer passed from the handler thread that makes them to the connection
// that writes them. The producer blocks while the queue is full; the consumer waits on a timer
// that the producer cancels to wake it.
struct Pipe {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::string> pieces;
  // Buffers of pieces already sent, reused: a large answer then touches the same few pages
  // rather than fresh memory for every piece.
  std::vector<std::string> spare;
  bool done = false;
  Status final_status;
  bool consumer_gone = false;
  asio::any_io_executor ex;
  asio::steady_timer* timer = nullptr;  // the consumer's; null once it has gone

  // Producer side. False when the consumer has gone or the server is being torn down.
  bool Push(std::string_view piece, const std::atomic<bool>& forced,
            const std::shared_ptr<Pipe>& self) {
    {
      std::unique_lock<std::mutex> lock(mu);
      while (pieces.size() >= kMaxQueuedPieces && !consumer_gone && !forced) {
        cv.wait_for(lock, std::chrono::milliseconds(100));
      }
      if (consumer_gone || forced) return false;
      if (spare.empty()) {
        pieces.emplace_back(piece);
      } else {
        pieces.push_back(std::move(spare.back()));
        spare.pop_back();
        pieces.back().assign(piece);
      }
    }
    Wake(self);
    return true;
  }
  void Finish(Status status, const std::atomic<bool>& forced, const std::shared_ptr<Pipe>& self) {
    {
      std::lock_guard<std::mutex> lock(mu);
      done = true;
      final_status = std::move(status);
      if (consumer_gone || forced) return;
    }
    Wake(self);
  }
  void Wake(const std::shared_ptr<Pipe>& self) {
    asio::post(ex, [self] {
      std::lock_guard<std::mutex> lock(self->mu);
      if (self->timer != nullptr) self->timer->cancel();
    });
  }
  // Consumer side.
  void Recycle(std::string piece) {
    std::lock_guard<std::mutex> lock(mu);
    if (spare.size() <= kMaxQueuedPieces) spare.push_back(std::move(piece));
  }
  void Gone() {
    {
      std::lock_guard<std::mutex> lock(mu);
      consumer_gone = true;
      timer = nullptr;
    }
    cv.notify_all();
  }
};

// A large upload's sink, fed on a thread of its own: the connection's thread reads the next
// pieces while this one hashes and writes the last ones. Pieces wait in a few reused buffers;
// the reader blocks while they are all full, as it would on a write. A write that fails is
// reported on the next Write or by Finish, and the pieces after it are dropped.
class BackgroundSink : public UploadSink {
 public:
  explicit BackgroundSink(std::unique_ptr<UploadSink> inner)
      : inner_(std::move(inner)), worker_([this] { Run(); }) {}
  ~BackgroundSink() override { Stop(); }

  Status Write(std::string_view piece) override {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return full_.size() < kBuffers || !failed_.ok(); });
    if (!failed_.ok()) return failed_;
    std::string buffer;
    if (!spare_.empty()) {
      buffer = std::move(spare_.back());
      spare_.pop_back();
    }
    buffer.assign(piece);
    full_.push_back(std::move(buffer));
    changed_.notify_all();
    return Status::Ok();
  }

  HttpResponse Finish() override {
    Stop();
    if (!failed_.ok()) return ErrorResponse(failed_);
    return inner_->Finish();
  }

 private:
  static constexpr size_t kBuffers = 8;

  void Run() {
    NameThisThread("cairn-upload");
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      changed_.wait(lock, [&] { return !full_.empty() || closing_; });
      if (full_.empty()) return;
      std::string buffer = std::move(full_.front());
      full_.pop_front();
      lock.unlock();
      Status s = failed_.ok() ? inner_->Write(buffer) : Status::Ok();
      lock.lock();
      if (!s.ok() && failed_.ok()) failed_ = std::move(s);
      spare_.push_back(std::move(buffer));
      changed_.notify_all();
    }
  }

  // Lets the worker write what is queued, then ends it.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closing_) return;
      closing_ = true;
    }
    changed_.notify_all();
    worker_.join();
  }

  std::unique_ptr<UploadSink> inner_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<std::string> full_;
  std::vector<std::string> spare_;
  Status failed_;
  bool closing_ = false;
  std::thread worker_;  // last: it starts once the rest is ready
};

// Uploads of at least this many bytes are written on a thread of their own (BackgroundSink).
constexpr uint64_t kBackgroundUploadBytes = 8 << 20;

// One connection's requests, served in turn: the head read within its deadline and limits,
// checked, the body buffered or streamed into an upload as the route's plan says, the handler
// run, the answer written.
class Connection {
 public:
  explicit Connection(ServerCore& core) : core_(core) {}

  template <class Stream>
  awaitable<void> WriteResponse(Stream& stream, HttpResponse& res, bool head_only,
                                bool keep_alive, unsigned version, bool* ok) {
    beast::get_lowest_layer(stream).expires_after(core_.options.limits.io_timeout);
    res.SetHeader("X-Content-Type-Options", "nosniff");
    if (res.stream) {
      co_await WriteStreamed(stream, res, head_only, keep_alive, version, ok);
    } else {
      co_await WriteBuffered(stream, res, head_only, keep_alive, ok);
    }
  }

  // An answer whose body is in memory, in one write.
  template <class Stream>
  awaitable<void> WriteBuffered(Stream& stream, HttpResponse& res, bool head_only,
                                bool keep_alive, bool* ok) {
    std::string_view body =
        res.shared_body != nullptr
            ? std::string_view(*res.shared_body).substr(res.shared_offset, res.shared_length)
            : std::string_view(res.body);
    http::response<http::span_body<const char>> out;
    out.version(11);
    out.result(static_cast<unsigned>(res.status));
    if (!res.content_type.empty()) out.set(http::field::content_type, res.content_type);
    for (const auto& [name, value] : res.headers) out.insert(name, value);
    out.keep_alive(keep_alive);
    out.content_length(body.size());
    error_code ec;
    if (head_only) {
      http::response_serializer<http::span_body<const char>> sr(out);
      std::tie(ec, std::ignore) = co_await http::async_write_header(stream, sr, kTuple);
    } else {
      out.body() = beast::span<const char>(body.data(), body.size());
      std::tie(ec, std::ignore) = co_await http::async_write(stream, out, kTuple);
    }
    *ok = !ec;
  }

  // An answer the handler produces piece by piece on the stream pool, written as the pieces
  // come: chunked, of a declared length, or (HTTP/1.0) until the connection closes.
  template <class Stream>
  awaitable<void> WriteStreamed(Stream& stream, HttpResponse& res, bool head_only,
                                bool keep_alive, unsigned version, bool* ok) {
    auto& tcp = beast::get_lowest_layer(stream);
    http::response<http::empty_body> out;
    out.version(11);
    out.result(static_cast<unsigned>(res.status));
    if (!res.content_type.empty()) out.set(http::field::content_type, res.content_type);
    for (const auto& [name, value] : res.headers) out.insert(name, value);
    // HTTP/1.0 knows no chunked answers: the end of the connection ends the body.
    const bool chunked = res.stream_length < 0 && version >= 11;
    const bool until_close = res.stream_length < 0 && !chunked;
    out.keep_alive(keep_alive && !until_close);
    if (chunked) {
      out.chunked(true);
    } else if (!until_close) {
      out.content_length(static_cast<uint64_t>(res.stream_length));
    }
    http::response_serializer<http::empty_body> sr(out);
    auto [ec, n] = co_await http::async_write_header(stream, sr, kTuple);
    if (ec) {
      *ok = false;
      co_return;
    }
    if (head_only) {
      *ok = true;
      co_return;
    }
    asio::steady_timer timer(co_await asio::this_coro::executor,
                             asio::steady_timer::time_point::max());
    auto pipe = std::make_shared<Pipe>();
    pipe->ex = timer.get_executor();
    pipe->timer = &timer;
    struct GoneGuard {
      Pipe* p;
      ~GoneGuard() { p->Gone(); }
    } gone{pipe.get()};
    asio::post(*core_.stream_pool, [this, pipe, body = std::move(res.stream)] {
      static thread_local bool named = (NameThisThread("cairn-stream"), true);
      (void)named;
      Status s;
      try {
        s = body([&](std::string_view piece) {
          return piece.empty() || pipe->Push(piece, core_.forced, pipe);
        });
      } catch (const std::exception& e) {
        s = Internal(e.what());
      }
      pipe->Finish(std::move(s), core_.forced, pipe);
    });
    int64_t sent = 0;
    Status final_status;
    for (;;) {
      std::string piece;
      bool have = false, done = false;
      {
        std::lock_guard<std::mutex> lock(pipe->mu);
        if (!pipe->pieces.empty()) {
          piece = std::move(pipe->pieces.front());
          pipe->pieces.pop_front();
          have = true;
        } else if (pipe->done) {
          done = true;
          final_status = pipe->final_status;
        }
      }
      if (done) break;
      if (!have) {
        timer.expires_at(asio::steady_timer::time_point::max());
        co_await timer.async_wait(kTuple);
        continue;
      }
      pipe->cv.notify_all();
      if (!chunked && !until_close &&
          sent + static_cast<int64_t>(piece.size()) > res.stream_length) {
        LogError("a streamed answer ran past its declared length; cut short");
        *ok = false;
        co_return;
      }
      tcp.expires_after(core_.options.limits.io_timeout);
      if (chunked) {
        std::tie(ec, n) =
            co_await asio::async_write(stream, http::make_chunk(asio::buffer(piece)), kTuple);
      } else {
        std::tie(ec, n) = co_await asio::async_write(stream, asio::buffer(piece), kTuple);
      }
      if (ec) {
        *ok = false;
        co_return;
      }
      sent += static_cast<int64_t>(piece.size());
      pipe->Recycle(std::move(piece));
    }
    if (!final_status.ok()) {
      if (final_status.code() != StatusCode::kUnavailable) LogError(final_status.ToString());
      *ok = false;  // the answer is cut short: only closing tells the client
      co_return;
    }
    if (chunked) {
      std::tie(ec, n) = co_await asio::async_write(stream, http::make_chunk_last(), kTuple);
      *ok = !ec;
    } else {
      *ok = !until_close && sent == res.stream_length;
    }
  }

  template <class Stream>
  awaitable<void> WriteContinue(Stream& stream, const HttpRequest& req, bool expects_continue) {
    if (!expects_continue) co_return;
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    beast::get_lowest_layer(stream).expires_after(core_.options.limits.io_timeout);
    co_await asio::async_write(stream, asio::buffer(kContinue), kTuple);
  }

  // Lets a connection's read buffer grow to kBodyReadBuffer for the life of this object (when
  // `wide`), then shrinks it back to `normal`.
  struct WideBuffer {
    beast::flat_buffer& buffer;
    bool wide;
    size_t normal;
    WideBuffer(beast::flat_buffer& b, bool w, size_t n) : buffer(b), wide(w), normal(n) {
      if (wide) buffer.max_size(kBodyReadBuffer);
    }
    ~WideBuffer() {
      if (!wide) return;
      buffer.max_size(std::max(normal, buffer.size()));
      buffer.shrink_to_fit();
    }
  };

  // Holds part of the budget for request bodies held in memory (HttpLimits::max_buffered_bytes)
  // from the moment a body is read until its answer has been written.
  struct BodyReservation {
    std::atomic<uint64_t>* total = nullptr;
    uint64_t bytes = 0;
    BodyReservation() = default;
    BodyReservation(const BodyReservation&) = delete;
    BodyReservation& operator=(const BodyReservation&) = delete;
    ~BodyReservation() { Release(); }
    void Release() {
      if (total != nullptr) total->fetch_sub(bytes);
      total = nullptr;
    }
  };

  bool Reserve(uint64_t bytes, BodyReservation* r) {
    uint64_t now = core_.buffered.load();
    do {
      if (now + bytes > core_.options.limits.max_buffered_bytes) return false;
    } while (!core_.buffered.compare_exchange_weak(now, now + bytes));
    r->total = &core_.buffered;
    r->bytes = bytes;
    return true;
  }

  using HeadParser = http::request_parser<http::empty_body>;

  // Why a request's head did not come: the connection ended or went idle too long (close it
  // quietly), or the head broke a limit or HTTP's grammar (answer `refusal`, then close).
  struct HeadRead {
    bool closed = false;
    std::optional<HttpResponse> refusal;
  };

  // Waits for a request to start (idle timeout), then reads its head within the header
  // deadline and the header size limit.
  template <class Stream>
  awaitable<HeadRead> ReadHead(Stream& stream, beast::flat_buffer& buffer, HeadParser& parser,
                               const std::shared_ptr<ConnState>& state) {
    const HttpLimits& limits = core_.options.limits;
    auto& tcp = beast::get_lowest_layer(stream);
    if (buffer.size() == 0) {
      if (core_.stopping) co_return HeadRead{true, {}};
      state->idle = true;
      tcp.expires_after(limits.idle_timeout);
      auto [ec, n] = co_await stream.async_read_some(buffer.prepare(kReadChunk), kTuple);
      state->idle = false;
      if (ec) co_return HeadRead{true, {}};
      buffer.commit(n);
    }
    // The header deadline cancels the read rather than closing the socket (as the stream's
    // own timeout would), so that the client still gets its 408. Its handler may run after
    // this request (or the connection) is over, so it shares only what outlives both.
    struct Deadline {
      bool over = false;
      bool fired = false;
    };
    auto header_deadline = std::make_shared<Deadline>();
    tcp.expires_never();
    asio::steady_timer deadline(co_await asio::this_coro::executor, limits.header_timeout);
    deadline.async_wait([header_deadline, state](error_code ec) {
      if (ec || header_deadline->over) return;
      header_deadline->fired = true;
      error_code ignored;
      if (state->tcp != nullptr) state->tcp->socket().cancel(ignored);
    });
    parser.header_limit(static_cast<uint32_t>(limits.max_header_bytes));
    parser.body_limit(boost::none);  // each route's own limit is applied later
    auto [ec, n] = co_await http::async_read_header(stream, buffer, parser, kTuple);
    header_deadline->over = true;
    deadline.cancel();
    if (!ec) co_return HeadRead{};
    if (header_deadline->fired) {
      co_return HeadRead{false, LimitError(408, "The request's headers did not arrive within " +
                                                    Seconds(limits.header_timeout))};
    }
    if (ec == http::error::end_of_stream || ec == asio::error::eof ||
        ec == asio::error::connection_reset || ec == asio::error::operation_aborted) {
      co_return HeadRead{true, {}};
    }
    if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
      co_return HeadRead{false, LimitError(431, "The request line and headers exceed the limit of " +
                                                    std::to_string(limits.max_header_bytes) +
                                                    " bytes")};
    }
    co_return HeadRead{false, LimitError(400, "Malformed HTTP request: " + ec.message())};
  }

  // The checks a head must pass before anything routes it; on success, the request it starts.
  std::variant<HttpRequest, HttpResponse> CheckHead(const HeadParser& parser) const {
    const auto& head = parser.get();
    size_t field_count = 0;
    for (auto it = head.begin(); it != head.end(); ++it) ++field_count;
    if (field_count > core_.options.limits.max_headers) {
      return LimitError(431, "The request has " + std::to_string(field_count) +
                                 " header fields; the limit is " +
                                 std::to_string(core_.options.limits.max_headers));
    }
    // Framing that proxies and servers could read differently (request smuggling): a
    // Transfer-Encoding that does not end in chunked, or one beside a Content-Length.
    if (head.count(http::field::transfer_encoding) > 0 &&
        (!parser.chunked() || head.count(http::field::content_length) > 0)) {
      return LimitError(400, "Malformed HTTP request: a Transfer-Encoding other than chunked, "
                             "or beside a Content-Length");
    }
    if (head.version() >= 11 && head.count(http::field::host) == 0) {
      return LimitError(400, "Malformed HTTP request: HTTP/1.1 needs a Host header");
    }
    HttpRequest req;
    req.method = std::string(head.method_string());
    req.target = std::string(head.target());
    if (!req.target.starts_with('/')) {
      return LimitError(400, "Malformed HTTP request: the target must be a path");
    }
    const size_t question = req.target.find('?');
    req.path = PercentDecode(std::string_view(req.target).substr(0, question), false);
    if (question != std::string::npos) {
      ParseQuery(std::string_view(req.target).substr(question + 1), &req.query);
    }
    for (const auto& field : head) {
      req.headers.Add(std::string(field.name_string()), std::string(field.value()));
    }
    return req;
  }

  // What one request came to: its answer, whether its body was read to the end, and (for a
  // connection that must close at once, before the answer) the bytes still to drop.
  struct Exchange {
    HttpResponse res;
    bool body_done = false;
    std::optional<uint64_t> abort;
  };

  // Reads a body the plan buffers (within its limit and the server's memory budget) and runs
  // the handler on it.
  template <class Stream>
  awaitable<Exchange> BufferAndHandle(Stream& stream, beast::flat_buffer& buffer,
                                      HeadParser& head_parser, HttpRequest& req,
                                      const BodyPlan& plan, bool expects_continue,
                                      boost::optional<uint64_t> declared,
                                      BodyReservation& reservation) {
    Exchange x;
    x.body_done = head_parser.is_done();
    if (!x.body_done && !Reserve(declared ? *declared : plan.limit, &reservation)) {
      x.res = LimitError(503, "The server holds as many request bodies in memory as it may; "
                              "try again in a moment");
      x.res.SetHeader("Retry-After", "1");
      co_return x;
    }
    http::request_parser<http::string_body> parser(std::move(head_parser));
    parser.body_limit(plan.limit);
    if (!x.body_done) {
      co_await WriteContinue(stream, req, expects_continue);
      beast::get_lowest_layer(stream).expires_after(core_.options.limits.io_timeout);
      WideBuffer wide(buffer, !parser.chunked(), core_.options.limits.max_header_bytes + kReadSlack);
      auto [ec, n] = co_await http::async_read(stream, buffer, parser, kTuple);
      if (ec == http::error::body_limit) {
        x.res = TooLarge(plan, std::nullopt);
        x.res.close = true;
        co_return x;
      }
      if (ec == http::error::buffer_overflow) {
        x.res = LimitError(400, "Malformed HTTP request: a chunk line or trailer exceeds the "
                                "limit");
        x.abort = kLingerBytes;
        co_return x;
      }
      if (ec) {
        x.abort = 0;  // the client went away, stalled or sent a malformed body
        co_return x;
      }
      x.body_done = true;
    }
    req.body = std::move(parser.get().body());
    std::optional<HttpResponse> answered;
    if (plan.inline_handler) answered = co_await core_.HandleInline(req);
    if (answered) {
      x.res = std::move(*answered);
    } else {
      auto handle = [&] { return core_.SafeHandle(req); };
      x.res = co_await core_.OnPool(handle);
      if (x.res.deferred) x.res = co_await core_.AwaitDeferred(std::move(x.res.deferred));
    }
    co_return x;
  }

  // Streams an upload into the sink the handler opens for it, then finishes it.
  template <class Stream>
  awaitable<Exchange> UploadAndHandle(Stream& stream, beast::flat_buffer& buffer,
                                      HeadParser& head_parser, HttpRequest& req,
                                      const BodyPlan& plan, bool expects_continue) {
    Exchange x;
    x.body_done = head_parser.is_done();
    auto open_upload = [&]() -> Result<std::unique_ptr<UploadSink>> {
      try {
        return core_.handler->OpenUpload(req);
      } catch (const std::exception& e) {
        return Internal(e.what());
      }
    };
    Result<std::unique_ptr<UploadSink>> sink = co_await core_.OnPool(open_upload);
    const boost::optional<uint64_t> declared = head_parser.content_length();
    if (sink.ok() && declared && *declared >= kBackgroundUploadBytes) {
      *sink = std::make_unique<BackgroundSink>(std::move(*sink));
    }
    if (!sink.ok()) {
      x.res = ErrorResponse(sink.status());
      co_await DrainIfSmall(stream, buffer, head_parser, expects_continue, kUploadDrainLimit,
                            &x.body_done);
      co_return x;
    }
    co_await UploadBody(stream, buffer, head_parser, req, plan, expects_continue, **sink, &x.res,
                        &x.body_done);
    if (x.body_done) {
      auto finish = [&] {
        try {
          return (*sink)->Finish();
        } catch (const std::exception& e) {
          return JsonError(500, "INTERNAL_ERROR", e.what());
        }
      };
      x.res = co_await core_.OnPool(finish);
    }
    sink->reset();  // an unfinished upload is discarded here
    co_return x;
  }

  static HttpResponse TooLarge(const BodyPlan& plan, std::optional<uint64_t> size) {
    if (plan.too_large) return plan.too_large(size);
    return LimitError(413, (size ? "Request body of " + std::to_string(*size) + " bytes"
                                 : std::string("Request body")) +
                               " exceeds the limit of " + std::to_string(plan.limit) + " bytes");
  }

  // A refused request's body is read and dropped when it is small and on its way (no
  // "Expect: 100-continue"), so that a client that reads answers only after sending (most do)
  // gets this one, on a connection that stays usable.
  template <class Stream>
  awaitable<void> DrainIfSmall(Stream& stream, beast::flat_buffer& buffer, HeadParser& parser,
                               bool expects_continue, uint64_t limit, bool* body_done) {
    const boost::optional<uint64_t> declared = parser.content_length();
    if (!*body_done && declared && *declared <= limit && !expects_continue) {
      *body_done = co_await Drain(stream, buffer, parser, limit);
    }
  }

  // Answers a request refused before its body and tells the caller to close.
  template <class Stream>
  awaitable<uint64_t> Refuse(Stream& stream, HttpResponse res) {
    bool ok = true;
    co_await WriteResponse(stream, res, false, false, 11, &ok);
    co_return kLingerBytes;
  }

  // Serves requests until the connection should close; returns how many bytes of the last
  // request's body may still be arriving (the caller reads and drops them for a moment before
  // closing, so that the close does not reset the connection under the answer).
  template <class Stream>
  awaitable<uint64_t> ServeConnection(Stream& stream, const std::shared_ptr<ConnState>& state) {
    // Bounded: the parser keeps a header line, a chunk-size line (with its extensions) or a
    // trailer in the buffer until its end arrives, and none of them may grow without limit.
    beast::flat_buffer buffer(core_.options.limits.max_header_bytes + kReadSlack);
    for (;;) {
      HeadParser head_parser;
      HeadRead head = co_await ReadHead(stream, buffer, head_parser, state);
      if (head.closed) co_return 0;
      if (head.refusal) co_return co_await Refuse(stream, std::move(*head.refusal));
      std::variant<HttpRequest, HttpResponse> checked = CheckHead(head_parser);
      if (auto* refusal = std::get_if<HttpResponse>(&checked)) {
        co_return co_await Refuse(stream, std::move(*refusal));
      }
      HttpRequest& req = std::get<HttpRequest>(checked);
      req.remote_address = state->peer;
      const unsigned version = head_parser.get().version();
      // Read now: the body's parser takes the head over.
      const bool wants_keep_alive = head_parser.get().keep_alive();
      const bool head_only = req.method == "HEAD";
      if (head_only) req.method = "GET";
      const BodyPlan plan = core_.handler->Plan(req);
      const boost::optional<uint64_t> declared = head_parser.content_length();
      const bool expects_continue =
          version >= 11 && beast::iequals(req.headers.Get("Expect"), "100-continue");

      Exchange x;
      x.body_done = head_parser.is_done();
      BodyReservation reservation;  // held until the answer is written
      if (plan.reject) {
        x.res = std::move(*plan.reject);
        co_await DrainIfSmall(stream, buffer, head_parser, expects_continue, kDrainLimit,
                              &x.body_done);
      } else if (declared && *declared > plan.limit) {
        x.res = TooLarge(plan, *declared);
        x.res.close = true;
      } else if (plan.mode == BodyPlan::Mode::kBuffer) {
        x = co_await BufferAndHandle(stream, buffer, head_parser, req, plan, expects_continue,
                                     declared, reservation);
        if (x.abort) {
          if (*x.abort == 0) co_return 0;
          co_return co_await Refuse(stream, std::move(x.res));
        }
      } else {
        x = co_await UploadAndHandle(stream, buffer, head_parser, req, plan, expects_continue);
      }
      const bool keep_alive = wants_keep_alive && x.body_done && !x.res.close && !core_.stopping;
      bool ok = true;
      co_await WriteResponse(stream, x.res, head_only, keep_alive, version, &ok);
      if (!ok || !keep_alive) {
        if (x.body_done) co_return 0;
        co_return declared ? std::min<uint64_t>(*declared, kLingerBytes) : kLingerBytes;
      }
    }
  }

  enum class BodyRead { kDone, kTooLarge, kStalled, kCut, kRefused };

  // Reads a request's body (at most `limit` bytes) piece by piece into `consume`; a consume error
  // stops the read (kRefused, *refusal set).
  template <class Stream, class Consume>
  awaitable<BodyRead> StreamBody(Stream& stream, beast::flat_buffer& buffer,
                                 http::request_parser<http::empty_body>& head_parser,
                                 uint64_t limit, Consume consume, Status* refusal) {
    auto& tcp = beast::get_lowest_layer(stream);
    if (const boost::optional<uint64_t> length = head_parser.content_length();
        length && !head_parser.chunked()) {
      co_return co_await StreamSizedBody(stream, buffer, *length, limit, consume, refusal);
    }
    http::request_parser<http::buffer_body> parser(std::move(head_parser));
    parser.body_limit(limit);
    WideBuffer wide(buffer, !parser.chunked(), core_.options.limits.max_header_bytes + kReadSlack);
    std::vector<char> chunk(kUploadChunk);
    while (!parser.is_done()) {
      parser.get().body().data = chunk.data();
      parser.get().body().size = chunk.size();
      tcp.expires_after(core_.options.limits.io_timeout);
      auto [ec, n] = co_await http::async_read(stream, buffer, parser, kTuple);
      if (ec == http::error::need_buffer) ec = {};
      if (ec == http::error::body_limit) co_return BodyRead::kTooLarge;
      if (ec == beast::error::timeout) co_return BodyRead::kStalled;  // the socket is closed
      if (ec) co_return BodyRead::kCut;
      const size_t got = chunk.size() - parser.get().body().size;
      if (got == 0) continue;
      *refusal = consume(std::string_view(chunk.data(), got));
      if (!refusal->ok()) co_return BodyRead::kRefused;
    }
    co_return BodyRead::kDone;
  }

  // A body of declared length: what the head's read left in `buffer`, then large reads straight
  // from the socket (no parser in between: nothing but `length` bytes may follow the head).
  template <class Stream, class Consume>
  awaitable<BodyRead> StreamSizedBody(Stream& stream, beast::flat_buffer& buffer, uint64_t length,
                                      uint64_t limit, Consume& consume, Status* refusal) {
    if (length > limit) co_return BodyRead::kTooLarge;
    auto& tcp = beast::get_lowest_layer(stream);
    uint64_t left = length;
    if (buffer.size() > 0 && left > 0) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(left, buffer.size()));
      *refusal = consume(std::string_view(static_cast<const char*>(buffer.data().data()), n));
      buffer.consume(n);
      left -= n;
      if (!refusal->ok()) co_return BodyRead::kRefused;
    }
    std::vector<char> chunk(static_cast<size_t>(std::min<uint64_t>(left, kSizedBodyChunk)));
    while (left > 0) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(left, chunk.size()));
      tcp.expires_after(core_.options.limits.io_timeout);
      auto [ec, n] = co_await asio::async_read(
          stream, asio::buffer(chunk.data(), want),
          asio::transfer_at_least(std::min<size_t>(want, kUploadChunk)), kTuple);
      if (ec == beast::error::timeout) co_return BodyRead::kStalled;  // the socket is closed
      if (ec && n == 0) co_return BodyRead::kCut;
      left -= n;
      *refusal = consume(std::string_view(chunk.data(), n));
      if (!refusal->ok()) co_return BodyRead::kRefused;
      if (ec) co_return BodyRead::kCut;
    }
    co_return BodyRead::kDone;
  }

  // Reads a request's body and drops it; false when that failed and the connection must close.
  template <class Stream>
  awaitable<bool> Drain(Stream& stream, beast::flat_buffer& buffer,
                        http::request_parser<http::empty_body>& head_parser, uint64_t limit) {
    Status ignored;
    BodyRead r = co_await StreamBody(
        stream, buffer, head_parser, limit, [](std::string_view) { return Status(); }, &ignored);
    co_return r == BodyRead::kDone;
  }

  // Streams a request's body into `sink`. On success *body_done is set; otherwise *res holds
  // the answer (413, 408, a write error), and the connection closes after it.
  template <class Stream>
  awaitable<void> UploadBody(Stream& stream, beast::flat_buffer& buffer,
                             http::request_parser<http::empty_body>& head_parser,
                             const HttpRequest& req, const BodyPlan& plan, bool expects_continue,
                             UploadSink& sink, HttpResponse* res, bool* body_done) {
    if (!head_parser.is_done()) co_await WriteContinue(stream, req, expects_continue);
    Status refusal;
    BodyRead r = co_await StreamBody(
        stream, buffer, head_parser, plan.limit,
        [&sink](std::string_view piece) { return sink.Write(piece); }, &refusal);
    switch (r) {
      case BodyRead::kDone:
        *body_done = true;
        break;
      case BodyRead::kTooLarge:
        *res = LimitError(413, "Upload exceeds the limit of " + std::to_string(plan.limit) +
                                   " bytes; nothing of it was kept");
        break;
      case BodyRead::kStalled:
      case BodyRead::kCut:
        *res = LimitError(400, "The upload was cut short, stalled or malformed");
        break;
      case BodyRead::kRefused:
        *res = ErrorResponse(refusal);
        res->close = true;
        break;
    }
  }

 private:
  ServerCore& core_;
};

}  // namespace

awaitable<uint64_t> ServeConnection(ServerCore& core, beast::tcp_stream& stream,
                                    const std::shared_ptr<ConnState>& state) {
  Connection connection(core);
  co_return co_await connection.ServeConnection(stream, state);
}

awaitable<uint64_t> ServeConnection(ServerCore& core, beast::ssl_stream<beast::tcp_stream>& stream,
                                    const std::shared_ptr<ConnState>& state) {
  Connection connection(core);
  co_return co_await connection.ServeConnection(stream, state);
}

}  // namespace cairn::server::edge
