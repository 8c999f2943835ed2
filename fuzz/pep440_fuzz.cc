// Fuzz target for PEP 440 (env/standards/pep440.h): versions and specifier sets read back from their
// normal form unchanged, whatever text they were parsed from; names normalise idempotently.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "env/standards/pep440.h"

namespace {
void Check(bool ok) {
  if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using cairn::env::SpecifierSet;
  using cairn::env::Version;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto v = Version::Parse(text); v.ok()) {
    auto again = Version::Parse(v->ToString());
    Check(again.ok() && *again == *v && again->ToString() == v->ToString());
  }
  if (auto s = SpecifierSet::Parse(text); s.ok()) {
    auto again = SpecifierSet::Parse(s->ToString());
    Check(again.ok() && *again == *s);
    for (const char* probe : {"0", "1.0", "2.0rc1", "1!3.4.post2.dev1+local.7"}) {
      Version v = *Version::Parse(probe);
      Check(s->Contains(v) == again->Contains(v));
    }
  }
  const std::string name = cairn::env::NormalizeName(text);
  Check(cairn::env::NormalizeName(name) == name);
  return 0;
}
