// Checks of names and values that every service applies the same way, worded as MLflow words
// them (clients match on the messages).
#pragma once

#include <cstddef>
#include <string_view>

#include "util/status.h"

namespace cairn::service {

// MLflow's words for a request parameter that is missing or of the wrong type
// (mlflow/server/handlers.py): `shown` is the value as Python prints it (strings bare), and
// `type_name` Python's name of its type ("str", "int", "list", ...).
Status MissingParameter(std::string_view name);
// What MLflow appends to messages about request parameters.
inline constexpr std::string_view kApiDocs =
    " See the API docs for more information about request parameters.";
Status InvalidParameter(std::string_view name, std::string_view shown, std::string_view type_name);

// Longest key of a tag, param or metric.
inline constexpr size_t kMaxKeyLength = 250;

// A tag, param or metric key (`kind` names it in messages: "tag", "param"): a safe alphabet,
// at most kMaxKeyLength bytes, and nothing that normalises to another path.
Status ValidateKey(std::string_view kind, std::string_view key);
// `value` of `key` at most `limit` bytes; `what` opens the message ("Tag", "Param").
Status ValidateLength(std::string_view what, std::string_view key, std::string_view value,
                      size_t limit);

}  // namespace cairn::service
