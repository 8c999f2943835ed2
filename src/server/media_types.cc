#include "server/media_types.h"

#include "util/strings.h"

namespace cairn::server {
namespace {

struct Entry {
  std::string_view extension;
  std::string_view type;
};

constexpr Entry kTable[] = {
    {"html", "text/html"},         {"htm", "text/html"},
    {"js", "text/javascript"},     {"mjs", "text/javascript"},
    {"css", "text/css"},           {"json", "application/json"},
    {"map", "application/json"},   {"txt", "text/plain"},
    {"log", "text/plain"},         {"md", "text/plain"},
    {"yaml", "text/plain"},        {"yml", "text/plain"},
    {"csv", "text/plain"},         {"toml", "text/plain"},
    {"py", "text/plain"},          {"svg", "image/svg+xml"},
    {"png", "image/png"},          {"jpg", "image/jpeg"},
    {"jpeg", "image/jpeg"},        {"gif", "image/gif"},
    {"webp", "image/webp"},        {"ico", "image/x-icon"},
    {"woff2", "font/woff2"},
};

}  // namespace

std::string_view MediaTypeOf(std::string_view file_name) {
  const size_t dot = file_name.rfind('.');
  if (dot == std::string_view::npos) return "";
  const std::string_view ext = file_name.substr(dot + 1);
  for (const Entry& e : kTable) {
    if (EqualsIgnoreCase(ext, e.extension)) return e.type;
  }
  return "";
}

std::string UiContentType(std::string_view file_name) {
  const std::string_view type = MediaTypeOf(file_name);
  if (type.empty()) return "application/octet-stream";
  if (type.starts_with("text/")) return std::string(type) + "; charset=utf-8";
  return std::string(type);
}

std::string ArtifactContentType(std::string_view file_name) {
  const size_t slash = file_name.rfind('/');
  if (file_name.substr(slash == std::string_view::npos ? 0 : slash + 1) == "MLmodel") {
    return "text/plain";
  }
  const std::string_view type = MediaTypeOf(file_name);
  if (type.empty()) return "application/octet-stream";
  if (type.starts_with("text/")) return "text/plain";  // never rendered as a page of this origin
  return std::string(type);
}

}  // namespace cairn::server
