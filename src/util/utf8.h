// UTF-8 well-formedness: no overlong forms, no surrogates, nothing past U+10FFFF.
#pragma once

#include <cstddef>
#include <string_view>

namespace cairn {

// The length (1 to 4) of the well-formed UTF-8 sequence starting at s[i], or 0 when the bytes
// there are not one.
size_t Utf8SequenceLength(std::string_view s, size_t i);
bool IsValidUtf8(std::string_view s);

}  // namespace cairn
