#include "report/model_report.h"

#include <algorithm>

#include "core/mlflow_json.h"
#include "report/run_report_internal.h"
#include "util/json_writer.h"

namespace cairn::report {
namespace {

using internal::KeyValueBlock;

std::string AliasList(const core::RegisteredModel& model) {
  std::string out;
  for (const core::ModelAlias& a : model.aliases) {
    if (!out.empty()) out += " ";
    out += a.alias + "=" + std::to_string(a.version);
  }
  return out;
}

std::string Joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string StatusText(const core::ModelVersion& v) {
  std::string out(core::ModelVersionStatusName(v.status));
  if (!v.status_message.empty()) out += ": " + v.status_message;
  return out;
}

}  // namespace

std::string FormatModelTable(std::span<const core::RegisteredModel> models,
                             const OutputStyle& style, int64_t now_millis) {
  Table table;
  table.columns = {{"NAME"}, {"LATEST", true, false}, {"ALIASES"}, {"UPDATED", false, false}};
  for (const core::RegisteredModel& m : models) {
    int64_t latest = 0;
    for (const core::ModelVersion& v : m.latest_versions) latest = std::max(latest, v.version);
    table.rows.push_back({m.name, latest > 0 ? std::to_string(latest) : "-",
                          AliasList(m).empty() ? "-" : AliasList(m),
                          FormatCompactTime(m.last_updated_timestamp, now_millis)});
  }
  if (table.rows.empty()) return "no registered models\n";
  return RenderTable(table, style);
}

std::string ModelsJsonLines(std::span<const core::RegisteredModel> models) {
  std::string out;
  for (const core::RegisteredModel& m : models) {
    JsonWriter w;
    core::WriteRegisteredModel(w, m);
    out += w.Take() + "\n";
  }
  return out;
}

std::string FormatModelDetails(const core::RegisteredModel& model,
                               std::span<const core::ModelVersion> versions,
                               const OutputStyle& style, int64_t now_millis) {
  std::vector<std::pair<std::string, std::string>> head = {{"model", model.name}};
  if (!model.description.empty()) head.push_back({"description", model.description});
  if (!model.user_id.empty()) head.push_back({"created by", model.user_id});
  head.push_back({"created", FormatFullTime(model.creation_timestamp)});
  head.push_back({"updated", FormatFullTime(model.last_updated_timestamp)});
  if (!model.aliases.empty()) head.push_back({"aliases", AliasList(model)});
  std::string out = KeyValueBlock(head, "");
  if (!model.tags.empty()) {
    std::vector<std::pair<std::string, std::string>> tags;
    for (const core::Tag& t : model.tags) tags.push_back({t.key, t.value});
    out += "\ntags\n" + KeyValueBlock(tags, "  ");
  }
  Table table;
  table.columns = {{"VERSION", true, false},
                   {"STAGE", false, false},
                   {"STATUS", false, false},
                   {"ALIASES"},
                   {"RUN", false, false},
                   {"CREATED", false, false},
                   {"SOURCE"}};
  for (const core::ModelVersion& v : versions) {
    std::vector<std::string> aliases;
    for (const core::ModelAlias& a : model.aliases) {
      if (a.version == v.version) aliases.push_back(a.alias);
    }
    table.rows.push_back({std::to_string(v.version),
                          std::string(core::ModelStageName(v.current_stage)), StatusText(v),
                          aliases.empty() ? "-" : Joined(aliases),
                          v.run_id.empty() ? "-" : ShortRunId(v.run_id),
                          FormatCompactTime(v.creation_timestamp, now_millis), v.source});
  }
  out += "\n";
  out += table.rows.empty() ? "no versions\n" : RenderTable(table, style);
  return out;
}

std::string FormatVersionDetails(const core::ModelVersion& v, const std::optional<RunDetails>& run,
                                 const OutputStyle& style, int64_t now_millis) {
  std::vector<std::pair<std::string, std::string>> head = {
      {"model", v.name},
      {"version", std::to_string(v.version)},
      {"stage", std::string(core::ModelStageName(v.current_stage))},
      {"status", StatusText(v)}};
  if (!v.aliases.empty()) head.push_back({"aliases", Joined(v.aliases)});
  if (!v.description.empty()) head.push_back({"description", v.description});
  if (!v.user_id.empty()) head.push_back({"created by", v.user_id});
  head.push_back({"created", FormatFullTime(v.creation_timestamp)});
  head.push_back({"source", v.source});
  if (!v.run_link.empty()) head.push_back({"run link", v.run_link});
  std::string out = KeyValueBlock(head, "");
  if (!v.tags.empty()) {
    std::vector<std::pair<std::string, std::string>> tags;
    for (const core::Tag& t : v.tags) tags.push_back({t.key, t.value});
    out += "\ntags\n" + KeyValueBlock(tags, "  ");
  }
  if (v.run_id.empty()) {
    out += "\nmade by: no run recorded\n";
  } else if (!run) {
    out += "\nmade by run " + v.run_id + " (not found on this server)\n";
  } else {
    out += "\nmade by\n" + FormatRunDetails(*run, style, now_millis);
  }
  return out;
}

std::string VersionDetailsJson(const core::ModelVersion& version,
                               const std::optional<RunDetails>& run) {
  JsonWriter w;
  w.BeginObject().Key("model_version");
  core::WriteModelVersion(w, version);
  w.Key("run");
  if (run) {
    std::string details = RunDetailsJson(*run);
    while (!details.empty() && details.back() == '\n') details.pop_back();
    w.Raw(details);
  } else {
    w.Null();
  }
  w.EndObject();
  return w.Take() + "\n";
}

std::string FormatAliasHistory(std::span<const core::AliasMove> moves, const OutputStyle& style) {
  if (moves.empty()) return "no alias moves\n";
  Table table;
  table.columns = {
      {"TIME", false, false}, {"ALIAS"}, {"MOVE", false, false}, {"VERSION", true, false}, {"BY"}};
  for (const core::AliasMove& m : moves) {
    table.rows.push_back(
        {FormatFullTime(m.time), m.alias, std::string(core::AliasMoveKindName(m.kind)),
         m.version ? std::to_string(*m.version) : "-", m.actor.empty() ? "-" : m.actor});
  }
  return RenderTable(table, style);
}

}  // namespace cairn::report
