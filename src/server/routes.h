// The JSON API as a table: method, path under the API prefix, and a handler that decodes the
// request's fields, calls one service and returns the encoded response body. Server-internal.
#pragma once

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

}  // namespace cairn::server
