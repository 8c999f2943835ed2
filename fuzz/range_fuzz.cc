// Fuzz target for the Range header parser: whatever the header and representation size, the
// decision stays inside the representation.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "server/range.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  // The first two bytes choose the representation's size (0..65535).
  const int64_t length = (int64_t{data[0]} << 8) | data[1];
  std::string_view header(reinterpret_cast<const char*>(data + 2), size - 2);
  cairn::server::RangeDecision d = cairn::server::DecideRange(header, length);
  using Kind = cairn::server::RangeDecision::Kind;
  const bool inside = d.first >= 0 && d.length >= 0 && d.first + d.length <= length;
  const bool shaped = (d.kind == Kind::kWhole && d.first == 0 && d.length == length) ||
                      (d.kind == Kind::kPartial && d.length > 0) ||
                      (d.kind == Kind::kUnsatisfiable && d.length == 0 && length > 0);
  if (!inside || !shaped) std::abort();
  (void)d.ContentRange(length);
  return 0;
}
