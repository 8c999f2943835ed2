#include "server/fields.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "service/validation.h"
#include "util/json_writer.h"
#include "util/strings.h"

namespace cairn::server {
namespace {

bool ParseInt(std::string_view text, int64_t* out) {
  if (text.empty()) return false;
  auto r = std::from_chars(text.data(), text.data() + text.size(), *out);
  return r.ec == std::errc() && r.ptr == text.data() + text.size();
}

bool ParseDouble(std::string_view text, double* out) {
  if (text == "NaN" || text == "nan") {
    *out = std::numeric_limits<double>::quiet_NaN();
  } else if (text == "Infinity" || text == "inf") {
    *out = std::numeric_limits<double>::infinity();
  } else if (text == "-Infinity" || text == "-inf") {
    *out = -std::numeric_limits<double>::infinity();
  } else {
    if (text.empty()) return false;
    auto r = std::from_chars(text.data(), text.data() + text.size(), *out);
    return r.ec == std::errc() && r.ptr == text.data() + text.size();
  }
  return true;
}

// Python's repr of a string: single quotes unless it holds one and no double quote.
std::string PyStrRepr(std::string_view s) {
  const char quote =
      s.find('\'') != std::string_view::npos && s.find('"') == std::string_view::npos ? '"' : '\'';
  std::string out(1, quote);
  for (char c : s) {
    if (c == '\\' || c == quote) {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += c;
    }
  }
  return out + quote;
}

std::string PyFloat(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), d);
  std::string out(buf, r.ptr);
  if (out.find_first_of(".e") == std::string::npos) out += ".0";
  return out;
}

// A JSON value as Python prints it in an f-string, which is how MLflow's messages show values:
// a string bare at the top, repr'd inside a list or dict.
std::string PyShown(JsonValue v, bool top) {
  switch (v.type()) {
    case JsonValue::Type::kNull:
      return "None";
    case JsonValue::Type::kBool:
      return v.bool_value() ? "True" : "False";
    case JsonValue::Type::kInt:
      return std::to_string(v.int_value());
    case JsonValue::Type::kDouble:
      return PyFloat(v.number());
    case JsonValue::Type::kString:
      return top ? std::string(v.str()) : PyStrRepr(v.str());
    case JsonValue::Type::kArray: {
      std::string out = "[";
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (out.size() > 1) out += ", ";
        out += PyShown(*it, false);
      }
      return out + "]";
    }
    case JsonValue::Type::kObject: {
      std::string out = "{";
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (out.size() > 1) out += ", ";
        out += PyStrRepr(it.key()) + ": " + PyShown(*it, false);
      }
      return out + "}";
    }
  }
  return "None";
}

std::string_view PyTypeName(JsonValue v) {
  switch (v.type()) {
    case JsonValue::Type::kNull:
      return "NoneType";
    case JsonValue::Type::kBool:
      return "bool";
    case JsonValue::Type::kInt:
      return "int";
    case JsonValue::Type::kDouble:
      return "float";
    case JsonValue::Type::kString:
      return "str";
    case JsonValue::Type::kArray:
      return "list";
    case JsonValue::Type::kObject:
      return "dict";
  }
  return "NoneType";
}

// Values this long are cut in messages.
constexpr size_t kMaxShown = 200;

}  // namespace

Result<JsonDocument> ParseJsonObject(std::string_view body) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) body = "{}";
  JsonDocument::Error error = JsonDocument::Error::kNone;
  Result<JsonDocument> doc = JsonDocument::Parse(body, kMaxJsonDepth, &error);
  if (error == JsonDocument::Error::kTooDeep) {
    return InvalidArgument("The request body nests arrays and objects deeper than " +
                           std::to_string(kMaxJsonDepth) + " levels");
  }
  if (!doc.ok()) return InvalidArgument("Malformed JSON in request body: it could not be parsed");
  if (!doc->root().is_object()) return InvalidArgument("The request body must be a JSON object");
  return doc;
}

std::string Fields::Prefix() const {
  if (parent_ == nullptr) return "";
  std::string out = parent_->Prefix() + name_;
  if (index_ != kNoIndex) out += "[" + std::to_string(index_) + "]";
  return out + ".";
}

JsonValue Fields::Find(std::string_view name) const {
  JsonValue v = json_.Find(name);
  return v.exists() && !v.is_null() ? v : JsonValue();
}

const std::string* Fields::FindQuery(std::string_view name) const {
  auto it = query_->find(std::string(name));
  return it == query_->end() ? nullptr : &it->second;
}

bool Fields::Has(std::string_view name) const {
  return is_json() ? Find(name).exists() : FindQuery(name) != nullptr;
}

Status Fields::Invalid(std::string_view name, std::string shown, std::string_view type_name) const {
  if (shown.size() > kMaxShown) shown = shown.substr(0, kMaxShown) + "...";
  return service::InvalidParameter(Prefix() + std::string(name), shown, type_name);
}

Status Fields::Invalid(std::string_view name, JsonValue value) const {
  return Invalid(name, PyShown(value, true), PyTypeName(value));
}

Status Fields::Missing(std::string_view name) const {
  return service::MissingParameter(Prefix() + std::string(name));
}

Result<std::optional<std::string>> Fields::Str(std::string_view name) const {
  if (!is_json()) {
    const std::string* v = FindQuery(name);
    if (v == nullptr) return std::optional<std::string>();
    return std::optional<std::string>(*v);
  }
  JsonValue v = Find(name);
  if (!v.exists()) return std::optional<std::string>();
  if (!v.is_string()) return Invalid(name, v);
  return std::optional<std::string>(std::string(v.str()));
}

Result<std::string> Fields::RequiredStr(std::string_view name) const {
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> v, Str(name));
  if (!v) return Missing(name);
  return std::move(*v);
}

