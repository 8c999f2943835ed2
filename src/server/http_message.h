// Requests and responses as the server's handlers see them, apart from the HTTP library that
// carries them (kept out of this header so that handlers build without it).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/status.h"

namespace cairn::server {

using QueryParams = std::multimap<std::string, std::string>;

// Header fields in the order received; names compare without regard to case.
class HttpHeaders {
 public:
  void Add(std::string name, std::string value) {
    fields_.emplace_back(std::move(name), std::move(value));
  }
  // The first field of that name; nullptr when there is none.
  const std::string* Find(std::string_view name) const;
  std::string_view Get(std::string_view name) const {
    const std::string* v = Find(name);
    return v == nullptr ? std::string_view() : std::string_view(*v);
  }
  size_t size() const { return fields_.size(); }

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

struct HttpRequest {
  std::string method;  // "GET", "POST", ... as sent
  std::string target;  // as sent: "/api/2.0/mlflow/runs/get?run_id=..."
  std::string path;    // the target's path, percent-decoded
  QueryParams query;   // the target's query, decoded ('+' is a space)
  HttpHeaders headers;
  std::string body;    // read whole for routes that buffer their body
  std::string remote_address;  // the client's IP address, as the connection saw it
};

// Answers too large to build in memory are streamed: a BodyStream runs on a handler thread once
// the response has started, and passes each piece to the writer, which returns false when the
// client has gone. A failure after the first piece can only cut the response short.
using BodyWriter = std::function<bool(std::string_view)>;
using BodyStream = std::function<Status(const BodyWriter& write)>;

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  // The body: `body`, or `shared_body` (a file held in memory) from shared_offset for
  // shared_length bytes, or `stream` (stream_length bytes, or chunked when -1).
  std::string body;
  std::shared_ptr<const std::string> shared_body;
  size_t shared_offset = 0;
  size_t shared_length = 0;
  BodyStream stream;
  int64_t stream_length = -1;
  // Close the connection after this answer.
  bool close = false;
  // An answer that comes later (a long poll): instead of writing this response, the
  // connection calls `deferred` with a callback and waits, holding no thread, for that to be
  // called with the real answer (exactly once, from any thread, soon after the server is
  // asked to stop at the latest).
  std::function<void(std::function<void(HttpResponse)>)> deferred;

  void SetHeader(std::string name, std::string value) {
    headers.emplace_back(std::move(name), std::move(value));
  }
};

// An upload streamed to its destination as it arrives (artifact PUTs). Write is called on an I/O
// thread for each piece and must not block for long; Finish runs on a handler thread once the
// body is complete. A sink destroyed without Finish discards what it was given.
class UploadSink {
 public:
  virtual ~UploadSink() = default;
  virtual Status Write(std::string_view piece) = 0;
  virtual HttpResponse Finish() = 0;
};

// %XX escapes decoded (a '%' not followed by two hex digits stays as it is); with
// `plus_is_space`, as in a query string, '+' is a space.
std::string PercentDecode(std::string_view s, bool plus_is_space);

// The fields of a query string ("a=1&b=x%20y&flag"), decoded, added to `out` in order; a field
// without '=' has an empty value, and empty fields ("a=1&&b=2") are skipped.
void ParseQuery(std::string_view query, QueryParams* out);

}  // namespace cairn::server
