#include "core/task_spec.h"

#include "util/json_reader.h"
#include "util/json_writer.h"
#include "util/strings.h"

namespace cairn::core {
namespace {

std::string Str(const JsonValue& object, std::string_view key) {
  JsonValue v = object.Find(key);
  return v.exists() && v.is_string() ? std::string(v.str()) : std::string();
}

int64_t Int(const JsonValue& object, std::string_view key) {
  JsonValue v = object.Find(key);
  return v.exists() && v.is_int() ? v.int_value() : 0;
}

}  // namespace

std::string TaskSpecJson(const TaskSpec& spec) {
  JsonWriter w;
  w.BeginObject().Key("command").BeginArray();
  for (const std::string& arg : spec.command) w.String(arg);
  w.EndArray().Key("params").BeginObject();
  for (const auto& [name, value] : spec.params) w.Key(name).String(value);
  w.EndObject();
  if (!spec.code.snapshot.empty()) {
    const TaskCode& c = spec.code;
    w.Key("code").BeginObject();
    w.Key("snapshot").String(c.snapshot).Key("run_id").String(c.run_id).Key("cwd").String(c.cwd);
    w.Key("files").Int(c.files).Key("bytes").Int(c.bytes);
    if (!c.commit.empty()) w.Key("commit").String(c.commit);
    if (!c.branch.empty()) w.Key("branch").String(c.branch);
    if (!c.remote_url.empty()) w.Key("remote_url").String(c.remote_url);
    w.Key("dirty").Bool(c.dirty);
    w.EndObject();
  }
  if (!spec.environment.run_id.empty()) {
    w.Key("environment").BeginObject();
    w.Key("run_id").String(spec.environment.run_id);
    w.Key("lock_hash").String(spec.environment.lock_hash);
    w.EndObject();
  }
  if (!spec.reproduce.of.empty()) {
    w.Key("reproduce").BeginObject().Key("of").String(spec.reproduce.of);
    w.Key("options").Raw(ReproduceOptionsJson(spec.reproduce.options)).EndObject();
  }
  w.EndObject();
  return w.Take();
}

Result<TaskSpec> ParseTaskSpec(std::string_view json) {
  CAIRN_ASSIGN_OR_RETURN(JsonDocument doc, JsonDocument::Parse(json, 16));
  JsonValue root = doc.root();
  if (!root.is_object()) return InvalidArgument("the task's spec is not a JSON object");
  TaskSpec spec;
  JsonValue command = root.Find("command");
  if (command.exists() && command.is_array()) {
    for (JsonValue arg : command) {
      if (!arg.is_string()) return InvalidArgument("the task's command holds a non-string");
      spec.command.emplace_back(arg.str());
    }
  }
  if (spec.command.empty()) return InvalidArgument("the task's spec names no command");
  JsonValue params = root.Find("params");
  if (params.exists() && params.is_object()) {
    for (auto it = params.begin(); it != params.end(); ++it) {
      JsonValue v = *it;
      if (!v.is_string()) {
        return InvalidArgument("the task's parameter '" + std::string(it.key()) +
                               "' is not a string");
      }
      spec.params[std::string(it.key())] = std::string(v.str());
    }
  }
  if (JsonValue code = root.Find("code"); code.exists() && code.is_object()) {
    TaskCode& c = spec.code;
    c.snapshot = Str(code, "snapshot");
    c.run_id = Str(code, "run_id");
    c.cwd = Str(code, "cwd");
    c.files = Int(code, "files");
    c.bytes = Int(code, "bytes");
    c.commit = Str(code, "commit");
    c.branch = Str(code, "branch");
    c.remote_url = Str(code, "remote_url");
    JsonValue dirty = code.Find("dirty");
    c.dirty = dirty.exists() && dirty.is_bool() && dirty.bool_value();
    if (c.snapshot.empty() || c.run_id.empty()) {
      return InvalidArgument("the task's code names no snapshot or no run");
    }
  }
  if (JsonValue env = root.Find("environment"); env.exists() && env.is_object()) {
    spec.environment.run_id = Str(env, "run_id");
    spec.environment.lock_hash = Str(env, "lock_hash");
    if (spec.environment.run_id.empty() || spec.environment.lock_hash.empty()) {
      return InvalidArgument("the task's environment names no run or no lock hash");
    }
  }
  if (JsonValue r = root.Find("reproduce"); r.exists() && r.is_object()) {
    spec.reproduce.of = Str(r, "of");
    if (spec.reproduce.of.empty()) {
      return InvalidArgument("the task's reproduce names no run to compare with ('of')");
    }
    if (JsonValue options = r.Find("options"); options.exists()) {
      Result<ReproduceOptions> parsed = ParseReproduceOptions(options.Serialize());
      if (!parsed.ok()) return parsed.status().WithContext("the task's reproduce");
      spec.reproduce.options = *std::move(parsed);
    }
  }
  return spec;
}

std::vector<std::string> TaskSpecRuns(std::string_view json) {
  std::vector<std::string> out;
  Result<JsonDocument> doc = JsonDocument::Parse(json, 16);
  if (!doc.ok() || !doc->root().is_object()) return out;
  for (auto [part, field] : {std::pair{"code", "run_id"}, std::pair{"environment", "run_id"},
                             std::pair{"reproduce", "of"}}) {
    JsonValue object = doc->root().Find(part);
    if (!object.exists() || !object.is_object()) continue;
    JsonValue id = object.Find(field);
    if (id.exists() && id.is_string() && !id.str().empty()) out.emplace_back(id.str());
  }
  return out;
}

std::vector<std::string> SubstituteParams(const std::vector<std::string>& command,
                                          const std::map<std::string, std::string>& params) {
  std::vector<std::string> out;
  out.reserve(command.size());
  for (std::string text : command) {
    // One pass left to right: a value that holds "${params." is not expanded again.
    std::string expanded;
    size_t at = 0;
    while (at < text.size()) {
      size_t ref = text.find("${params.", at);
      size_t close = ref == std::string::npos ? std::string::npos : text.find('}', ref);
      if (close == std::string::npos) {
        expanded += text.substr(at);
        break;
      }
      const std::string name = text.substr(ref + 9, close - ref - 9);
      auto it = params.find(name);
      expanded += text.substr(at, ref - at);
      expanded += it != params.end() ? it->second : text.substr(ref, close + 1 - ref);
      at = close + 1;
    }
    out.push_back(std::move(expanded));
  }
  return out;
}

std::string ParamVariable(std::string_view name) {
  std::string out = "CAIRN_PARAM_";
  for (char c : name) out.push_back(IsAsciiLower(c) ? static_cast<char>(c - 'a' + 'A') : IsAsciiAlnum(c) ? c : '_');
  return out;
}

}  // namespace cairn::core
