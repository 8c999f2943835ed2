// Fuzz target for a task's spec (core/task_spec.h), which the server keeps as a client gave it
// and agents read, with a reproduction's comparison options (core/reproduce.h): any text is
// read or refused with an error, never a crash, and what is read writes back to JSON that reads
// back the same.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/reproduce.h"
#include "core/task_spec.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

bool SameOptions(const cairn::core::ReproduceOptions& a, const cairn::core::ReproduceOptions& b) {
  auto same = [](const cairn::core::Tolerance& x, const cairn::core::Tolerance& y) {
    return x.rtol == y.rtol && x.atol == y.atol;
  };
  if (!same(a.tolerance, b.tolerance) || a.metrics != b.metrics) return false;
  if (a.per_metric.size() != b.per_metric.size()) return false;
  for (const auto& [key, t] : a.per_metric) {
    auto it = b.per_metric.find(key);
    if (it == b.per_metric.end() || !same(t, it->second)) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto spec = cairn::core::ParseTaskSpec(text); spec.ok()) {
    auto again = cairn::core::ParseTaskSpec(cairn::core::TaskSpecJson(*spec));
    Check(again.ok());
    Check(again->command == spec->command && again->params == spec->params);
    Check(again->code.snapshot == spec->code.snapshot && again->code.cwd == spec->code.cwd);
    Check(again->environment.lock_hash == spec->environment.lock_hash);
    Check(again->reproduce.of == spec->reproduce.of);
    Check(SameOptions(again->reproduce.options, spec->reproduce.options));
  }
  if (auto options = cairn::core::ParseReproduceOptions(text); options.ok()) {
    auto again = cairn::core::ParseReproduceOptions(cairn::core::ReproduceOptionsJson(*options));
    Check(again.ok() && SameOptions(*again, *options));
  }
  return 0;
}
