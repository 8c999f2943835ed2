#include "util/json_reader.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "util/json_writer.h"
#include "util/utf8.h"

namespace cairn {

// Recursive descent over the text, appending nodes in document order: a container's node comes
// before its contents, and its `end` is set once they are read.
class JsonParser {
 public:
  JsonParser(std::string_view text, size_t max_depth, JsonDocument* doc)
      : text_(text), max_depth_(max_depth), doc_(doc) {}

  JsonDocument::Error Run() {
    // A node per value needs at least one byte of text; most values take several.
    doc_->nodes_.reserve(text_.size() / 8 + 4);
    doc_->strings_.reserve(text_.size() / 2 + 16);
    // A byte order mark may lead the text (Python's json.loads of bytes skips one too).
    if (text_.starts_with("\xef\xbb\xbf")) pos_ = 3;
    SkipSpace();
    if (!Value(0)) return error_;
    SkipSpace();
    if (pos_ != text_.size()) return JsonDocument::Error::kSyntax;
    return JsonDocument::Error::kNone;
  }

 private:
  using Node = JsonDocument::Node;
  using Type = JsonValue::Type;

  bool Fail() {
    if (error_ == JsonDocument::Error::kNone) error_ = JsonDocument::Error::kSyntax;
    return false;
  }

  void SkipSpace() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
      ++pos_;
    }
  }

  bool Literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return Fail();
    pos_ += word.size();
    return true;
  }

  uint32_t Push(Type type) {
    Node n{};
    n.type = type;
    doc_->nodes_.push_back(n);
    return static_cast<uint32_t>(doc_->nodes_.size() - 1);
  }

  void Close(uint32_t index) {
    doc_->nodes_[index].end = static_cast<uint32_t>(doc_->nodes_.size());
  }

  bool Value(size_t depth) {
    if (pos_ >= text_.size()) return Fail();
    switch (text_[pos_]) {
      case '{':
        return Container(depth, /*object=*/true);
      case '[':
        return Container(depth, /*object=*/false);
      case '"': {
        uint32_t n = Push(Type::kString);
        if (!String(n)) return false;
        Close(n);
        return true;
      }
      case 't':
      case 'f': {
        bool value = text_[pos_] == 't';
        if (!Literal(value ? "true" : "false")) return false;
        uint32_t n = Push(Type::kBool);
        doc_->nodes_[n].b = value;
        Close(n);
        return true;
      }
      case 'n': {
        if (!Literal("null")) return false;
        Close(Push(Type::kNull));
        return true;
      }
      default:
        return Number();
    }
  }

  bool Container(size_t depth, bool object) {
    if (depth + 1 > max_depth_) {
      error_ = JsonDocument::Error::kTooDeep;
      return false;
    }
    const char close = object ? '}' : ']';
    uint32_t n = Push(object ? Type::kObject : Type::kArray);
    ++pos_;
    SkipSpace();
    uint32_t count = 0;
    if (pos_ < text_.size() && text_[pos_] == close) {
      ++pos_;
    } else {
      for (;;) {
        if (object) {
          if (pos_ >= text_.size() || text_[pos_] != '"') return Fail();
          uint32_t key = Push(Type::kString);
          doc_->nodes_[key].key = true;
          if (!String(key)) return false;
          Close(key);
          SkipSpace();
          if (pos_ >= text_.size() || text_[pos_] != ':') return Fail();
          ++pos_;
          SkipSpace();
        }
        if (!Value(depth + 1)) return false;
        ++count;
        SkipSpace();
        if (pos_ >= text_.size()) return Fail();
        if (text_[pos_] == ',') {
          ++pos_;
          SkipSpace();
          continue;
        }
        if (text_[pos_] != close) return Fail();
        ++pos_;
        break;
      }
    }
    doc_->nodes_[n].size = count;
    Close(n);
    return true;
  }

  static int Hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // Four hex digits after "\u", at pos_.
  bool Hex4(uint32_t* out) {
    if (pos_ + 4 > text_.size()) return false;
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      int h = Hex(text_[pos_ + k]);
      if (h < 0) return false;
      v = (v << 4) | static_cast<uint32_t>(h);
    }
    pos_ += 4;
    *out = v;
    return true;
  }

  // A string starting at the quote at pos_, unescaped into strings_.
  bool String(uint32_t node) {
    ++pos_;
    std::string& out = doc_->strings_;
    const size_t start = out.size();
    for (;;) {
      // Copy the run of plain characters up to the next quote, backslash or control byte.
      size_t run = pos_;
      while (run < text_.size()) {
        unsigned char c = static_cast<unsigned char>(text_[run]);
        if (c == '"' || c == '\\' || c < 0x20) break;
        if (c < 0x80) {
          ++run;
          continue;
        }
        size_t len = Utf8SequenceLength(text_, run);
        if (len == 0) return Fail();
        run += len;
      }
      out.append(text_.data() + pos_, run - pos_);
      pos_ = run;
      if (pos_ >= text_.size()) return Fail();
      char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        break;
      }
      if (c != '\\') return Fail();  // an unescaped control character
      if (++pos_ >= text_.size()) return Fail();
      char e = text_[pos_++];
      switch (e) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case '/': out.push_back('/'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': {
          uint32_t cp = 0;
          if (!Hex4(&cp)) return Fail();
          if (cp >= 0xdc00 && cp <= 0xdfff) return Fail();  // a low surrogate alone
          if (cp >= 0xd800 && cp <= 0xdbff) {
            uint32_t low = 0;
            if (pos_ + 2 > text_.size() || text_[pos_] != '\\' || text_[pos_ + 1] != 'u') {
              return Fail();
            }
            pos_ += 2;
            if (!Hex4(&low) || low < 0xdc00 || low > 0xdfff) return Fail();
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          }
          AppendUtf8(&doc_->strings_, cp);
          break;
        }
        default:
          return Fail();
      }
    }
    Node& n = doc_->nodes_[node];
    n.offset = static_cast<uint32_t>(start);
    n.size = static_cast<uint32_t>(out.size() - start);
    return true;
  }

  static bool Digit(char c) { return c >= '0' && c <= '9'; }

  bool Number() {
    const size_t start = pos_;
    if (pos_ < text_.size() && text_[pos_] == '-') ++pos_;
    if (pos_ >= text_.size() || !Digit(text_[pos_])) return Fail();
    if (text_[pos_] == '0') {
      ++pos_;
    } else {
      while (pos_ < text_.size() && Digit(text_[pos_])) ++pos_;
    }
    bool integral = true;
    if (pos_ < text_.size() && text_[pos_] == '.') {
      integral = false;
      ++pos_;
      if (pos_ >= text_.size() || !Digit(text_[pos_])) return Fail();
      while (pos_ < text_.size() && Digit(text_[pos_])) ++pos_;
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      integral = false;
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (pos_ >= text_.size() || !Digit(text_[pos_])) return Fail();
      while (pos_ < text_.size() && Digit(text_[pos_])) ++pos_;
    }
    const char* first = text_.data() + start;
    const char* last = text_.data() + pos_;
    if (integral) {
      int64_t i = 0;
      auto [ptr, ec] = std::from_chars(first, last, i);
      if (ec == std::errc() && ptr == last) {
        uint32_t n = Push(Type::kInt);
        doc_->nodes_[n].i = i;
        Close(n);
        return true;
      }
      // Too large for int64: read as a double, as JavaScript would.
    }
    double d = 0;
    auto [ptr, ec] = std::from_chars(first, last, d);
    if (ec == std::errc::result_out_of_range) {
      // Underflow reads as (nearly) zero; overflow is refused, as there is no JSON infinity.
      d = std::strtod(std::string(first, last).c_str(), nullptr);
      if (!std::isfinite(d)) return Fail();
    } else if (ec != std::errc() || ptr != last) {
      return Fail();
    }
    uint32_t n = Push(Type::kDouble);
    doc_->nodes_[n].d = d;
    Close(n);
    return true;
  }

  std::string_view text_;
  size_t pos_ = 0;
  size_t max_depth_;
  JsonDocument* doc_;
  JsonDocument::Error error_ = JsonDocument::Error::kNone;
};

