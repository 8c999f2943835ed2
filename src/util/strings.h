// Small string helpers written once: ASCII whitespace trimming and case folding, splitting.
// ASCII only, whatever the locale: these read protocol and file-format text, not prose.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cairn {

// ASCII character classes, whatever the locale (<cctype> depends on it).
inline bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }
inline bool IsAsciiLower(char c) { return c >= 'a' && c <= 'z'; }
inline bool IsAsciiAlpha(char c) { return IsAsciiLower(c) || (c >= 'A' && c <= 'Z'); }
inline bool IsAsciiAlnum(char c) { return IsAsciiDigit(c) || IsAsciiAlpha(c); }

// Space, tab, newline, carriage return, form feed, vertical tab (C's isspace in the "C" locale).
bool IsAsciiSpace(char c);
// `s` without leading and trailing ASCII whitespace.
std::string_view Trim(std::string_view s);

char AsciiLower(char c);
// `s` with A-Z turned into a-z; other bytes (UTF-8 included) unchanged.
std::string AsciiLower(std::string_view s);
bool EqualsIgnoreCase(std::string_view a, std::string_view b);
bool StartsWithIgnoreCase(std::string_view s, std::string_view prefix);

// `text` fit to print on a terminal: C0 and C1 control characters (newlines, tabs, the escape
// sequences a server could send to a terminal) become spaces; everything else is kept.
std::string PrintableText(std::string_view text);

// The pieces of `s` between each `sep` (n separators give n + 1 pieces; "" gives one).
std::vector<std::string_view> Split(std::string_view s, char sep);
// The non-empty pieces of `s` between each `sep`, copied: "0,,1," gives {"0", "1"}.
std::vector<std::string> SplitNonEmpty(std::string_view s, char sep);
// `items` with `sep` between each two.
std::string Join(const std::vector<std::string>& items, std::string_view sep);

// The shortest text that reads back as `v` ("0.1", "1e-05", "0.14285714285714285"); "nan",
// "inf" and "-inf" for the others.
std::string ShortestNumber(double v);

// The value of environment variable `name`, "" when it is not set.
std::string EnvOrEmpty(const char* name);

}  // namespace cairn
