// Fuzz target for the JSON reader of request bodies, checked against nlohmann/json: both accept
// the same texts (up to the reader's nesting bound) and read the same values from them.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "util/json_reader.h"

namespace {

constexpr size_t kDepth = 64;

void Check(bool ok) {
  if (!ok) std::abort();
}

void Same(cairn::JsonValue ours, const nlohmann::json& theirs) {
  using Type = cairn::JsonValue::Type;
  switch (theirs.type()) {
    case nlohmann::json::value_t::null:
      return Check(ours.type() == Type::kNull);
    case nlohmann::json::value_t::boolean:
      return Check(ours.is_bool() && ours.bool_value() == theirs.get<bool>());
    case nlohmann::json::value_t::number_integer:
      return Check(ours.is_int() && ours.int_value() == theirs.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      if (ours.is_int()) return Check(ours.int_value() >= 0 &&
                                      static_cast<uint64_t>(ours.int_value()) ==
                                          theirs.get<uint64_t>());
      return Check(ours.is_number() &&
                   ours.number() == static_cast<double>(theirs.get<uint64_t>()));
    case nlohmann::json::value_t::number_float: {
      // nlohmann reads integers too large for 64 bits as floats, as the reader does.
      return Check(ours.is_number() && ours.number() == theirs.get<double>());
    }
    case nlohmann::json::value_t::string:
      return Check(ours.is_string() && ours.str() == theirs.get_ref<const std::string&>());
    case nlohmann::json::value_t::array: {
      Check(ours.is_array() && ours.size() == theirs.size());
      size_t i = 0;
      for (cairn::JsonValue e : ours) Same(e, theirs[i++]);
      return Check(i == theirs.size());
    }
    case nlohmann::json::value_t::object: {
      // Repeated names: both keep the last.
      Check(ours.is_object() && ours.size() >= theirs.size());
      for (const auto& [key, value] : theirs.items()) Same(ours.Find(key), value);
      return;
    }
    default:
      std::abort();
  }
}

size_t Depth(std::string_view text) {
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  cairn::JsonDocument::Error error = cairn::JsonDocument::Error::kNone;
  cairn::Result<cairn::JsonDocument> ours = cairn::JsonDocument::Parse(text, kDepth, &error);
  if (ours.ok()) {
    for (cairn::JsonValue v : ours->root()) (void)v.Dump();
    (void)ours->root().Dump();
  }
  if (Depth(text) > kDepth) return 0;  // nlohmann has no bound to compare with
  // nlohmann stops at a NUL byte as if the text ended there; the reader refuses what follows.
  if (text.find('\0') != std::string_view::npos) return 0;
  nlohmann::json theirs = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  Check(ours.ok() != theirs.is_discarded());
  if (ours.ok()) Same(ours->root(), theirs);
  return 0;
}
