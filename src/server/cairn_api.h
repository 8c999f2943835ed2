// cairn's own API, beside MLflow's, under /api/cairn/v1/: a run's console log, metric series
// thinned for charts, runs under ids their clients chose, environment diffs, and identity
// (docs/api/cairn.md).
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

#include <functional>
#include <span>
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
  // An answer that comes later (a long poll, HttpResponse::deferred): called with the callback
  // that takes the real answer.
  std::function<void(std::function<void(Result<CairnResponse>)>)> deferred = {};
};

struct CairnCall {
  std::string_view wildcard;  // what the route's `*` matched
  const Fields& fields;       // the query (GET) or the JSON body (POST)
};

using CairnHandler = Result<CairnResponse> (*)(ApiContext& ctx, const CairnCall& call);

// PermissionDenied unless the caller may read run `run_id` (its experiment), for a handler
// whose request names a run besides the one its access rule checks; kNotFound for no such
// run.
Status RequireRunRead(ApiContext& ctx, const std::string& run_id);
// The same for any access.
Status RequireRunAccess(ApiContext& ctx, const std::string& run_id, core::Access access);
// Whether the caller may `access` the object (always, without authentication or as an admin).
Result<bool> CallerMay(ApiContext& ctx, core::ResourceKind kind, const std::string& id,
                       core::Access access);

struct CairnRoute {
  const char* method;
  const char* path;  // after kCairnApiPrefix; `*` stands for one segment (access_rules.h)
  CairnHandler handler;
};

// The tracking routes (cairn_api.cc) and the identity ones: sign-in, tokens, accounts, teams,
// permissions, the audit log (auth_api.cc).
std::span<const CairnRoute> CairnRoutes();
std::span<const CairnRoute> CairnIdentityRoutes();
// An alias's history and its rollback (registry_api.cc).
std::span<const CairnRoute> CairnRegistryRoutes();
// Tasks, queues and agents (task_api.cc).
std::span<const CairnRoute> CairnTaskRoutes();
// Datasets and their versions (dataset_api.cc).
std::span<const CairnRoute> CairnDatasetRoutes();
// The route of a request; nullptr when there is none.
const CairnRoute* FindCairnRoute(std::string_view method, std::string_view path,
                                 std::string_view* wildcard);

}  // namespace cairn::server
