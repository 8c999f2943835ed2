// Lenient readers of the fields of a server's JSON answers: a missing field or one of another
// type reads as empty, so that a server that adds or omits a field never breaks a client.
// Only the client's .cc files include this (it brings in nlohmann/json.hpp).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/model.h"

namespace cairn::client {

// A string field; "" when missing or not a string.
std::string JsonStr(const nlohmann::json& j, const char* key);
// An integer field, also when sent as a decimal string (MLflow's int64s); 0 otherwise.
int64_t JsonInt(const nlohmann::json& j, const char* key);
// A number field; MLflow's "NaN", "Infinity" and "-Infinity" strings are read as such.
double JsonNumber(const nlohmann::json& j, const char* key);
// A non-empty object field as JSON text; "" otherwise.
std::string JsonObjectText(const nlohmann::json& j, const char* key);
// The strings of an array field; other elements are skipped.
std::vector<std::string> JsonStrings(const nlohmann::json& j, const char* key);

// Dataset inputs as runs/log-inputs takes them (its "datasets" array), and back; the run
// journal keeps them in this form.
nlohmann::json InputsJson(const std::vector<core::DatasetInput>& inputs);
std::vector<core::DatasetInput> DecodeInputs(const nlohmann::json& datasets);

}  // namespace cairn::client
