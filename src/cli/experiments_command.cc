// `cairn experiments ls`: list the tracking server's experiments (client/run_report.h formats
// them).
#include <cstdio>

#include "cli/commands.h"
#include "report/run_report.h"
#include "client/tracking_client.h"
#include "util/clock.h"

namespace cairn::cli {
namespace {

struct ExperimentsFlags {
  bool json = false;
  bool all = false;
  std::string tracking_uri;
};

int ListExperiments(const ExperimentsFlags& flags) {
  auto client = ConnectOrExplain(flags.tracking_uri);
  if (client == nullptr) return 2;
  auto experiments = report::ListAllExperiments(
      *client, flags.all ? core::ViewType::kAll : core::ViewType::kActiveOnly);
  if (!experiments.ok()) {
    std::fprintf(stderr, "error: %s\n", experiments.status().message().c_str());
    return 1;
  }
  std::string out = flags.json
                        ? report::ExperimentsJsonLines(*experiments)
                        : report::FormatExperimentTable(*experiments, report::DetectOutputStyle(),
                                                        SystemClock()->NowMillis());
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace

void RegisterExperiments(CLI::App& app, Action* action) {
  CLI::App* group = app.add_subcommand("experiments", "List the experiments of a tracking server.");
  group->require_subcommand(1);
  auto flags = std::make_shared<ExperimentsFlags>();
  CLI::App* ls = group->add_subcommand(
      "ls",
      "List experiments: id, name, lifecycle stage (active or deleted) and creation time (local\n"
      "time), newest first. Deleted experiments are left out unless --all is given.");
  ls->add_flag("--json", flags->json,
               "Print one JSON object per line, each an experiment as MLflow's REST API gives it");
  ls->add_flag("--all", flags->all, "Include deleted experiments");
  AddTrackingUriOption(ls, &flags->tracking_uri);
  ls->callback([flags, action] { *action = [flags] { return ListExperiments(*flags); }; });
}

}  // namespace cairn::cli
