#include "server/fields.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

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

}  // namespace

// The deepest nesting of arrays and objects in `text`, strings skipped. nlohmann's parser and
// dump() recurse once per level, so depth is checked before parsing.
size_t NestingDepth(std::string_view text) {
  size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

Result<Json> ParseJsonObject(std::string_view body) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return Json::object();
  if (NestingDepth(body) > kMaxJsonDepth) {
    return InvalidArgument("The request body nests arrays and objects deeper than " +
                           std::to_string(kMaxJsonDepth) + " levels");
  }
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return InvalidArgument("Malformed JSON in request body: it could not be parsed");
  }
  if (!j.is_object()) return InvalidArgument("The request body must be a JSON object");
  return j;
}

const Json* Fields::Find(std::string_view name) const {
  auto it = json_->find(name);
  if (it == json_->end() || it->is_null()) return nullptr;
  return &*it;
}

const std::string* Fields::FindQuery(std::string_view name) const {
  auto it = query_->find(std::string(name));
  return it == query_->end() ? nullptr : &it->second;
}

bool Fields::Has(std::string_view name) const {
  return json_ != nullptr ? Find(name) != nullptr : FindQuery(name) != nullptr;
}

Status Fields::Invalid(std::string_view name, const Json& value,
                       std::string_view expected) const {
  std::string shown = value.is_structured()
                          ? std::string("of type ") + value.type_name()
                          : value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (shown.size() > 100) shown = shown.substr(0, 100) + "...";
  return InvalidArgument("Invalid value " + shown + " for parameter '" + prefix_ +
                         std::string(name) + "' supplied: expected " + std::string(expected));
}

Status Fields::Invalid(std::string_view name, const std::string& value,
                       std::string_view expected) const {
  return Invalid(name, Json(value), expected);
}

Status Fields::Missing(std::string_view name) const {
  return InvalidArgument("Missing value for required parameter '" + prefix_ + std::string(name) +
                         "'.");
}

Result<std::optional<std::string>> Fields::Str(std::string_view name) const {
  if (json_ == nullptr) {
    const std::string* v = FindQuery(name);
    if (v == nullptr) return std::optional<std::string>();
    return std::optional<std::string>(*v);
  }
  const Json* v = Find(name);
  if (v == nullptr) return std::optional<std::string>();
  if (!v->is_string()) return Invalid(name, *v, "a string");
  return std::optional<std::string>(v->get<std::string>());
}

Result<std::string> Fields::RequiredStr(std::string_view name) const {
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> v, Str(name));
  if (!v) return Missing(name);
  return std::move(*v);
}

Result<std::optional<int64_t>> Fields::Int(std::string_view name) const {
  int64_t out = 0;
  if (json_ == nullptr) {
    const std::string* v = FindQuery(name);
    if (v == nullptr) return std::optional<int64_t>();
    if (!ParseInt(*v, &out)) return Invalid(name, *v, "an integer");
    return std::optional<int64_t>(out);
  }
  const Json* v = Find(name);
  if (v == nullptr) return std::optional<int64_t>();
  if (v->is_number_integer()) return std::optional<int64_t>(v->get<int64_t>());
  if (v->is_number_float()) {
    double d = v->get<double>();
    if (std::trunc(d) == d && std::abs(d) < 9.2e18) {
      return std::optional<int64_t>(static_cast<int64_t>(d));
    }
  }
  if (v->is_string() && ParseInt(v->get_ref<const std::string&>(), &out)) {
    return std::optional<int64_t>(out);
  }
  return Invalid(name, *v, "an integer");
}

Result<int64_t> Fields::RequiredInt(std::string_view name) const {
  CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> v, Int(name));
  if (!v) return Missing(name);
  return *v;
}

Result<double> Fields::RequiredDouble(std::string_view name) const {
  double out = 0;
  if (json_ == nullptr) {
    const std::string* v = FindQuery(name);
    if (v == nullptr) return Missing(name);
    if (!ParseDouble(*v, &out)) return Invalid(name, *v, "a number");
    return out;
  }
  const Json* v = Find(name);
  if (v == nullptr) return Missing(name);
  if (v->is_number()) return v->get<double>();
  if (v->is_string() && ParseDouble(v->get_ref<const std::string&>(), &out)) return out;
  return Invalid(name, *v, "a number");
}

Result<std::vector<std::string>> Fields::StrList(std::string_view name) const {
  std::vector<std::string> out;
  if (json_ == nullptr) {
    auto [begin, end] = query_->equal_range(std::string(name));
    for (auto it = begin; it != end; ++it) out.push_back(it->second);
    return out;
  }
  const Json* v = Find(name);
  if (v == nullptr) return out;
  if (v->is_string()) {
    out.push_back(v->get<std::string>());
    return out;
  }
  if (!v->is_array()) return Invalid(name, *v, "a list of strings");
  for (const Json& e : *v) {
    if (!e.is_string()) return Invalid(name, *v, "a list of strings");
    out.push_back(e.get<std::string>());
  }
  return out;
}

Result<std::vector<Fields>> Fields::Objects(std::string_view name) const {
  std::vector<Fields> out;
  if (json_ == nullptr) {
    if (FindQuery(name) != nullptr) {
      return InvalidArgument("Parameter '" + std::string(name) +
                             "' must be sent in a JSON body, not in the query string");
    }
    return out;
  }
  const Json* v = Find(name);
  if (v == nullptr) return out;
  if (!v->is_array()) return Invalid(name, *v, "a list of objects");
  out.reserve(v->size());
  for (size_t i = 0; i < v->size(); ++i) {
    const Json& e = (*v)[i];
    std::string where = prefix_ + std::string(name) + "[" + std::to_string(i) + "]";
    if (!e.is_object()) {
      return InvalidArgument("Invalid value for parameter '" + where + "': expected an object");
    }
    out.emplace_back(&e, where + ".");
  }
  return out;
}

Result<std::optional<Fields>> Fields::Object(std::string_view name) const {
  if (json_ == nullptr) return std::optional<Fields>();
  const Json* v = Find(name);
  if (v == nullptr) return std::optional<Fields>();
  if (!v->is_object()) return Invalid(name, *v, "an object");
  return std::optional<Fields>(Fields(v, prefix_ + std::string(name) + "."));
}

Result<std::string> Fields::RunId() const {
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> id, Str("run_id"));
  if (id && !id->empty()) return std::move(*id);
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> uuid, Str("run_uuid"));
  if (uuid && !uuid->empty()) return std::move(*uuid);
  return Missing("run_id");
}

}  // namespace cairn::server
