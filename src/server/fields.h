// Request fields, read the same way from a JSON body (POST, PATCH, DELETE) or from a query
// string (GET), with typed accessors whose errors name the field. Server-internal: this header
// brings in nlohmann/json, so only server .cc files include it.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/http_message.h"
#include "util/status.h"

namespace cairn::server {

using Json = nlohmann::json;

class Fields {
 public:
  // `object` must be a JSON object; `prefix` names it in errors ("metrics[2].").
  Fields(const Json* object, std::string prefix) : json_(object), prefix_(std::move(prefix)) {}
  explicit Fields(const QueryParams* query) : query_(query) {}

  bool Has(std::string_view name) const;
  Result<std::optional<std::string>> Str(std::string_view name) const;
  Result<std::string> RequiredStr(std::string_view name) const;
  // Accepts JSON integers and decimal strings (protobuf's JSON form of int64).
  Result<std::optional<int64_t>> Int(std::string_view name) const;
  Result<int64_t> RequiredInt(std::string_view name) const;
  // Accepts numbers and the strings "NaN", "Infinity", "-Infinity" and decimal numbers.
  Result<double> RequiredDouble(std::string_view name) const;
  // A repeated string: a JSON array, or a repeated query key.
  Result<std::vector<std::string>> StrList(std::string_view name) const;
  // A repeated message: a JSON array of objects (absent: empty).
  Result<std::vector<Fields>> Objects(std::string_view name) const;
  // A nested message: a JSON object (absent: nullopt).
  Result<std::optional<Fields>> Object(std::string_view name) const;
  // The run id under either of its names, run_id or run_uuid.
  Result<std::string> RunId() const;

 private:
  Status Invalid(std::string_view name, const Json& value, std::string_view expected) const;
  Status Invalid(std::string_view name, const std::string& value,
                 std::string_view expected) const;
  Status Missing(std::string_view name) const;
  const Json* Find(std::string_view name) const;
  const std::string* FindQuery(std::string_view name) const;

  const Json* json_ = nullptr;
  const QueryParams* query_ = nullptr;
  std::string prefix_;
};

// Request bodies nest at most this deep; MLflow's messages use five levels at most.
inline constexpr size_t kMaxJsonDepth = 32;

// Parses a request body as a JSON object ("" is {}); errors name the problem.
Result<Json> ParseJsonObject(std::string_view body);

}  // namespace cairn::server