Result<JsonDocument> JsonDocument::Parse(std::string_view text, size_t max_depth, Error* error) {
  JsonDocument doc;
  // Node indexes are 32 bits wide.
  if (text.size() >= (size_t{1} << 31)) {
    if (error != nullptr) *error = Error::kSyntax;
    return InvalidArgument("JSON text too large");
  }
  Error e = JsonParser(text, max_depth, &doc).Run();
  if (error != nullptr) *error = e;
  if (e == Error::kTooDeep) {
    return InvalidArgument("JSON nests arrays and objects deeper than " +
                           std::to_string(max_depth) + " levels");
  }
  if (e != Error::kNone) return InvalidArgument("malformed JSON");
  return doc;
}

JsonValue::Type JsonValue::type() const {
  return doc_ == nullptr ? Type::kNull : doc_->nodes_[index_].type;
}

bool JsonValue::bool_value() const { return is_bool() && doc_->nodes_[index_].b; }

int64_t JsonValue::int_value() const { return is_int() ? doc_->nodes_[index_].i : 0; }

double JsonValue::number() const {
  if (is_int()) return static_cast<double>(doc_->nodes_[index_].i);
  if (type() == Type::kDouble) return doc_->nodes_[index_].d;
  return 0;
}

std::string_view JsonValue::str() const {
  if (!is_string()) return {};
  const JsonDocument::Node& n = doc_->nodes_[index_];
  return std::string_view(doc_->strings_).substr(n.offset, n.size);
}

