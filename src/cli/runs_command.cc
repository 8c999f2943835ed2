// `cairn runs ls|show|compare|diff-env`: read runs from the terminal. Flag parsing and exit
// codes only; client/run_report.h fetches, formats and compares.
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "client/tracking_client.h"
#include "core/retention.h"
#include "env/env_diff.h"
#include "report/run_report.h"
#include "util/clock.h"

namespace cairn::cli {
namespace {


struct RunsFlags {
  std::string tracking_uri;
  bool json = false;
  // ls
  std::vector<std::string> experiments;
  std::string filter;
  std::vector<std::string> order_by;
  std::vector<std::string> columns;
  int64_t max = 100;
  // show, compare, diff-env
  std::vector<std::string> runs;
  bool only_diff = false;
};


// The client for the flags' tracking URI; nullptr (after saying why) when the URI is bad.
std::unique_ptr<client::TrackingClient> Connect(const RunsFlags& flags) {
  return ConnectOrExplain(flags.tracking_uri);
}

// Experiment names given with --experiment (a name, or an id when no experiment has that
// name), else every active experiment; fills `names` with id -> name.
Result<std::vector<std::string>> ExperimentIds(client::TrackingClient& client,
                                               const std::vector<std::string>& wanted,
                                               std::map<std::string, std::string>* names) {
  std::vector<std::string> ids;
  if (wanted.empty()) {
    CAIRN_ASSIGN_OR_RETURN(std::vector<core::Experiment> all,
                           report::ListAllExperiments(client, core::ViewType::kActiveOnly));
    for (const core::Experiment& e : all) {
      ids.push_back(e.experiment_id);
      (*names)[e.experiment_id] = e.name;
    }
    return ids;
  }
  for (const std::string& name : wanted) {
    Result<core::Experiment> e = client.GetExperimentByName(name);
    if (!e.ok() && e.status().code() == StatusCode::kNotFound) {
      e = client.GetExperiment(name);
      if (!e.ok() && e.status().code() == StatusCode::kNotFound) {
        return NotFound("no experiment named '" + name + "'");
      }
    }
    if (!e.ok()) return e.status();
    ids.push_back(e->experiment_id);
    (*names)[e->experiment_id] = e->name;
  }
  return ids;
}

int ListRuns(const RunsFlags& flags) {
  std::vector<report::RunColumn> columns;
  if (!flags.columns.empty()) {
    std::string spec;
    for (const std::string& c : flags.columns) spec += c + ",";
    auto parsed = report::ParseRunColumns(spec);
    if (!parsed.ok()) {
      PrintError(parsed.status());
      return 2;
    }
    columns = std::move(parsed).value();
  }
  if (flags.max < 0) {
    std::fprintf(stderr, "error: --max must be 0 (all) or more\n");
    return 2;
  }
  auto client = Connect(flags);
  if (client == nullptr) return 2;
  report::RunListOptions options;
  options.style = report::DetectOutputStyle();
  options.now_millis = SystemClock()->NowMillis();
  client::TrackingClient::RunSearch search;
  auto ids = ExperimentIds(*client, flags.experiments, &options.experiment_names);
  if (!ids.ok()) {
    PrintError(ids.status());
    return 1;
  }
  search.experiment_ids = std::move(ids).value();
  search.filter = flags.filter;
  search.order_by = flags.order_by;
  bool more = false;
  std::vector<core::Run> runs;
  if (!search.experiment_ids.empty()) {
    auto found = report::SearchRunsUpTo(*client, search, static_cast<size_t>(flags.max), &more);
    if (!found.ok()) {
      if (found.status().code() == StatusCode::kInvalidArgument) {
        // The message names the endpoint first ("runs/search: ..."); the user knows no such
        // thing, only --filter and --order-by.
        std::string_view message = found.status().message();
        if (message.starts_with("runs/search: ")) message.remove_prefix(13);
        std::fprintf(stderr, "error: the server rejected the search: %.*s\n",
                     static_cast<int>(message.size()), message.data());
      } else {
        PrintError(found.status());
      }
      return 1;
    }
    runs = std::move(found).value();
  }
  if (flags.json) {
    PrintText(report::RunsJsonLines(runs));
  } else if (runs.empty()) {
    std::fprintf(stderr, "no runs found\n");
  } else {
    PrintText(report::FormatRunTable(runs, columns, options));
  }
  if (more) {
    std::fprintf(stderr, "(showing %zu runs; more match: raise --max or narrow --filter)\n",
                 runs.size());
  }
  return 0;
}

// The one run a command names (the first of flags.runs); nullopt after saying why not.
std::optional<core::Run> ResolveOne(client::TrackingClient& client, const RunsFlags& flags) {
  auto run = report::ResolveRun(client, flags.runs.front());
  if (!run.ok()) {
    PrintError(run.status());
    return std::nullopt;
  }
  return std::move(run).value();
}

// `runs pin` and `runs unpin`: the tag cairn.pinned, which retention rules leave alone.
int SetPinned(const RunsFlags& flags, bool pinned) {
  auto client = Connect(flags);
  if (client == nullptr) return 2;
  std::optional<core::Run> run = ResolveOne(*client, flags);
  if (!run) return 1;
  const std::string& id = run->info.run_id;
  const std::string tag(core::kPinnedTag);
  Status s = pinned ? client->SetTag(id, tag, "true") : client->DeleteTag(id, tag);
  if (!s.ok() && !(s.code() == StatusCode::kNotFound && !pinned)) {
    PrintError(s);
    return 1;
  }
  std::printf("run %s %s\n", id.c_str(),
              pinned ? "pinned: retention rules leave its artifacts alone" : "unpinned");
  return 0;
}

int PinRun(const RunsFlags& flags) { return SetPinned(flags, true); }
int UnpinRun(const RunsFlags& flags) { return SetPinned(flags, false); }

int ShowRun(const RunsFlags& flags) {
  auto client = Connect(flags);
  if (client == nullptr) return 2;
  std::optional<core::Run> run = ResolveOne(*client, flags);
  if (!run) return 1;
  auto details = report::FetchRunDetails(*client, *run);
  if (!details.ok()) {
    PrintError(details.status());
    return 1;
  }
  PrintText(flags.json ? report::RunDetailsJson(*details)
                   : report::FormatRunDetails(*details, report::DetectOutputStyle(),
                                              SystemClock()->NowMillis()));
  return 0;
}

// Resolves every run named in flags.runs; nullopt (after saying why) when one fails.
std::optional<std::vector<core::Run>> ResolveAll(client::TrackingClient& client,
                                                 const RunsFlags& flags) {
  std::vector<core::Run> runs;
  for (const std::string& id : flags.runs) {
    auto run = report::ResolveRun(client, id);
    if (!run.ok()) {
      PrintError(run.status());
      return std::nullopt;
    }
    runs.push_back(std::move(run).value());
  }
  return runs;
}

int CompareRuns(const RunsFlags& flags) {
  if (flags.runs.size() < 2) {
    std::fprintf(stderr, "error: compare takes two runs or more\n");
    return 2;
  }
  auto client = Connect(flags);
  if (client == nullptr) return 2;
  auto runs = ResolveAll(*client, flags);
  if (!runs) return 1;
  const int64_t now = SystemClock()->NowMillis();
  std::vector<report::CompareRow> rows = report::CompareRuns(*runs, now);
  PrintText(report::FormatComparison(*runs, rows, flags.only_diff, report::DetectOutputStyle()));
  return 0;
}

// Exit codes as diff(1): 0 the same, 1 different, 2 trouble.
int DiffEnv(const RunsFlags& flags) {
  if (flags.runs.size() != 2) {
    std::fprintf(stderr, "error: diff-env takes exactly two runs\n");
    return 2;
  }
  auto client = Connect(flags);
  if (client == nullptr) return 2;
  auto runs = ResolveAll(*client, flags);
  if (!runs) return 2;
  std::vector<env::EnvDescription> environments;
  std::vector<std::string> labels;
  for (const core::Run& run : *runs) {
    auto environment = report::FetchRunEnvironment(*client, run);
    if (!environment.ok()) {
      PrintError(environment.status());
      return 2;
    }
    environments.push_back(std::move(environment).value());
    std::string name = run.info.run_name;
    labels.push_back(run.info.run_id + (name.empty() ? "" : " (" + name + ")"));
  }
  env::EnvDiff diff = env::DiffEnvironments(environments[0], environments[1]);
  PrintText(env::FormatEnvDiff(diff, labels[0], labels[1], report::DetectOutputStyle().color));
  return diff.empty() ? 0 : 1;
}

// A subcommand of `cairn runs` whose action is `run` on its own flags; it takes the tracking
// URI option besides those the caller adds.
std::pair<CLI::App*, std::shared_ptr<RunsFlags>> AddRunsCommand(CLI::App* group, Action* action,
                                                                const std::string& name,
                                                                const std::string& help,
                                                                int (*run)(const RunsFlags&)) {
  auto added = AddSubcommand<RunsFlags>(group, action, name, help, run);
  AddTrackingUriOption(added.first, &added.second->tracking_uri);
  return added;
}

}  // namespace

void RegisterRuns(CLI::App& app, Action* action) {
  CLI::App* group = app.add_subcommand(
      "runs",
      "Read runs: list and filter them, show one, compare several side by side, and diff the\n"
      "Python environment and host of two. RUN is a run id or a unique prefix of one (the\n"
      "8 characters `cairn runs ls` shows).");
  group->require_subcommand(1);

  auto [ls, ls_flags] = AddRunsCommand(
      group, action, "ls",
      "List runs as a table sized to the terminal: run id (8 characters), name, status, start\n"
      "(local time), duration, then the params and metrics that differ most among the listed\n"
      "runs, as many as fit. Runs of every active experiment unless --experiment is given;\n"
      "newest first unless --order-by is given. Filter and order use MLflow's search syntax.\n\n"
      "  cairn runs ls -e mnist --filter \"metrics.acc > 0.9 and params.opt = 'adam'\" \\\n"
      "      --order-by 'metrics.acc DESC' --columns name,params.lr,metrics.acc",
      ListRuns);
  ls->add_option("-e,--experiment", ls_flags->experiments,
                 "Experiment name (or id); repeatable (default: all active experiments)")
      ->allow_extra_args(false);
  ls->add_option("--filter", ls_flags->filter,
                 "MLflow filter, e.g. \"params.lr = '0.1' and metrics.loss < 0.5\"");
  ls->add_option("--order-by", ls_flags->order_by,
                 "MLflow order_by entry, e.g. 'metrics.loss ASC'; repeatable")
      ->allow_extra_args(false);
  ls->add_option("--columns", ls_flags->columns,
                 "Comma-separated columns instead of the automatic choice: id, run_id, name,\n"
                 "status, start, end, duration, user, experiment, params.KEY, metrics.KEY,\n"
                 "tags.KEY")
      ->allow_extra_args(false);
  ls->add_option("--max", ls_flags->max, "Show at most N runs; 0 for all (default 100)");
  ls->add_flag("--json", ls_flags->json,
               "Print one JSON object per line, each a run as MLflow's runs/get gives it "
               "(info, data), with full run ids");

  auto [show, show_flags] = AddRunsCommand(
      group, action, "show",
      "Show one run: its info, params, latest metrics, tags grouped by what they describe\n"
      "(user tags; code state from mlflow.source.git.* and cairn.git.*; environment from\n"
      "cairn.env.* and cairn.python.*; host from cairn.host.* and cairn.gpu.*; other system\n"
      "tags) and its artifact files.",
      ShowRun);
  show->add_option("run", show_flags->runs, "Run id or unique prefix")->required()->expected(1);
  show->add_flag("--json", show_flags->json,
                 "Print {\"run\", \"experiment_name\", \"artifacts\"} as one JSON object");

  auto [pin, pin_flags] = AddRunsCommand(
      group, action, "pin",
      "Pin a run: retention rules (docs/retention.md) never remove its artifacts. Sets the tag\n"
      "cairn.pinned=true.",
      PinRun);
  pin->add_option("run", pin_flags->runs, "Run id or unique prefix")->required()->expected(1);
  auto [unpin, unpin_flags] = AddRunsCommand(
      group, action, "unpin", "Unpin a run: retention rules apply to it again.", UnpinRun);
  unpin->add_option("run", unpin_flags->runs, "Run id or unique prefix")->required()->expected(1);

  auto [compare, compare_flags] = AddRunsCommand(
      group, action, "compare",
      "Compare runs side by side: status, start and duration; params; latest metrics; user\n"
      "tags; code (commit, branch, dirty, command); environment (cairn.env.hash, Python\n"
      "version, package count); host (os, distribution, glibc, GPU, driver, CUDA). Rows where\n"
      "the runs differ start with '*' (and are coloured on a terminal unless NO_COLOR is set);\n"
      "start, duration and system metrics always differ and are not marked.",
      CompareRuns);
  compare->add_option("runs", compare_flags->runs, "Two run ids (or prefixes) or more")->required();
  compare->add_flag("--only-diff", compare_flags->only_diff, "Show only the rows that differ");

  auto [diff, diff_flags] = AddRunsCommand(
      group, action, "diff-env",
      "Compare the environments two runs recorded with `cairn run`: downloads each run's\n"
      "cairn/environment/pylock.toml and cairn/host.json and prints the packages added (+),\n"
      "removed (-) and changed (~: version, source, or installed files by RECORD hash), the\n"
      "interpreter facts that differ (version, platform and wheel tags, venv) and the host\n"
      "facts that differ (os, distribution, kernel, glibc, CPU, memory, GPUs, driver, CUDA).\n"
      "Paths and the hostname are not compared. Exits 0 when the environments are the same,\n"
      "1 when they differ, 2 on errors, like diff(1).",
      DiffEnv);
  diff->add_option("runs", diff_flags->runs, "RUN_A RUN_B: run ids or unique prefixes");
}

}  // namespace cairn::cli
