#include "util/utf8.h"

#include <cstdint>

namespace cairn {

size_t Utf8SequenceLength(std::string_view s, size_t i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return 1;
  size_t n = 0;  // continuation bytes that follow
  if ((c >> 5) == 0x6) n = 1;
  else if ((c >> 4) == 0xe) n = 2;
  else if ((c >> 3) == 0x1e) n = 3;
  else return 0;
  if (i + n >= s.size()) return 0;
  uint32_t cp = c & (0x3f >> n);
  for (size_t k = 1; k <= n; ++k) {
    unsigned char cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3f);
  }
  static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n + 1;
}

bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = Utf8SequenceLength(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

void AppendUtf8(std::string* out, uint32_t cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

namespace {

constexpr std::string_view kReplacement = "\xef\xbf\xbd";

// The length a lead byte announces (2 to 4), or 0 for bytes that cannot lead a sequence.
size_t AnnouncedLength(unsigned char c) {
  if ((c >> 5) == 0x6) return 2;
  if ((c >> 4) == 0xe) return 3;
  if ((c >> 3) == 0x1e) return 4;
  return 0;
}

}  // namespace

std::string Utf8Decoder::Feed(std::string_view bytes) {
  std::string data = std::move(carry_);
  carry_.clear();
  data.append(bytes);
  std::string out;
  out.reserve(data.size());
  size_t i = 0;
  while (i < data.size()) {
    size_t n = Utf8SequenceLength(data, i);
    if (n > 0) {
      out.append(data, i, n);
      i += n;
      continue;
    }
    // An incomplete sequence at the very end may be completed by the next piece.
    size_t want = AnnouncedLength(static_cast<unsigned char>(data[i]));
    bool prefix = want > 0 && data.size() - i < want;
    for (size_t k = i + 1; prefix && k < data.size(); ++k) {
      prefix = (static_cast<unsigned char>(data[k]) & 0xc0) == 0x80;
    }
    if (prefix) {
      carry_ = data.substr(i);
      break;
    }
    out.append(kReplacement);
    ++i;
  }
  return out;
}

std::string Utf8Decoder::Finish() {
  std::string out = carry_.empty() ? "" : std::string(kReplacement);
  carry_.clear();
  return out;
}

}  // namespace cairn
