// `cairn retention set|clear EXPERIMENT`: an experiment's own retention rules, kept in its tag
// cairn.retention (docs/retention.md). What the rules would remove: `cairn storage`, `cairn gc
// --dry-run`.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/retention_file.h"
#include "client/tracking_client.h"

namespace cairn::cli {
namespace {

struct RetentionFlags {
  std::string tracking_uri;
  std::string experiment;
  std::string file;
};

int SetRules(const RetentionFlags& flags, bool clear) {
  std::string json;
  if (!clear) {
    Result<std::string> file =
        flags.file.empty() ? NearestCairnYaml(".") : Result<std::string>(flags.file);
    Result<std::string> read = file.ok() ? ReadRetentionFile(*file) : file.status();
    if (!read.ok()) {
      PrintError(read.status());
      return 2;
    }
    json = *read;
  }
  auto client = ConnectOrExplain(flags.tracking_uri);
  if (client == nullptr) return 2;
  Result<core::Experiment> e = client->GetExperimentByName(flags.experiment);
  if (!e.ok()) {
    PrintError(e.status());
    return 1;
  }
  nlohmann::json body = {{"experiment_id", e->experiment_id},
                         {"key", std::string(core::kRetentionTag)}};
  if (!clear) body["value"] = json;
  Result<std::string> answer =
      client->CallJson("POST",
                       clear ? "/api/2.0/mlflow/experiments/delete-experiment-tag"
                             : "/api/2.0/mlflow/experiments/set-experiment-tag",
                       body.dump());
  if (!answer.ok() && !(clear && answer.status().code() == StatusCode::kNotFound)) {
    PrintError(answer.status());
    return 1;
  }
  if (clear) {
    std::printf("experiment %s has no rules of its own; the server-wide ones apply\n",
                flags.experiment.c_str());
  } else {
    std::printf("experiment %s: %s\n", flags.experiment.c_str(), json.c_str());
    std::printf("`cairn gc --dry-run` shows what the rules would remove now\n");
  }
  return 0;
}

int SetRetention(const RetentionFlags& flags) { return SetRules(flags, false); }
int ClearRetention(const RetentionFlags& flags) { return SetRules(flags, true); }

}  // namespace

void RegisterRetention(CLI::App& app, Action* action) {
  CLI::App* group = app.add_subcommand(
      "retention",
      "An experiment's retention rules: which artifacts of its runs the server removes at each\n"
      "collection (`cairn gc`, and every --gc-interval). See docs/retention.md.");
  group->require_subcommand(1);
  auto [set, set_flags] = AddSubcommand<RetentionFlags>(
      group, action, "set",
      "Give experiment EXPERIMENT the rules in FILE (YAML; '-' reads standard input), in place\n"
      "of any it had; without FILE, the `retention` section of the project's cairn.yaml (the\n"
      "nearest from here up). Needs EDIT on the experiment.\n\n"
      "  cairn retention set mnist\n"
      "  printf -- '- {keep_last: 10, artifacts: \"checkpoints/*\"}\\n' | cairn retention set "
      "mnist -",
      SetRetention);
  set->add_option("experiment", set_flags->experiment, "Experiment name")->required();
  set->add_option("file", set_flags->file,
                  "The rules: a YAML list, or a cairn.yaml with a retention section (default: "
                  "the project's cairn.yaml)");
  AddTrackingUriOption(set, &set_flags->tracking_uri);
  auto [clear, clear_flags] = AddSubcommand<RetentionFlags>(
      group, action, "clear", "Remove an experiment's own rules.", ClearRetention);
  clear->add_option("experiment", clear_flags->experiment, "Experiment name")->required();
  AddTrackingUriOption(clear, &clear_flags->tracking_uri);
}

}  // namespace cairn::cli