Result<std::optional<int64_t>> Fields::Int(std::string_view name) const {
  int64_t out = 0;
  if (!is_json()) {
    const std::string* v = FindQuery(name);
    if (v == nullptr) return std::optional<int64_t>();
    if (!ParseInt(*v, &out)) return Invalid(name, *v, "str");
    return std::optional<int64_t>(out);
  }
  JsonValue v = Find(name);
  if (!v.exists()) return std::optional<int64_t>();
  if (v.is_int()) return std::optional<int64_t>(v.int_value());
  if (v.is_number()) {
    double d = v.number();
    if (std::trunc(d) == d && std::abs(d) < 9.2e18) {
      return std::optional<int64_t>(static_cast<int64_t>(d));
    }
  }
  if (v.is_string() && ParseInt(v.str(), &out)) return std::optional<int64_t>(out);
  return Invalid(name, v);
}

Result<int64_t> Fields::RequiredInt(std::string_view name) const {
  CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> v, Int(name));
  if (!v) return Missing(name);
  return *v;
}

Result<std::optional<bool>> Fields::Bool(std::string_view name) const {
  auto parse = [](std::string_view text) -> std::optional<bool> {
    const std::string lower = AsciiLower(text);
    if (lower == "true") return true;
    if (lower == "false") return false;
    return std::nullopt;
  };
  if (!is_json()) {
    const std::string* v = FindQuery(name);
    if (v == nullptr) return std::optional<bool>();
    if (std::optional<bool> b = parse(*v)) return b;
    return Invalid(name, *v, "str");
  }
  JsonValue v = Find(name);
  if (!v.exists()) return std::optional<bool>();
  if (v.is_bool()) return std::optional<bool>(v.bool_value());
  if (v.is_string()) {
    if (std::optional<bool> b = parse(v.str())) return b;
  }
  return Invalid(name, v);
}

Result<double> Fields::RequiredDouble(std::string_view name) const {
  double out = 0;
  if (!is_json()) {
    const std::string* v = FindQuery(name);
    if (v == nullptr) return Missing(name);
    if (!ParseDouble(*v, &out)) return Invalid(name, *v, "str");
    return out;
  }
  JsonValue v = Find(name);
  if (!v.exists()) return Missing(name);
  if (v.is_number()) return v.number();
  if (v.is_string() && ParseDouble(v.str(), &out)) return out;
  return Invalid(name, v);
}

Result<std::vector<std::string>> Fields::StrList(std::string_view name) const {
  std::vector<std::string> out;
  if (!is_json()) {
    auto [begin, end] = query_->equal_range(std::string(name));
    for (auto it = begin; it != end; ++it) out.push_back(it->second);
    return out;
  }
  JsonValue v = Find(name);
  if (!v.exists()) return out;
  if (v.is_string()) {
    out.emplace_back(v.str());
    return out;
  }
  if (!v.is_array()) return Invalid(name, v);
  out.reserve(v.size());
  for (JsonValue e : v) {
    if (!e.is_string()) return Invalid(name, v);
    out.emplace_back(e.str());
  }
  return out;
}

Result<std::vector<Fields>> Fields::Objects(std::string_view name) const {
  std::vector<Fields> out;
  if (!is_json()) {
    if (FindQuery(name) != nullptr) {
      return InvalidArgument("Parameter '" + std::string(name) +
                             "' must be sent in a JSON body, not in the query string");
    }
    return out;
  }
  JsonValue v = Find(name);
  if (!v.exists()) return out;
  if (!v.is_array()) return Invalid(name, v);
  out.reserve(v.size());
  size_t i = 0;
  for (JsonValue e : v) {
    if (!e.is_object()) return Invalid(std::string(name) + "[" + std::to_string(i) + "]", e);
    out.push_back(Fields(e, this, name, i++));
  }
  return out;
}

Result<std::optional<Fields>> Fields::Object(std::string_view name) const {
  if (!is_json()) return std::optional<Fields>();
  JsonValue v = Find(name);
  if (!v.exists()) return std::optional<Fields>();
  if (!v.is_object()) return Invalid(name, v);
  return std::optional<Fields>(Fields(v, this, name, kNoIndex));
}

Result<std::optional<std::string>> Fields::ObjectJson(std::string_view name) const {
  if (!is_json()) return std::optional<std::string>();
  JsonValue v = Find(name);
  if (!v.exists()) return std::optional<std::string>();
  if (!v.is_object()) return Invalid(name, v);
  return std::optional<std::string>(v.Serialize());
}

Result<std::string> Fields::RunId() const {
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> id, Str("run_id"));
  if (id && !id->empty()) return std::move(*id);
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> uuid, Str("run_uuid"));
  if (uuid && !uuid->empty()) return std::move(*uuid);
  return Missing("run_id");
}

Result<std::vector<core::Tag>> DecodeTags(const Fields& f, std::string_view name) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<Fields> items, f.Objects(name));
  std::vector<core::Tag> tags;
  tags.reserve(items.size());
  for (const Fields& item : items) {
    CAIRN_ASSIGN_OR_RETURN(std::string key, item.RequiredStr("key"));
    CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> value, item.Str("value"));
    tags.push_back({std::move(key), value.value_or("")});
  }
  return tags;
}

Result<core::Metric> DecodeMetric(const Fields& f) {
  core::Metric m;
  CAIRN_ASSIGN_OR_RETURN(m.key, f.RequiredStr("key"));
  CAIRN_ASSIGN_OR_RETURN(m.value, f.RequiredDouble("value"));
  CAIRN_ASSIGN_OR_RETURN(m.timestamp, f.RequiredInt("timestamp"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> step, f.Int("step"));
  m.step = step.value_or(0);
  return m;
}

}  // namespace cairn::server
