// cairn's own API, beside MLflow's, under /api/cairn/v1/: a run's console log, and metric
// series thinned for charts.
//
//   GET  /api/cairn/v1/metrics/series?run_id=R&key=K[&points=N]
//        -> {"run_id", "key", "total_points", "steps": [], "timestamps": [], "values": []}
//        at most N points (default 2000) that keep the series' peaks and troughs
//
//   POST /api/cairn/v1/runs/{run_id}/log   {"chunks": [{"offset", "stream", "timestamp",
//                                           "data"}]}  ->  {"length": N}
//   GET  /api/cairn/v1/runs/{run_id}/log?offset=N[&max_bytes=M][&format=json]
//
// GET answers the log's bytes from `offset` as text/plain, with the headers
// X-Cairn-Log-Offset, X-Cairn-Log-Next-Offset and X-Cairn-Run-Status (so a follower knows
// where to continue and when to stop), or with format=json the chunks with their streams and
// timestamps. Server-internal; docs/api/cairn.md describes it for users.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/fields.h"
#include "server/routes.h"

namespace cairn::server {

inline constexpr std::string_view kCairnApiPrefix = "/api/cairn/v1/";
// Log uploads carry up to 8 MiB of console text, escaped as JSON.
inline constexpr size_t kMaxCairnApiBody = 20 << 20;

struct CairnResponse {
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers = {};
};

// `path` is the part after kCairnApiPrefix; `body` is empty for GET. kNotFound for an unknown
// endpoint.
Result<CairnResponse> HandleCairnApi(ApiContext& ctx, std::string_view method,
                                     std::string_view path, const QueryParams& query,
                                     std::string_view body);

}  // namespace cairn::server
