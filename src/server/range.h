// HTTP Range requests (RFC 9110, section 14) for the answers that honour them: artifact
// downloads and the web UI's files. One decision per request, shared by every such route, so
// that no answer ever carries a byte outside its representation.
//
// What is served:
//   - no Range header, another unit than bytes, a malformed or inverted range, or more than one
//     range: the whole representation (200). RFC 9110 lets a server ignore a Range it does not
//     serve; multipart/byteranges answers are not produced.
//   - one satisfiable range: that range (206), its end clamped to the representation;
//   - one range that starts at or past the end (or "-0"): 416 with "Content-Range: bytes */N".
//   - an empty representation: the whole (empty) representation, whatever the Range.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cairn::server {

struct RangeDecision {
  enum class Kind { kWhole, kPartial, kUnsatisfiable };
  Kind kind = Kind::kWhole;
  int64_t first = 0;   // first byte served
  int64_t length = 0;  // bytes served; the representation's size for kWhole, 0 for kUnsatisfiable

  // The Content-Range header value for kPartial ("bytes 0-99/1000") and kUnsatisfiable
  // ("bytes */1000"); empty for kWhole.
  std::string ContentRange(int64_t size) const;
};

// The decision for a Range header value (empty: none was sent) on a representation of `size`
// bytes. Reads at most a bounded prefix of a hostile header and never fails.
RangeDecision DecideRange(std::string_view range_header, int64_t size);

}  // namespace cairn::server
