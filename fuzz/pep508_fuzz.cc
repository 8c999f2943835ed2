// Fuzz target for PEP 508 (env/standards/pep508.h): requirements and markers read back from their
// canonical text unchanged, and a marker evaluates the same after the round trip.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "env/standards/pep508.h"

namespace {
void Check(bool ok) {
  if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using cairn::env::Marker;
  using cairn::env::Requirement;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  static const cairn::env::MarkerEnvironment env =
      cairn::env::MarkerEnvironment::LinuxCPython("3.11.4", "x86_64");
  if (auto r = Requirement::Parse(text); r.ok()) {
    auto again = Requirement::Parse(r->ToString());
    Check(again.ok() && again->ToString() == r->ToString());
  }
  if (auto m = Marker::Parse(text); m.ok()) {
    auto again = Marker::Parse(m->ToString());
    Check(again.ok() && *again == *m);
    Check(m->Evaluate(env, {"gpu"}) == again->Evaluate(env, {"gpu"}));
  }
  return 0;
}
