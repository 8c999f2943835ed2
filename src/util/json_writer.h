// A small streaming JSON writer that appends to a std::string. Responses on hot paths (metric
// history, search results) are written with it instead of building a DOM: it allocates once per
// response, and doubles follow MLflow's wire rules (NaN and infinities as strings).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cairn {

class JsonWriter {
 public:
  JsonWriter() { out_.reserve(256); }

  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  // Writes an object key; the next call writes its value.
  JsonWriter& Key(std::string_view key);

  JsonWriter& String(std::string_view value);
  JsonWriter& Int(int64_t value);
  // Finite values as numbers (shortest round-trip form); NaN as "NaN", infinities as
  // "Infinity" and "-Infinity".
  JsonWriter& Double(double value);
  JsonWriter& Bool(bool value);
  JsonWriter& Null();
  // Inserts already-serialised JSON as a value.
  JsonWriter& Raw(std::string_view json);

  const std::string& str() const { return out_; }
  // Drops the text written so far but keeps the nesting state, so that a long document can be
  // sent in pieces: write, send str(), ClearBuffer(), write on.
  void ClearBuffer() { out_.clear(); }
  std::string Take() { return std::move(out_); }
  void Reserve(size_t n) { out_.reserve(n); }

 private:
  void Separate();

  std::string out_;
  // One entry per open container: whether it already holds an element.
  std::vector<bool> has_element_;
  bool after_key_ = false;
};

// Appends `s` as a quoted JSON string with the required escapes.
void AppendJsonString(std::string* out, std::string_view s);

}  // namespace cairn
