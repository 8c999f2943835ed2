#include "service/validation.h"

#include <cctype>

namespace cairn::service {

Status MissingParameter(std::string_view name) {
  return InvalidArgument("Missing value for required parameter '" + std::string(name) + "'." +
                         std::string(kApiDocs));
}

Status InvalidParameter(std::string_view name, std::string_view shown, std::string_view type_name) {
  return InvalidArgument("Invalid value " + std::string(shown) + " for parameter '" +
                         std::string(name) + "' supplied. Hint: Value was of type '" +
                         std::string(type_name) + "'." + std::string(kApiDocs));
}

// Keys may become file names (MLflow's FileStore, artifact paths), so they use a safe alphabet
// and must not normalise to another path: no empty, "." or ".." segments, no leading slash.
Status ValidateKey(std::string_view kind, std::string_view key) {
  auto invalid = [&](std::string_view why) {
    return InvalidArgument("Invalid " + std::string(kind) + " name: '" + std::string(key) + "'. " +
                           std::string(why));
  };
  if (key.empty()) return MissingParameter("key");
  if (key.size() > kMaxKeyLength) {
    return InvalidArgument(std::string(kind) + " name '" + std::string(key.substr(0, 40)) +
                           "...' had length " + std::to_string(key.size()) +
                           ", which exceeded length limit of " + std::to_string(kMaxKeyLength));
  }
  for (unsigned char c : key) {
    bool ok = std::isalnum(c) || c == '_' || c == '-' || c == '.' || c == ' ' || c == '/' ||
              c == ':' || c >= 0x80;
    if (!ok) {
      return invalid(
          "Names may only contain alphanumerics, underscores (_), dashes (-), periods (.), "
          "spaces ( ), colons (:) and slashes (/).");
    }
  }
  size_t start = 0;
  for (;;) {
    size_t slash = key.find('/', start);
    std::string_view seg =
        key.substr(start, slash == std::string_view::npos ? key.size() - start : slash - start);
    if (seg.empty() || seg == "." || seg == "..") {
      return invalid("Names must not resolve to other names when treated as file paths.");
    }
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return Status::Ok();
}

Status ValidateLength(std::string_view what, std::string_view key, std::string_view value,
                      size_t limit) {
  if (value.size() <= limit) return Status::Ok();
  return InvalidArgument(std::string(what) + " value '" + std::string(value.substr(0, 40)) +
                         "...' for key '" + std::string(key) + "' had length " +
                         std::to_string(value.size()) + ", which exceeded length limit of " +
                         std::to_string(limit));
}

}  // namespace cairn::service
