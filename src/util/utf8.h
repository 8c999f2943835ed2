// UTF-8 well-formedness: no overlong forms, no surrogates, nothing past U+10FFFF.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace cairn {

// The length (1 to 4) of the well-formed UTF-8 sequence starting at s[i], or 0 when the bytes
// there are not one.
size_t Utf8SequenceLength(std::string_view s, size_t i);
bool IsValidUtf8(std::string_view s);
// Appends the UTF-8 encoding of `code_point` (at most U+10FFFF; the caller rules out
// surrogates).
void AppendUtf8(std::string* out, uint32_t code_point);

// Turns a byte stream that arrives in pieces (a pipe's reads) into valid UTF-8. A character
// split between pieces is held back until the next piece completes it; bytes that are not
// UTF-8 become U+FFFD.
class Utf8Decoder {
 public:
  std::string Feed(std::string_view bytes);
  // What is still held back, as U+FFFD, at the end of the stream.
  std::string Finish();

 private:
  std::string carry_;
};

}  // namespace cairn
