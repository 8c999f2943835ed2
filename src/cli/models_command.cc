// `cairn models ls|show|promote|rollback|history`: the model registry from the command line
// (report/model_report.h formats it). A model is named NAME, one version NAME/VERSION or
// NAME@ALIAS.
#include <cstdio>
#include <optional>

#include "cli/commands.h"
#include "client/tracking_client.h"
#include "report/model_report.h"
#include "util/clock.h"

namespace cairn::cli {
namespace {

struct ModelsFlags {
  std::string tracking_uri;
  std::string ref;  // NAME, NAME/VERSION or NAME@ALIAS
  std::string version;
  std::string alias;
  std::string filter;
  int64_t max = 1000;
  bool json = false;
};

int Fail(const Status& s) {
  PrintError(s);
  return 1;
}

// A filter naming one model: MLflow's strings are single-quoted, with no escape for a quote.
std::optional<std::string> NameFilter(const std::string& name) {
  if (name.find('\'') != std::string::npos) return std::nullopt;
  return "name = '" + name + "'";
}

int ListModels(const ModelsFlags& flags) {
  auto client = ConnectOrExplain(flags.tracking_uri);
  if (client == nullptr) return 2;
  auto models = client->SearchRegisteredModels(flags.filter, flags.max);
  if (!models.ok()) return Fail(models.status());
  PrintText(flags.json ? report::ModelsJsonLines(*models)
                       : report::FormatModelTable(*models, report::DetectOutputStyle(),
                                                  SystemClock()->NowMillis()));
  return 0;
}

int ShowModel(client::TrackingClient& client, const std::string& name, const ModelsFlags& flags) {
  auto model = client.GetRegisteredModel(name);
  if (!model.ok()) return Fail(model.status());
  std::vector<core::ModelVersion> versions;
  if (std::optional<std::string> filter = NameFilter(name)) {
    auto found = client.SearchModelVersions(*filter, flags.max);
    if (!found.ok()) return Fail(found.status());
    versions = std::move(found).value();
  }
  if (flags.json) {
    PrintText(report::ModelsJsonLines(std::span(&*model, 1)));
    return 0;
  }
  PrintText(report::FormatModelDetails(*model, versions, report::DetectOutputStyle(),
                                       SystemClock()->NowMillis()));
  return 0;
}

int ShowVersion(client::TrackingClient& client, const Result<core::ModelVersion>& version,
                const ModelsFlags& flags) {
  if (!version.ok()) return Fail(version.status());
  std::optional<report::RunDetails> details;
  if (!version->run_id.empty()) {
    auto run = client.GetRun(version->run_id);
    if (run.ok()) {
      auto fetched = report::FetchRunDetails(client, *run);
      if (!fetched.ok()) return Fail(fetched.status());
      details = std::move(fetched).value();
    } else if (run.status().code() != StatusCode::kNotFound) {
      return Fail(run.status());
    }
  }
  PrintText(flags.json
                ? report::VersionDetailsJson(*version, details)
                : report::FormatVersionDetails(*version, details, report::DetectOutputStyle(),
                                               SystemClock()->NowMillis()));
  return 0;
}

int Show(const ModelsFlags& flags) {
  auto client = ConnectOrExplain(flags.tracking_uri);
  if (client == nullptr) return 2;
  const std::string& ref = flags.ref;
  if (const size_t at = ref.rfind('@'); at != std::string::npos && at > 0) {
    return ShowVersion(
        *client, client->GetModelVersionByAlias(ref.substr(0, at), ref.substr(at + 1)), flags);
  }
  if (const size_t slash = ref.rfind('/'); slash != std::string::npos && slash > 0) {
    return ShowVersion(*client,
                       client->GetModelVersion(ref.substr(0, slash), ref.substr(slash + 1)), flags);
  }
  return ShowModel(*client, ref, flags);
}

// The version an alias names now, as text ("none" when it names none).
std::string CurrentTarget(client::TrackingClient& client, const std::string& name,
                          const std::string& alias) {
  auto v = client.GetModelVersionByAlias(name, alias);
  return v.ok() ? std::to_string(v->version) : std::string("none");
}

int Promote(const ModelsFlags& flags) {
  auto client = ConnectOrExplain(flags.tracking_uri);
  if (client == nullptr) return 2;
  const std::string before = CurrentTarget(*client, flags.ref, flags.alias);
  Status s = client->SetModelAlias(flags.ref, flags.alias, flags.version);
  if (!s.ok()) return Fail(s);
  std::printf("%s@%s: %s -> %s\n", flags.ref.c_str(), flags.alias.c_str(), before.c_str(),
              flags.version.c_str());
  return 0;
}

int Rollback(const ModelsFlags& flags) {
  auto client = ConnectOrExplain(flags.tracking_uri);
  if (client == nullptr) return 2;
  const std::string before = CurrentTarget(*client, flags.ref, flags.alias);
  auto now = client->RollbackModelAlias(flags.ref, flags.alias);
  if (!now.ok()) return Fail(now.status());
  std::printf("%s@%s: %s -> %s\n", flags.ref.c_str(), flags.alias.c_str(), before.c_str(),
              *now ? std::to_string(**now).c_str() : "none");
  return 0;
}

int History(const ModelsFlags& flags) {
  auto client = ConnectOrExplain(flags.tracking_uri);
  if (client == nullptr) return 2;
  auto moves = client->ModelAliasHistory(flags.ref, flags.alias);
  if (!moves.ok()) return Fail(moves.status());
  PrintText(report::FormatAliasHistory(*moves, report::DetectOutputStyle()));
  return 0;
}

CLI::App* AddModelsCommand(CLI::App* group, Action* action, const char* name, const char* help,
                           int (*run)(const ModelsFlags&), std::shared_ptr<ModelsFlags>* flags) {
  auto [cmd, added] = AddSubcommand<ModelsFlags>(group, action, name, help, run);
  AddTrackingUriOption(cmd, &added->tracking_uri);
  *flags = added;
  return cmd;
}

}  // namespace

void RegisterModels(CLI::App& app, Action* action) {
  CLI::App* group = app.add_subcommand(
      "models",
      "The model registry: list models, show a version with the run, code, environment and data\n"
      "that made it, move an alias to a version and roll it back.");
  group->require_subcommand(1);
  std::shared_ptr<ModelsFlags> f;

  CLI::App* ls = AddModelsCommand(group, action, "ls", "List registered models", ListModels, &f);
  ls->add_option("--filter", f->filter,
                 "MLflow's filter on name and tags, e.g. \"name LIKE 'fraud%'\"");
  ls->add_option("--max", f->max, "Show at most N models (default 1000)");
  ls->add_flag("--json", f->json, "One JSON object per model, as MLflow's API gives it");

  CLI::App* show = AddModelsCommand(
      group, action, "show",
      "Show a model (NAME: its versions and aliases) or a version (NAME/VERSION or NAME@ALIAS:\n"
      "its stage, aliases, source, and the run that made it: code state, environment, host,\n"
      "datasets, params and metrics)",
      Show, &f);
  show->add_option("model", f->ref, "NAME, NAME/VERSION or NAME@ALIAS")->required();
  show->add_flag("--json", f->json, "As JSON");

  CLI::App* promote = AddModelsCommand(
      group, action, "promote",
      "Point an alias at a version (one call; the move is kept in the alias's history)", Promote,
      &f);
  promote->add_option("model", f->ref, "Registered model name")->required();
  promote->add_option("version", f->version, "Version number")->required();
  promote->add_option("--alias", f->alias, "The alias to move, e.g. champion")->required();

  CLI::App* rollback = AddModelsCommand(
      group, action, "rollback",
      "Move an alias back to the version it named before (again: further back)", Rollback, &f);
  rollback->add_option("model", f->ref, "Registered model name")->required();
  rollback->add_option("--alias", f->alias, "The alias to move back")->required();

  CLI::App* history = AddModelsCommand(
      group, action, "history", "Every move of a model's aliases, oldest first", History, &f);
  history->add_option("model", f->ref, "Registered model name")->required();
  history->add_option("--alias", f->alias, "Only this alias");
}

}  // namespace cairn::cli
