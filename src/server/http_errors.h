// Status -> MLflow error_code and HTTP status. Client mistakes are 4xx, never 5xx: MLflow
// clients retry 5xx answers for about a minute.
#pragma once

#include <string>
#include <string_view>

#include "server/http_message.h"
#include "util/status.h"

namespace cairn::server {

struct HttpError {
  int http_status;
  std::string_view error_code;
};

HttpError ToHttpError(StatusCode code);
// {"error_code": ..., "message": ...}
std::string ErrorBody(std::string_view error_code, std::string_view message);

// That body as an answer with `status`.
HttpResponse JsonError(int status, std::string_view error_code, std::string_view message);
// The body of every 401, as MLflow's basic-auth server words it.
inline constexpr std::string_view kNotAuthenticatedText =
    "You are not authenticated. Please see "
    "https://www.mlflow.org/docs/latest/auth/index.html#authenticating-to-mlflow on how to "
    "authenticate.";

// A Status as MLflow answers it (ToHttpError); kUnauthenticated as MLflow's basic-auth server
// answers a missing or wrong password: text, with `WWW-Authenticate: Basic realm="mlflow"`.
HttpResponse ErrorResponse(const Status& status);
// The answer the edge gives itself when a request breaks a limit or HTTP's framing, before any
// handler: 400 MALFORMED_REQUEST, 503 TEMPORARILY_UNAVAILABLE, else REQUEST_LIMIT_EXCEEDED;
// the connection closes after it.
HttpResponse LimitError(int status, std::string_view message);

}  // namespace cairn::server
