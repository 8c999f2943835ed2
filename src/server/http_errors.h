// Status -> MLflow error_code and HTTP status. Client mistakes are 4xx, never 5xx: MLflow
// clients retry 5xx answers for about a minute.
#pragma once

#include <string>
#include <string_view>

#include "util/status.h"

namespace cairn::server {

struct HttpError {
  int http_status;
  std::string_view error_code;
};

HttpError ToHttpError(StatusCode code);
// {"error_code": ..., "message": ...}
std::string ErrorBody(std::string_view error_code, std::string_view message);

}  // namespace cairn::server
