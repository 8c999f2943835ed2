// Request fields, read the same way from a JSON body (POST, PATCH, DELETE) or from a query
// string (GET), with typed accessors whose errors name the field.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "server/http_message.h"
#include "util/json_reader.h"
#include "util/status.h"

namespace cairn::server {

class Fields {
 public:
  // The fields of a request body, whose root is an object (ParseJsonObject).
  explicit Fields(const JsonDocument& body) : json_(body.root()) {}
  explicit Fields(const QueryParams* query) : query_(query) {}

  bool Has(std::string_view name) const;
  Result<std::optional<std::string>> Str(std::string_view name) const;
  Result<std::string> RequiredStr(std::string_view name) const;
  // Accepts JSON integers and decimal strings (protobuf's JSON form of int64).
  Result<std::optional<int64_t>> Int(std::string_view name) const;
  Result<int64_t> RequiredInt(std::string_view name) const;
  // Accepts JSON booleans and the strings "true" and "false" (any case).
  Result<std::optional<bool>> Bool(std::string_view name) const;
  // Accepts numbers and the strings "NaN", "Infinity", "-Infinity" and decimal numbers.
  Result<double> RequiredDouble(std::string_view name) const;
  // A repeated string: a JSON array, or a repeated query key.
  Result<std::vector<std::string>> StrList(std::string_view name) const;
  // A repeated message: a JSON array of objects (absent: empty). The fields returned name
  // themselves in errors through this one ("metrics[2].key"), so they must not outlive it.
  Result<std::vector<Fields>> Objects(std::string_view name) const;
  // A nested message: a JSON object (absent: nullopt); must not outlive this one either.
  Result<std::optional<Fields>> Object(std::string_view name) const;
  // A nested JSON object kept whole, as compact JSON text (absent: nullopt).
  Result<std::optional<std::string>> ObjectJson(std::string_view name) const;
  // The run id under either of its names, run_id or run_uuid.
  Result<std::string> RunId() const;

 private:
  static constexpr size_t kNoIndex = static_cast<size_t>(-1);
  Fields(JsonValue object, const Fields* parent, std::string_view name, size_t index)
      : json_(object), parent_(parent), name_(std::string(name)), index_(index) {}

  // How a field of this message is named in errors: "" at the top, "metrics[2]." below.
  std::string Prefix() const;
  // MLflow's message for a value of the wrong type, showing it as Python would.
  Status Invalid(std::string_view name, std::string shown, std::string_view type_name) const;
  Status Invalid(std::string_view name, JsonValue value) const;
  Status Missing(std::string_view name) const;
  JsonValue Find(std::string_view name) const;
  const std::string* FindQuery(std::string_view name) const;
  bool is_json() const { return query_ == nullptr; }

  JsonValue json_;
  const QueryParams* query_ = nullptr;
  const Fields* parent_ = nullptr;  // the message holding this one
  std::string name_;                // this message's field in its parent
  size_t index_ = kNoIndex;         // its place in a repeated field
};

// A repeated {key, value} message (tags, params); a missing value is "".
Result<std::vector<core::Tag>> DecodeTags(const Fields& f, std::string_view name);
// A metric message: key, value, timestamp and step.
Result<core::Metric> DecodeMetric(const Fields& f);

// Request bodies nest at most this deep; MLflow's messages use five levels at most.
inline constexpr size_t kMaxJsonDepth = 32;

// Parses a request body as a JSON object ("" is {}); errors name the problem.
Result<JsonDocument> ParseJsonObject(std::string_view body);

}  // namespace cairn::server
