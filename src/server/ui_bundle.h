// The web UI's built files, compiled into the binary at build time (scripts/embed_files.py
// writes ui_bundle.cc from web/dist), so that an installed or copied `cairn` serves its UI.
#pragma once

#include <span>
#include <string_view>

namespace cairn::server {

struct BundledFile {
  std::string_view path;  // relative to web/dist, '/'-separated
  std::string_view data;
};

// Empty when the binary was built without a built UI.
std::span<const BundledFile> BundledUiFiles();

}  // namespace cairn::server
