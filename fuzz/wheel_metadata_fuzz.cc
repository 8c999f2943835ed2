// Fuzz target for the files a wheel carries (env/standards/core_metadata.h, env/install/wheel_archive.h,
// env/install/wheel_install.h): METADATA, RECORD and entry_points.txt are read or refused, never a
// crash, and RECORD rows written back read back the same.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "env/standards/core_metadata.h"
#include "env/install/wheel_archive.h"
#include "env/install/wheel_install.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)cairn::env::ParseCoreMetadata(text);
  (void)cairn::env::ParseScriptEntryPoints(text);
  if (auto rows = cairn::env::ParseRecord(text); rows.ok()) {
    auto again = cairn::env::ParseRecord(cairn::env::FormatRecord(*rows));
    if (!again.ok() || again->size() != rows->size()) std::abort();
    for (size_t i = 0; i < rows->size(); ++i) {
      const auto& a = (*rows)[i];
      const auto& b = (*again)[i];
      if (a.path != b.path || a.hash != b.hash || a.size != b.size) std::abort();
    }
  }
  return 0;
}
