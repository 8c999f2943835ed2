// The browser UI's built files (web/dist, made by `npm run build` in web/), served by the
// server at "/". They are built into the binary (server/ui_bundle.h), or read from a directory
// given for UI development, once when the server starts, and answered from memory:
//   /, /index.html   the page, Cache-Control: no-cache (it names the current assets)
//   /assets/NAME     scripts and styles whose names carry a hash of their content:
//                    Cache-Control: public, max-age=31536000, immutable
//   /NAME            other files at the top of dist (an icon): max-age=3600
// Every answer carries a Content-Security-Policy that lets the page load nothing from other
// machines. Without a built UI, "/" answers a short page that says how to build it.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "util/status.h"

namespace cairn::server {

struct UiFile {
  std::shared_ptr<const std::string> body;
  std::string content_type;
  std::string cache_control;
};

class UiFiles {
 public:
  // Loads every file under `dir`; an empty `dir` means $CAIRN_UI_DIR when set, else the UI
  // built into the binary. A directory without index.html, or a binary built without the UI,
  // serves a page that says how to build it.
  static Result<UiFiles> Load(const std::string& dir);
  // The files built into the binary.
  static UiFiles Bundled();

  // The file for a GET of `path`, or nullopt (the caller answers 404).
  std::optional<UiFile> Find(std::string_view path) const;
  bool built() const { return files_.count("index.html") != 0; }
  // Where the files came from: their directory, "built in", or "" when there is no UI.
  std::string source() const { return built() ? source_ : ""; }

  // Headers every UI answer carries.
  static constexpr std::string_view kContentSecurityPolicy =
      "default-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; "
      "connect-src 'self'; frame-ancestors 'none'";

 private:
  void Add(const std::string& rel, std::string bytes);
  void EnsureIndex();

  std::string source_;
  std::map<std::string, UiFile, std::less<>> files_;  // path under dir -> file
};

}  // namespace cairn::server
