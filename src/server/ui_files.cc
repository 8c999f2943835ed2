#include "server/ui_files.h"

#include <cstdlib>
#include <filesystem>

#include "server/media_types.h"
#include "server/ui_bundle.h"
#include "util/file.h"

namespace cairn::server {
namespace {

namespace fs = std::filesystem;

const char kNotBuilt[] =
    "<!doctype html><meta charset=utf-8><title>cairn</title>"
    "<body style=\"font-family:sans-serif;max-width:40em;margin:3em auto\">"
    "<h1>cairn</h1><p>The server runs, but this binary was built without its web UI. In the "
    "source tree, <code>make build</code> builds the UI and then the binary with the UI in it; "
    "<code>cairn server --ui-dir DIR</code> serves a UI built elsewhere.</p>"
    "<p>The MLflow REST API is at <code>/api/2.0/mlflow/</code>.</p></body>";

}  // namespace

void UiFiles::Add(const std::string& rel, std::string bytes) {
  UiFile f;
  f.body = std::make_shared<const std::string>(std::move(bytes));
  f.content_type = UiContentType(rel);
  if (rel == "index.html") {
    f.cache_control = "no-cache";
  } else if (rel.starts_with("assets/")) {
    f.cache_control = "public, max-age=31536000, immutable";
  } else {
    f.cache_control = "public, max-age=3600";
  }
  files_.insert_or_assign(rel, std::move(f));
}

void UiFiles::EnsureIndex() {
  if (built()) return;
  UiFile f;
  f.body = std::make_shared<const std::string>(kNotBuilt);
  f.content_type = "text/html; charset=utf-8";
  f.cache_control = "no-cache";
  files_.clear();
  files_.emplace("", std::move(f));
}

UiFiles UiFiles::Bundled() {
  UiFiles ui;
  ui.source_ = "built in";
  for (const BundledFile& f : BundledUiFiles()) ui.Add(std::string(f.path), std::string(f.data));
  ui.EnsureIndex();
  return ui;
}

Result<UiFiles> UiFiles::Load(const std::string& dir_flag) {
  std::string dir = dir_flag;
  if (dir.empty()) {
    const char* env = std::getenv("CAIRN_UI_DIR");
    if (env == nullptr || *env == '\0') return Bundled();
    dir = env;
  }
  UiFiles ui;
  ui.source_ = dir;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string rel = fs::relative(it->path(), dir, ec).generic_string();
    if (ec || rel.empty()) continue;
    CAIRN_ASSIGN_OR_RETURN(std::string bytes, ReadFile(it->path()));
    ui.Add(rel, std::move(bytes));
  }
  if (ec) return Unavailable("cannot read the UI in " + dir + ": " + ec.message());
  ui.EnsureIndex();
  return ui;
}

std::optional<UiFile> UiFiles::Find(std::string_view path) const {
  if (!path.starts_with('/')) return std::nullopt;
  std::string_view rel = path.substr(1);
  if (!built()) {
    if (rel.empty() || rel == "index.html") return files_.begin()->second;
    return std::nullopt;
  }
  if (rel.empty()) rel = "index.html";
  // Only names as the build writes them: no "..", no empty or hidden parts.
  if (rel.find("..") != std::string_view::npos || rel.find("//") != std::string_view::npos ||
      rel.starts_with('.') || rel.find("/.") != std::string_view::npos) {
    return std::nullopt;
  }
  auto it = files_.find(rel);
  if (it == files_.end()) return std::nullopt;
  return it->second;
}

}  // namespace cairn::server
