// The JSON API as a table: method, path under the API prefix, and a handler that decodes the
// request's fields, calls one service and returns the encoded response body. Server-internal.
#pragma once

#include <functional>
#include <span>
#include <string>

#include "server/fields.h"
#include "service/artifact_service.h"
#include "service/tracking_service.h"

namespace cairn::server {

struct ApiContext {
  service::TrackingService* tracking;
  service::ArtifactService* artifacts;
};

using ApiHandler = Result<std::string> (*)(ApiContext& ctx, const Fields& fields);

struct Route {
  const char* method;
  const char* path;  // relative to /api/2.0/mlflow/ (and /ajax-api/2.0/mlflow/)
  ApiHandler handler;
};

std::span<const Route> MlflowRoutes();

// Routes answered without a thread waiting on the store (the logging calls): the handler
// decodes the request and returns at once; `reply` is called exactly once, then or later from
// the store's writer thread, and must not block.
using Reply = std::function<void(Result<std::string>)>;
using AsyncHandler = void (*)(ApiContext& ctx, const Fields& fields, Reply reply);

struct AsyncRoute {
  const char* method;
  const char* path;
  AsyncHandler handler;
};

std::span<const AsyncRoute> MlflowAsyncRoutes();

// Answers too large to build in memory are streamed: the handler validates the request and
// returns a BodyStream (server/http_message.h), which the server runs once the response has
// started.
using StreamHandler = Result<BodyStream> (*)(ApiContext& ctx, const Fields& fields);

struct StreamRoute {
  const char* method;
  const char* path;
  StreamHandler handler;
};

std::span<const StreamRoute> MlflowStreamRoutes();

}  // namespace cairn::server
