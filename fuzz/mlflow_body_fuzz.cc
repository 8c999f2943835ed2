// Fuzz target for MLflow request bodies as the server decodes them (server/fields.h): any body
// is read as a log-batch, a run search and a dataset input, or refused with an error naming
// the field, never a crash.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/fields.h"

namespace {

void DecodeMetrics(const cairn::server::Fields& f) {
  auto metrics = f.Objects("metrics");
  if (!metrics.ok()) return;
  for (const cairn::server::Fields& m : *metrics) {
    (void)m.RequiredStr("key");
    (void)m.RequiredDouble("value");
    (void)m.RequiredInt("timestamp");
    (void)m.Int("step");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto doc = cairn::server::ParseJsonObject(text);
  if (!doc.ok()) return 0;
  cairn::server::Fields f(*doc);
  (void)f.RunId();
  DecodeMetrics(f);
  (void)f.StrList("experiment_ids");
  (void)f.Str("filter");
  (void)f.Int("max_results");
  if (auto datasets = f.Objects("datasets"); datasets.ok()) {
    for (const cairn::server::Fields& d : *datasets) {
      if (auto ds = d.Object("dataset"); ds.ok() && ds->has_value()) {
        (void)(*ds)->RequiredStr("name");
        (void)(*ds)->Str("schema");
      }
    }
  }
  return 0;
}
