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
    case StatusCode::kUnauthenticated: return {401, "UNAUTHENTICATED"};
    case StatusCode::kPermissionDenied: return {403, "PERMISSION_DENIED"};
  }
  return {500, "INTERNAL_ERROR"};
}

std::string ErrorBody(std::string_view error_code, std::string_view message) {
  JsonWriter w;
  w.BeginObject().Key("error_code").String(error_code).Key("message").String(message).EndObject();
  return w.Take();
}

HttpResponse JsonError(int status, std::string_view error_code, std::string_view message) {
  HttpResponse r;
  r.status = status;
  r.body = ErrorBody(error_code, message);
  return r;
}

HttpResponse ErrorResponse(const Status& status) {
  if (status.code() == StatusCode::kUnauthenticated) {
    // MLflow's basic-auth answer, word for word.
    HttpResponse r;
    r.status = 401;
    r.content_type = "text/plain; charset=utf-8";
    r.body = std::string(kNotAuthenticatedText);
    r.SetHeader("WWW-Authenticate", "Basic realm=\"mlflow\"");
    return r;
  }
  HttpError e = ToHttpError(status.code());
  return JsonError(e.http_status, e.error_code, status.message());
}

HttpResponse LimitError(int status, std::string_view message) {
  std::string_view code = status == 503   ? "TEMPORARILY_UNAVAILABLE"
                          : status == 400 ? "MALFORMED_REQUEST"
                                          : "REQUEST_LIMIT_EXCEEDED";
  HttpResponse r = JsonError(status, code, message);
  r.close = true;
  return r;
}

}  // namespace cairn::server
