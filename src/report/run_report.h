// Run reports: what `cairn experiments` and `cairn runs` print. A run list is a table sized to
// the terminal whose columns, beyond the run's identity and state, are the params and metrics
// that tell the listed runs apart; a run's details group its tags by what they describe (code
// state, host, Python environment); a comparison lines runs up side by side and marks the rows
// where they differ. The records `cairn run` uploads (`cairn/environment/pylock.toml`,
// `cairn/host.json`) are fetched here for the environment diff (env/env_diff.h).
//
// Everything here that formats or compares is a pure function of values (runs, texts, an
// OutputStyle and the current time), so it is tested without a server or a terminal. The few
// functions that fetch take a client::TrackingClient and are marked as such.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "client/tracking_client.h"
#include "core/model.h"
#include "env/env_diff.h"
#include "util/status.h"

namespace cairn::report {

// ---------------------------------------------------------------------------------------------
// Terminal

// How output is laid out. `width` bounds how many automatically chosen columns a run list
// gets; cells are cut to fit it (with "…") only when `truncate` is set, so that output piped
// to a file or another program keeps every value whole.
struct OutputStyle {
  int width = 100;
  bool truncate = false;
  bool color = false;  // ANSI colours for marked rows and diff lines
};

// The style for standard output. On a terminal the width is its size (TIOCGWINSZ), else
// $COLUMNS, else 100, and cells are cut to fit. Off a terminal the width is $COLUMNS, else 100,
// and nothing is cut. Colour only on a terminal, and never when $NO_COLOR is set and not empty
// (https://no-color.org) or $TERM is "dumb".
OutputStyle DetectOutputStyle();

// Number of terminal cells `text` takes: one per UTF-8 code point (wide East Asian characters
// are counted as one; good enough for ids, names, numbers).
size_t DisplayWidth(std::string_view text);
// `text` cut to at most `width` cells, ending in "…" when it was cut.
std::string Truncate(std::string_view text, size_t width);

// ---------------------------------------------------------------------------------------------
// Values

// The first 8 characters of a run id: enough to tell runs apart in a list, and accepted
// back by ResolveRun.
std::string ShortRunId(std::string_view run_id);
// A time (ms since the epoch) in local time, compactly: "05-17 14:03" within the year of
// `now_millis`, "2023-11-02" before it. 0 (unknown) is "-".
std::string FormatCompactTime(int64_t millis, int64_t now_millis);
// A time in local time, fully: "2024-05-17 14:03:22".
std::string FormatFullTime(int64_t millis);
// "850ms", "42s", "3m05s", "2h07m", "3d04h". Negative durations (clock skew) are "-".
std::string FormatDuration(int64_t millis);
// A run's duration: end - start, or now - start while it runs; "-" without a start time.
std::string RunDuration(const core::RunInfo& info, int64_t now_millis);
// A metric value: up to 6 significant digits ("0.123457", "1.5e-07", "42"); "NaN", "inf",
// "-inf" for the others.
std::string FormatMetric(double value);
// A byte count: "812 B", "1.2 KiB", "3.4 MiB", "5.0 GiB".
std::string FormatSize(int64_t bytes);

// ---------------------------------------------------------------------------------------------
// Tables

struct TableColumn {
  std::string header;
  bool align_right = false;  // numbers
  // Whether the column gives up width (its cells cut) when the table is wider than the
  // terminal; never below `min_width` cells or its header's width.
  bool shrinkable = true;
  size_t min_width = 6;
};

struct Table {
  std::vector<TableColumn> columns;
  std::vector<std::vector<std::string>> rows;  // each as long as `columns`
  // Rows to print in colour (when style.color), e.g. the rows of a comparison that differ.
  std::vector<bool> highlight;
};

// The table as text: a header line, then one line per row; columns separated by two spaces,
// no trailing spaces. When style.truncate is set and the natural width exceeds style.width,
// shrinkable columns give up width, the widest first, and their cells are cut with "…".
std::string RenderTable(const Table& table, const OutputStyle& style);

// ---------------------------------------------------------------------------------------------
// Experiments

// Columns id, name, lifecycle, created.
std::string FormatExperimentTable(std::span<const core::Experiment> experiments,
                                  const OutputStyle& style, int64_t now_millis);
// One JSON object per line, in the shape of MLflow's Experiment.
std::string ExperimentsJsonLines(std::span<const core::Experiment> experiments);

// ---------------------------------------------------------------------------------------------
// Run lists

// A column of a run list. Names as `--columns` takes them: id (8 characters), run_id (full),
// name, status, start, end, duration, user, experiment, and params.KEY, metrics.KEY,
// tags.KEY (also param., metric., tag.).
struct RunColumn {
  enum class Kind {
    kId,
    kRunId,
    kName,
    kStatus,
    kStart,
    kEnd,
    kDuration,
    kUser,
    kExperiment,
    kParam,
    kMetric,
    kTag,
  };
  Kind kind = Kind::kId;
  std::string key;  // for kParam, kMetric, kTag
  bool operator==(const RunColumn&) const = default;
};

// Parses "name,status,params.lr,metrics.loss,tags.team". InvalidArgument naming the unknown
// column; an empty list is an error too.
Result<std::vector<RunColumn>> ParseRunColumns(std::string_view spec);
// id, name, status, start, duration.
std::vector<RunColumn> DefaultRunColumns();

// The params and metrics of `runs` ranked by how much they tell the runs apart, most first:
// more distinct values first (a key some runs lack counts "missing" as one more value), then
// keys more runs have, then params before metrics, then by name. Keys with one value on every
// run tell nothing and are left out when there are two runs or more. System metrics
// (`system/...`, logged by `cairn run` every 10 s) always vary and rarely matter, so they rank
// after all others.
std::vector<RunColumn> RankVaryingColumns(std::span<const core::Run> runs);

struct RunListOptions {
  OutputStyle style;
  int64_t now_millis = 0;
  // Experiment id to name, for the experiment column; ids not in it are shown as they are.
  std::map<std::string, std::string> experiment_names;
};

// The run list table. Without `columns`, DefaultRunColumns followed by RankVaryingColumns in
// order for as long as the next one fits in style.width (an automatic column is counted at no
// more than 24 cells, a name at no more than 30). Explicit `columns` are all shown.
std::string FormatRunTable(std::span<const core::Run> runs, std::span<const RunColumn> columns,
                           const RunListOptions& options);
// The columns FormatRunTable shows when given none. Exposed for tests.
std::vector<RunColumn> ChooseRunColumns(std::span<const core::Run> runs,
                                        const RunListOptions& options);

// One JSON object per line, each a run in the shape of MLflow's Run ({"info", "data"}), as
// runs/get returns it.
std::string RunsJsonLines(std::span<const core::Run> runs);

// ---------------------------------------------------------------------------------------------
// One run

// What a tag describes, by its key: kCode for mlflow.source.git.* and cairn.git.*, kHost for
// cairn.host.* and cairn.gpu.*, kEnvironment for cairn.env.* and cairn.python.*, kSystem for
// every other mlflow.* or cairn.* key, and kUser for the rest.
enum class TagGroup { kUser, kCode, kHost, kEnvironment, kSystem };
TagGroup GroupOfTag(std::string_view key);

struct RunDetails {
  core::Run run;
  std::string experiment_name;                          // empty when unknown
  std::vector<client::TrackingClient::ArtifactFile> artifacts;  // files only, recursively
  bool artifacts_truncated = false;  // the listing stopped at kMaxListedArtifacts
};
inline constexpr size_t kMaxListedArtifacts = 1000;

// Info, params, latest metrics, tags by group, artifacts.
std::string FormatRunDetails(const RunDetails& details, const OutputStyle& style,
                             int64_t now_millis);
// {"run": MLflow's Run, "experiment_name": ..., "artifacts": [{"path", "file_size"}]}.
std::string RunDetailsJson(const RunDetails& details);

// ---------------------------------------------------------------------------------------------
// Comparison

// One line of a side-by-side comparison: a value per run ("" when the run has none).
struct CompareRow {
  std::string section;  // "run", "params", "metrics", "system metrics", "tags", "code",
                        // "environment", "host"
  std::string label;
  std::vector<std::string> values;  // as shown (commits and hashes shortened)
  // Whether the runs disagree. Rows that always differ between runs (start, duration, system
  // metrics) describe rather than explain, and are never marked.
  bool differs = false;
  bool informational = false;
};

// The rows comparing `runs`: run status, start and duration; the union of params and metrics
// (system metrics apart); user tags; code (commit, branch, dirty, command); environment
// (cairn.env.hash, Python version, package count); host (os, distribution, glibc, gpu, driver,
// cuda). Rows no run has a value for are left out. Values compare exactly; a run without the
// value differs from one with it.
std::vector<CompareRow> CompareRuns(std::span<const core::Run> runs, int64_t now_millis);

// The rows as a table: one column per run, headed by its short id and name; rows that differ
// start with "*" (and are coloured with style.color). With `only_diff` only those rows (and
// the headings of their sections) are shown. Values are cut to fit style.width even when
// style.truncate is off: a side-by-side view is for reading, not for scripts.
std::string FormatComparison(std::span<const core::Run> runs, std::span<const CompareRow> rows,
                             bool only_diff, const OutputStyle& style);

// ---------------------------------------------------------------------------------------------
// Fetching (these talk to the server)


// The run with id `id_or_prefix`; when there is none, the one run (of any experiment, deleted
// ones included) whose id starts with it, so the 8-character ids of `cairn runs ls` work.
// NotFound when no run matches, InvalidArgument when several do.
Result<core::Run> ResolveRun(client::TrackingClient& client, const std::string& id_or_prefix);

// Every experiment visible under `view`, following pages.
Result<std::vector<core::Experiment>> ListAllExperiments(client::TrackingClient& client,
                                                         core::ViewType view);

// Runs of the search, following pages until `limit` runs (0: all). `more` is set when the
// search has runs beyond the limit.
Result<std::vector<core::Run>> SearchRunsUpTo(client::TrackingClient& client,
                                              client::TrackingClient::RunSearch search, size_t limit,
                                              bool* more);

// The run, its experiment's name and its artifact files (walking directories, up to
// kMaxListedArtifacts files).
Result<RunDetails> FetchRunDetails(client::TrackingClient& client, const core::Run& run);

// Downloads and reads the run's pylock.toml and, when it has one, its host.json. NotFound,
// naming the artifact, when the run has no pylock.toml (it was not recorded by `cairn run`).
Result<env::EnvDescription> FetchRunEnvironment(client::TrackingClient& client,
                                                const core::Run& run);

}  // namespace cairn::report
