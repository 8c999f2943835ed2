// Writing TOML by hand, for files whose text must be deterministic (lock files, environment
// snapshots): the caller decides the order of tables and keys, these functions the spelling.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cairn::toml_writer {

// A TOML basic string. Control characters use \uXXXX; a byte that does not start a well-formed
// UTF-8 sequence becomes U+FFFD (TOML must be UTF-8, file names need not be).
void AppendString(std::string* out, std::string_view s);
// A key, bare when TOML allows it, else quoted.
void AppendKey(std::string* out, std::string_view key);

// `key = value` lines.
void Str(std::string* out, std::string_view key, std::string_view value);
void StrIfSet(std::string* out, std::string_view key, std::string_view value);  // not when empty
void Bool(std::string* out, std::string_view key, bool value);
void Int(std::string* out, std::string_view key, int64_t value);
// One line for short arrays, one element a line for long ones, so that diffs stay readable.
void StrArray(std::string* out, std::string_view key, const std::vector<std::string>& values);

}  // namespace cairn::toml_writer
