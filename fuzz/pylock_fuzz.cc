// Fuzz target for pylock.toml (env/lock.h, env/env_diff.h): any text is read as a lock and as
// an environment description, or refused, never a crash.
#include <cstdint>
#include <string_view>

#include "env/env_diff.h"
#include "env/lock.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)cairn::env::ParseLock(text, "fuzz.toml");
  if (auto d = cairn::env::DescribeLockText(text, "fuzz.toml"); d.ok()) {
    (void)cairn::env::DiffEnvironments(*d, *d);
    const cairn::env::EnvDiff diff = cairn::env::DiffEnvironments(cairn::env::EnvDescription(), *d);
    (void)cairn::env::FormatEnvDiff(diff, "a", "b", true);
    (void)cairn::env::EnvDiffJson(diff);
  }
  return 0;
}
