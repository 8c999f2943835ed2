// The JSON API as a table: method, path under the API prefix, and a handler that decodes the
// request's fields, calls one service and returns the encoded response body. Server-internal.
#pragma once

#include <functional>
#include <span>
#include <string>

#include "server/fields.h"
#include "service/access_service.h"
#include "service/artifact_service.h"
#include "service/dataset_service.h"
#include "service/identity_service.h"
#include "service/registry_service.h"
#include "service/retention.h"
#include "service/task_service.h"
#include "service/tracking_service.h"

namespace cairn::server {

// The services a handler calls, and what it needs to know of the request beyond its fields:
// the server holds one with the services, and each request gets a copy with its own part.
struct ApiContext {
  service::TrackingService* tracking = nullptr;
  service::ArtifactService* artifacts = nullptr;
  service::AccessService* access = nullptr;
  service::IdentityService* identity = nullptr;
  service::RegistryService* registry = nullptr;
  service::TaskService* tasks = nullptr;
  service::DatasetService* datasets = nullptr;
  service::RetentionService* retention = nullptr;
  bool tls = false;
  // The request's own: who asks (authenticated, and allowed by the route's rule), from where,
  // through which browser session, and which experiments it may read (searches and listings
  // leave out the rest; unset: all).
  const core::Principal* caller = nullptr;
  std::string_view remote_address;
  std::string_view session_id;
  std::function<bool(std::string_view experiment_id)> may_read_experiment;
  // The same for registered models, by name, and for datasets.
  std::function<bool(std::string_view model_name)> may_read_model;
  std::function<bool(std::string_view dataset)> may_read_dataset;
};

using ApiHandler = Result<std::string> (*)(ApiContext& ctx, const Fields& fields);

struct Route {
  const char* method;
  const char* path;  // relative to /api/2.0/mlflow/ (and /ajax-api/2.0/mlflow/)
  ApiHandler handler;
};

std::span<const Route> MlflowRoutes();
// MLflow's auth API (users/*, experiments/permissions/*), answered by server/auth_api.cc.
std::span<const Route> MlflowAuthRoutes();
// MLflow's model registry (registered-models/*, model-versions/*): server/registry_api.cc.
std::span<const Route> RegistryRoutes();

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
