#include "server/http_errors.h"

#include "util/json_writer.h"

namespace cairn::server {

HttpError ToHttpError(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return {200, ""};
    case StatusCode::kInvalidArgument: return {400, "INVALID_PARAMETER_VALUE"};
    case StatusCode::kNotFound: return {404, "RESOURCE_DOES_NOT_EXIST"};
    case StatusCode::kAlreadyExists: return {400, "RESOURCE_ALREADY_EXISTS"};
    case StatusCode::kFailedPrecondition: return {400, "BAD_REQUEST"};
    case StatusCode::kResourceExhausted: return {400, "INVALID_PARAMETER_VALUE"};
    case StatusCode::kUnimplemented: return {501, "NOT_IMPLEMENTED"};
    case StatusCode::kUnavailable: return {503, "TEMPORARILY_UNAVAILABLE"};
    case StatusCode::kInternal: return {500, "INTERNAL_ERROR"};
  }
  return {500, "INTERNAL_ERROR"};
}

std::string ErrorBody(std::string_view error_code, std::string_view message) {
  JsonWriter w;
  w.BeginObject().Key("error_code").String(error_code).Key("message").String(message).EndObject();
  return w.Take();
}

}  // namespace cairn::server
