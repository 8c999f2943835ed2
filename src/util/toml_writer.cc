#include "util/toml_writer.h"

#include <algorithm>
#include <cstdio>

#include "util/utf8.h"

namespace cairn::toml_writer {

// A TOML basic string. Control characters use \uXXXX (TOML has short forms for some; one form
// for all is simpler and equally valid). TOML must be UTF-8, and file names need not be, so a
// byte that does not start a well-formed sequence becomes U+FFFD.
void AppendString(std::string* out, std::string_view s) {
  out->push_back('"');
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(static_cast<char>(c));
      ++i;
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04X", c);
      out->append(buf);
      ++i;
    } else if (c < 0x80) {
      out->push_back(static_cast<char>(c));
      ++i;
    } else if (size_t n = Utf8SequenceLength(s, i); n > 0) {
      out->append(s.substr(i, n));
      i += n;
    } else {
      out->append("\\uFFFD");
      ++i;
    }
  }
  out->push_back('"');
}

// A key, bare when TOML allows it, else quoted.
void AppendKey(std::string* out, std::string_view key) {
  bool bare = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
  });
  if (bare) {
    out->append(key);
  } else {
    AppendString(out, key);
  }
}

void Str(std::string* out, std::string_view key, std::string_view value) {
  AppendKey(out, key);
  out->append(" = ");
  AppendString(out, value);
  out->push_back('\n');
}

void StrIfSet(std::string* out, std::string_view key, std::string_view value) {
  if (!value.empty()) Str(out, key, value);
}

void Bool(std::string* out, std::string_view key, bool value) {
  AppendKey(out, key);
  out->append(value ? " = true\n" : " = false\n");
}

void Int(std::string* out, std::string_view key, int64_t value) {
  AppendKey(out, key);
  out->append(" = ");
  out->append(std::to_string(value));
  out->push_back('\n');
}

// One line for short arrays, one element a line for long ones (sys.path), so diffs of two
// snapshots stay readable.
void StrArray(std::string* out, std::string_view key, const std::vector<std::string>& values) {
  AppendKey(out, key);
  size_t width = 0;
  for (const std::string& v : values) width += v.size() + 4;
  if (width <= 60) {
    out->append(" = [");
    for (size_t i = 0; i < values.size(); ++i) {
      if (i > 0) out->append(", ");
      AppendString(out, values[i]);
    }
    out->append("]\n");
    return;
  }
  out->append(" = [\n");
  for (const std::string& v : values) {
    out->append("  ");
    AppendString(out, v);
    out->append(",\n");
  }
  out->append("]\n");
}

}  // namespace cairn::toml_writer
