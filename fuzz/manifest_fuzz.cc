// Fuzz target for the manifest of a directory (core/tree_manifest.h), which the server reads
// from a blob any client may send when it names a dataset's version: any bytes are read or
// refused with an error, never a crash; what is read writes back to the one canonical text,
// which reads back the same, and differs from itself in nothing.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/tree_manifest.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto files = cairn::core::ParseManifestJson(text);
  if (!files.ok()) return 0;
  const std::string canonical = cairn::core::ManifestJson(*files);
  auto again = cairn::core::ParseManifestJson(canonical);
  Check(again.ok());
  Check(*again == *files);
  Check(cairn::core::ManifestJson(*again) == canonical);
  Check(cairn::core::DiffManifests(*files, *again).empty());
  return 0;
}