size_t JsonValue::size() const { return is_container() ? doc_->nodes_[index_].size : 0; }

JsonValue JsonValue::Find(std::string_view name) const {
  if (!is_object()) return {};
  const auto& nodes = doc_->nodes_;
  JsonValue found;
  for (uint32_t i = index_ + 1; i < nodes[index_].end;) {
    // A key, then its value.
    JsonValue key(doc_, i);
    uint32_t value = nodes[i].end;
    if (key.str() == name) found = JsonValue(doc_, value);
    i = nodes[value].end;
  }
  return found;
}

JsonValue JsonValue::Iterator::operator*() const {
  return JsonValue(doc_, skip_keys_ ? doc_->nodes_[index_].end : index_);
}

std::string JsonValue::Serialize() const {
  if (!is_container()) return Dump();
  std::string out(1, is_object() ? '{' : '[');
  bool first = true;
  for (auto it = begin(); it != end(); ++it) {
    if (!first) out += ',';
    first = false;
    if (is_object()) {
      AppendJsonString(&out, it.key());
      out += ':';
    }
    out += (*it).Serialize();
  }
  out += is_object() ? '}' : ']';
  return out;
}

std::string_view JsonValue::Iterator::key() const {
  return skip_keys_ ? JsonValue(doc_, index_).str() : std::string_view();
}

JsonValue::Iterator& JsonValue::Iterator::operator++() {
  uint32_t value = skip_keys_ ? doc_->nodes_[index_].end : index_;
  index_ = doc_->nodes_[value].end;
  return *this;
}

JsonValue::Iterator JsonValue::begin() const {
  if (!is_container()) return end();
  return Iterator(doc_, index_ + 1, is_object());
}

JsonValue::Iterator JsonValue::end() const {
  uint32_t past = doc_ == nullptr ? 0 : doc_->nodes_[index_].end;
  return Iterator(doc_, is_container() ? past : index_, is_object());
}

std::string_view JsonValue::TypeName() const {
  switch (type()) {
    case Type::kNull: return "null";
    case Type::kBool: return "boolean";
    case Type::kInt:
    case Type::kDouble: return "number";
    case Type::kString: return "string";
    case Type::kArray: return "array";
    case Type::kObject: return "object";
  }
  return "null";
}

std::string JsonValue::Dump() const {
  JsonWriter w;
  switch (type()) {
    case Type::kNull: w.Null(); break;
    case Type::kBool: w.Bool(bool_value()); break;
    case Type::kInt: w.Int(int_value()); break;
    case Type::kDouble: w.Double(number()); break;
    case Type::kString: w.String(str()); break;
    case Type::kArray:
    case Type::kObject: return std::string(TypeName());
  }
  return w.Take();
}

}  // namespace cairn
