// A strict JSON reader for outside input (request bodies): RFC 8259 only, strings checked to be
// UTF-8, nesting bounded, and the whole text parsed into one flat array of nodes, so that
// reading a document costs a few allocations however many values it holds. Values are read
// through JsonValue handles, which stay valid while their JsonDocument lives where it was when
// they were taken (moving the document leaves them behind).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace cairn {

class JsonDocument;

// A value in a JsonDocument, or no value (an absent member).
class JsonValue {
 public:
  enum class Type : uint8_t { kNull, kBool, kInt, kDouble, kString, kArray, kObject };

  JsonValue() = default;

  bool exists() const { return doc_ != nullptr; }
  Type type() const;
  bool is_null() const { return type() == Type::kNull; }
  bool is_bool() const { return type() == Type::kBool; }
  // A number written without fraction or exponent that fits in int64.
  bool is_int() const { return type() == Type::kInt; }
  bool is_number() const { return type() == Type::kInt || type() == Type::kDouble; }
  bool is_string() const { return type() == Type::kString; }
  bool is_array() const { return type() == Type::kArray; }
  bool is_object() const { return type() == Type::kObject; }
  bool is_container() const { return is_array() || is_object(); }

  bool bool_value() const;
  int64_t int_value() const;   // is_int()
  double number() const;       // is_number(); an integer converted
  std::string_view str() const;  // is_string(); unescaped

  // Elements of an array or members of an object.
  size_t size() const;
  // An object's member named `name`; the last one when the name repeats (as JavaScript and
  // Python read such objects). No value when absent or when this is not an object.
  JsonValue Find(std::string_view name) const;

  // Walks an array's elements (or an object's member values) in order.
  class Iterator {
   public:
    JsonValue operator*() const;
    // The member's name, walking an object ("" for an array's element).
    std::string_view key() const;
    Iterator& operator++();
    bool operator!=(const Iterator& o) const { return index_ != o.index_; }

   private:
    friend class JsonValue;
    Iterator(const JsonDocument* doc, uint32_t index, bool skip_keys)
        : doc_(doc), index_(index), skip_keys_(skip_keys) {}
    const JsonDocument* doc_;
    uint32_t index_;
    bool skip_keys_;
  };
  Iterator begin() const;
  Iterator end() const;

  // A scalar as JSON text (strings quoted and escaped, doubles in their shortest round-trip
  // form with ".0" when integral); containers as "object" or "array".
  std::string Dump() const;
  // The value as compact JSON text, containers included.
  std::string Serialize() const;
  // "null", "boolean", "number", "string", "array" or "object".
  std::string_view TypeName() const;

 private:
  friend class JsonDocument;
  JsonValue(const JsonDocument* doc, uint32_t index) : doc_(doc), index_(index) {}
  const JsonDocument* doc_ = nullptr;
  uint32_t index_ = 0;
};

class JsonDocument {
 public:
  // Why a text was refused.
  enum class Error { kNone, kSyntax, kTooDeep };

  // Parses `text`; on failure `error` (when given) says why. Containers nest at most
  // `max_depth` levels.
  static Result<JsonDocument> Parse(std::string_view text, size_t max_depth,
                                    Error* error = nullptr);

  JsonValue root() const& { return JsonValue(this, 0); }
  // A handle into a document about to be destroyed would dangle.
  JsonValue root() const&& = delete;

  JsonDocument(JsonDocument&&) = default;
  JsonDocument& operator=(JsonDocument&&) = default;

 private:
  friend class JsonValue;
  friend class JsonParser;
  JsonDocument() = default;

  struct Node {
    JsonValue::Type type;
    bool key = false;       // a member name in an object
    uint32_t end = 0;       // the index after this value and everything inside it
    uint32_t size = 0;      // elements or members; a string's length
    union {
      int64_t i;
      double d;
      uint32_t offset;  // a string's bytes in strings_
      bool b;
    };
  };

  std::vector<Node> nodes_;
  std::string strings_;
};

}  // namespace cairn
