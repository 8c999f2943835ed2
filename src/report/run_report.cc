#include "report/run_report.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <set>

#include "core/mlflow_json.h"
#include "env/host_facts.h"
#include "util/json_writer.h"
#include "util/strings.h"
#include "util/utf8.h"

namespace cairn::report {

using client::TrackingClient;
namespace {

constexpr std::string_view kEllipsis = "…";
constexpr std::string_view kMissing = "-";
constexpr std::string_view kReset = "\x1b[0m";
constexpr std::string_view kYellow = "\x1b[33m";
constexpr std::string_view kGreen = "\x1b[32m";
constexpr std::string_view kRed = "\x1b[31m";

bool IsContinuationByte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

std::string Colored(std::string_view text, std::string_view color, bool enabled) {
  if (!enabled) return std::string(text);
  return std::string(color) + std::string(text) + std::string(kReset);
}

std::string PadTo(std::string_view text, size_t width, bool right) {
  size_t w = DisplayWidth(text);
  if (w >= width) return std::string(text);
  std::string pad(width - w, ' ');
  return right ? pad + std::string(text) : std::string(text) + pad;
}

void RightTrim(std::string* s) {
  while (!s->empty() && s->back() == ' ') s->pop_back();
}

std::string TagValue(const core::Run& run, std::string_view key) {
  const core::Tag* t = run.FindTag(key);
  return t != nullptr ? t->value : std::string();
}

std::string RunName(const core::Run& run) {
  if (!run.info.run_name.empty()) return run.info.run_name;
  return TagValue(run, core::kRunNameTag);
}

// Exact text of a metric value, for telling values apart (display rounds to 6 digits).
std::string ExactMetric(double value) {
  if (std::isnan(value)) return "NaN";
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  return ec == std::errc() ? std::string(buf, end) : FormatMetric(value);
}

bool IsSystemMetric(std::string_view key) { return key.starts_with("system/"); }

// Lines "  key  value" with the values aligned; multi-line values continue under the value.
std::string KeyValueBlock(const std::vector<std::pair<std::string, std::string>>& items,
                          std::string_view indent) {
  size_t key_width = 0;
  for (const auto& [key, value] : items) key_width = std::max(key_width, DisplayWidth(key));
  std::string out;
  for (const auto& [key, value] : items) {
    std::string line = std::string(indent) + PadTo(CellText(key), key_width, false) + "  ";
    size_t start = 0;
    bool first = true;
    for (;;) {
      size_t nl = value.find('\n', start);
      std::string_view piece = std::string_view(value).substr(
          start, nl == std::string::npos ? std::string::npos : nl - start);
      if (!first) line = std::string(indent.size() + key_width + 2, ' ');
      line += CellText(piece);
      RightTrim(&line);
      out += line + "\n";
      first = false;
      if (nl == std::string::npos) break;
      start = nl + 1;
    }
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Terminal

OutputStyle DetectOutputStyle() {
  OutputStyle style;
  const bool tty = isatty(STDOUT_FILENO) == 1;
  int width = 0;
  if (tty) {
    struct winsize ws {};
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) width = ws.ws_col;
  }
  if (width == 0) {
    const char* columns = std::getenv("COLUMNS");
    if (columns != nullptr) {
      int n = 0;
      std::string_view s(columns);
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
      if (ec == std::errc() && end == s.data() + s.size() && n > 0) width = n;
    }
  }
  style.width = width > 0 ? width : 100;
  style.truncate = tty;
  const char* no_color = std::getenv("NO_COLOR");
  const char* term = std::getenv("TERM");
  style.color = tty && (no_color == nullptr || *no_color == '\0') &&
                (term == nullptr || std::string_view(term) != "dumb");
  return style;
}

size_t DisplayWidth(std::string_view text) {
  size_t n = 0;
  for (char c : text) n += IsContinuationByte(c) ? 0 : 1;
  return n;
}

std::string Truncate(std::string_view text, size_t width) {
  if (DisplayWidth(text) <= width) return std::string(text);
  if (width == 0) return std::string();
  // Keep width - 1 code points, then the ellipsis.
  size_t kept = 0;
  size_t i = 0;
  for (; i < text.size(); ++i) {
    if (IsContinuationByte(text[i])) continue;
    if (kept == width - 1) break;
    ++kept;
  }
  return std::string(text.substr(0, i)) + std::string(kEllipsis);
}

std::string CellText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7F) {
      out.push_back(' ');
    } else if (c == 0xC2 && i + 1 < text.size() &&
               static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
      out.push_back(' ');  // a C1 control character (CSI is U+009B)
      ++i;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Values

std::string ShortRunId(std::string_view run_id) { return std::string(run_id.substr(0, 8)); }

std::string FormatCompactTime(int64_t millis, int64_t now_millis) {
  if (millis <= 0) return std::string(kMissing);
  time_t t = static_cast<time_t>(millis / 1000);
  time_t now = static_cast<time_t>(now_millis / 1000);
  struct tm tm {
  }, now_tm{};
  if (localtime_r(&t, &tm) == nullptr || localtime_r(&now, &now_tm) == nullptr) {
    return std::string(kMissing);
  }
  char buf[32];
  std::strftime(buf, sizeof buf, tm.tm_year == now_tm.tm_year ? "%m-%d %H:%M" : "%Y-%m-%d", &tm);
  return buf;
}

std::string FormatFullTime(int64_t millis) {
  if (millis <= 0) return std::string(kMissing);
  time_t t = static_cast<time_t>(millis / 1000);
  struct tm tm {};
  if (localtime_r(&t, &tm) == nullptr) return std::string(kMissing);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string FormatDuration(int64_t millis) {
  if (millis < 0) return std::string(kMissing);
  char buf[32];
  const int64_t s = millis / 1000;
  if (millis < 1000) {
    std::snprintf(buf, sizeof buf, "%lldms", static_cast<long long>(millis));
  } else if (s < 60) {
    std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(s));
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  } else if (s < 86400) {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s % 3600 / 60));
  } else {
    std::snprintf(buf, sizeof buf, "%lldd%02lldh", static_cast<long long>(s / 86400),
                  static_cast<long long>(s % 86400 / 3600));
  }
  return buf;
}

std::string RunDuration(const core::RunInfo& info, int64_t now_millis) {
  if (info.start_time <= 0) return std::string(kMissing);
  int64_t end = info.end_time.value_or(now_millis);
  return FormatDuration(end - info.start_time);
}

std::string FormatMetric(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", value);
  return buf;
}

std::string FormatSize(int64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  while (v >= 1024 && unit + 1 < std::size(kUnits)) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[unit]);
  return buf;
}

// ---------------------------------------------------------------------------------------------
// Tables

std::string RenderTable(const Table& table, const OutputStyle& style) {
  const size_t n = table.columns.size();
  if (n == 0) return std::string();
  std::vector<std::vector<std::string>> cells;  // header first
  cells.reserve(table.rows.size() + 1);
  std::vector<std::string> header;
  for (const TableColumn& c : table.columns) header.push_back(CellText(c.header));
  cells.push_back(std::move(header));
  for (const std::vector<std::string>& row : table.rows) {
    std::vector<std::string> clean(n);
    for (size_t i = 0; i < n && i < row.size(); ++i) clean[i] = CellText(row[i]);
    cells.push_back(std::move(clean));
  }
  std::vector<size_t> widths(n, 0);
  for (const auto& row : cells) {
    for (size_t i = 0; i < n; ++i) widths[i] = std::max(widths[i], DisplayWidth(row[i]));
  }
  if (style.truncate) {
    size_t total = 2 * (n - 1);
    for (size_t w : widths) total += w;
    const size_t limit = style.width > 0 ? static_cast<size_t>(style.width) : 0;
    // Take one cell at a time from the widest shrinkable column: long names and values give
    // way first, and columns end up as even as the limit allows.
    while (total > limit) {
      size_t widest = n;
      for (size_t i = 0; i < n; ++i) {
        const TableColumn& c = table.columns[i];
        if (!c.shrinkable || widths[i] <= c.min_width) continue;
        if (widest == n || widths[i] > widths[widest]) widest = i;
      }
      if (widest == n) break;  // nothing left to give; the terminal wraps
      --widths[widest];
      --total;
    }
  }
  std::string out;
  for (size_t r = 0; r < cells.size(); ++r) {
    std::string line;
    for (size_t i = 0; i < n; ++i) {
      if (i > 0) line += "  ";
      std::string text = style.truncate ? Truncate(cells[r][i], widths[i]) : cells[r][i];
      line += PadTo(text, widths[i], table.columns[i].align_right);
    }
    RightTrim(&line);
    const bool highlight = r > 0 && r - 1 < table.highlight.size() && table.highlight[r - 1];
    out += Colored(line, kYellow, highlight && style.color) + "\n";
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Experiments

std::string FormatExperimentTable(std::span<const core::Experiment> experiments,
                                  const OutputStyle& style, int64_t now_millis) {
  Table table;
  table.columns = {{"id", true, false, 2},
                   {"name", false, true, 10},
                   {"lifecycle", false, false, 7},
                   {"created", false, false, 10}};
  for (const core::Experiment& e : experiments) {
    table.rows.push_back({e.experiment_id, e.name,
                          std::string(core::LifecycleStageName(e.lifecycle_stage)),
                          FormatCompactTime(e.creation_time, now_millis)});
  }
  return RenderTable(table, style);
}

std::string ExperimentsJsonLines(std::span<const core::Experiment> experiments) {
  std::string out;
  for (const core::Experiment& e : experiments) {
    JsonWriter w;
    w.BeginObject();
    w.Key("experiment_id").String(e.experiment_id);
    w.Key("name").String(e.name);
    w.Key("artifact_location").String(e.artifact_location);
    w.Key("lifecycle_stage").String(core::LifecycleStageName(e.lifecycle_stage));
    w.Key("creation_time").Int(e.creation_time);
    w.Key("last_update_time").Int(e.last_update_time);
    w.Key("tags").BeginArray();
    for (const core::Tag& t : e.tags) {
      w.BeginObject().Key("key").String(t.key).Key("value").String(t.value).EndObject();
    }
    w.EndArray();
    w.EndObject();
    out += w.Take() + "\n";
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Run lists

namespace {

struct ColumnName {
  std::string_view name;
  RunColumn::Kind kind;
};
constexpr ColumnName kColumnNames[] = {
    {"id", RunColumn::Kind::kId},
    {"run_id", RunColumn::Kind::kRunId},
    {"name", RunColumn::Kind::kName},
    {"run_name", RunColumn::Kind::kName},
    {"status", RunColumn::Kind::kStatus},
    {"start", RunColumn::Kind::kStart},
    {"start_time", RunColumn::Kind::kStart},
    {"end", RunColumn::Kind::kEnd},
    {"end_time", RunColumn::Kind::kEnd},
    {"duration", RunColumn::Kind::kDuration},
    {"user", RunColumn::Kind::kUser},
    {"user_id", RunColumn::Kind::kUser},
    {"experiment", RunColumn::Kind::kExperiment},
    {"experiment_id", RunColumn::Kind::kExperiment},
};
struct ColumnPrefix {
  std::string_view prefix;
  RunColumn::Kind kind;
};
constexpr ColumnPrefix kColumnPrefixes[] = {
    {"params.", RunColumn::Kind::kParam},   {"param.", RunColumn::Kind::kParam},
    {"metrics.", RunColumn::Kind::kMetric}, {"metric.", RunColumn::Kind::kMetric},
    {"tags.", RunColumn::Kind::kTag},       {"tag.", RunColumn::Kind::kTag},
};

std::string_view KindPrefix(RunColumn::Kind kind) {
  switch (kind) {
    case RunColumn::Kind::kParam:
      return "params.";
    case RunColumn::Kind::kMetric:
      return "metrics.";
    case RunColumn::Kind::kTag:
      return "tags.";
    default:
      return "";
  }
}

bool IsKeyed(RunColumn::Kind kind) {
  return kind == RunColumn::Kind::kParam || kind == RunColumn::Kind::kMetric ||
         kind == RunColumn::Kind::kTag;
}

std::string FixedHeader(RunColumn::Kind kind) {
  switch (kind) {
    case RunColumn::Kind::kId:
      return "run";
    case RunColumn::Kind::kRunId:
      return "run_id";
    case RunColumn::Kind::kName:
      return "name";
    case RunColumn::Kind::kStatus:
      return "status";
    case RunColumn::Kind::kStart:
      return "start";
    case RunColumn::Kind::kEnd:
      return "end";
    case RunColumn::Kind::kDuration:
      return "duration";
    case RunColumn::Kind::kUser:
      return "user";
    case RunColumn::Kind::kExperiment:
      return "experiment";
    default:
      return "";
  }
}

// A keyed column is headed by its bare key unless another shown column has the same key (a
// param and a metric both called "lr"): then by the qualified name.
std::string ColumnHeader(const RunColumn& c, std::span<const RunColumn> all) {
  if (!IsKeyed(c.kind)) return FixedHeader(c.kind);
  for (const RunColumn& other : all) {
    if (IsKeyed(other.kind) && other.kind != c.kind && other.key == c.key) {
      return std::string(KindPrefix(c.kind)) + c.key;
    }
  }
  return c.key;
}

std::string CellOf(const core::Run& run, const RunColumn& c, const RunListOptions& options) {
  const core::RunInfo& info = run.info;
  switch (c.kind) {
    case RunColumn::Kind::kId:
      return ShortRunId(info.run_id);
    case RunColumn::Kind::kRunId:
      return info.run_id;
    case RunColumn::Kind::kName: {
      std::string name = RunName(run);
      return name.empty() ? std::string(kMissing) : name;
    }
    case RunColumn::Kind::kStatus:
      return std::string(core::RunStatusName(info.status));
    case RunColumn::Kind::kStart:
      return FormatCompactTime(info.start_time, options.now_millis);
    case RunColumn::Kind::kEnd:
      return info.end_time ? FormatCompactTime(*info.end_time, options.now_millis)
                           : std::string(kMissing);
    case RunColumn::Kind::kDuration:
      return RunDuration(info, options.now_millis);
    case RunColumn::Kind::kUser:
      return info.user_id.empty() ? std::string(kMissing) : info.user_id;
    case RunColumn::Kind::kExperiment: {
      auto it = options.experiment_names.find(info.experiment_id);
      return it != options.experiment_names.end() ? it->second : info.experiment_id;
    }
    case RunColumn::Kind::kParam: {
      const core::Param* p = run.FindParam(c.key);
      return p != nullptr ? p->value : std::string(kMissing);
    }
    case RunColumn::Kind::kMetric: {
      const core::Metric* m = run.FindMetric(c.key);
      return m != nullptr ? FormatMetric(m->value) : std::string(kMissing);
    }
    case RunColumn::Kind::kTag: {
      const core::Tag* t = run.FindTag(c.key);
      return t != nullptr ? t->value : std::string(kMissing);
    }
  }
  return std::string(kMissing);
}

TableColumn TableColumnOf(const RunColumn& c, std::span<const RunColumn> all) {
  TableColumn t;
  t.header = ColumnHeader(c, all);
  switch (c.kind) {
    case RunColumn::Kind::kDuration:
      t.align_right = true;
      t.shrinkable = false;
      break;
    case RunColumn::Kind::kMetric:
      // A number cut short would read as another number.
      t.align_right = true;
      t.shrinkable = false;
      break;
    case RunColumn::Kind::kName:
      t.min_width = 10;
      break;
    case RunColumn::Kind::kId:
    case RunColumn::Kind::kStatus:
    case RunColumn::Kind::kStart:
    case RunColumn::Kind::kEnd:
      t.shrinkable = false;
      break;
    default:
      t.min_width = 6;
      break;
  }
  return t;
}

size_t NaturalWidth(std::span<const core::Run> runs, const RunColumn& c, std::string_view header,
                    const RunListOptions& options) {
  size_t w = DisplayWidth(header);
  for (const core::Run& run : runs)
    w = std::max(w, DisplayWidth(CellText(CellOf(run, c, options))));
  return w;
}

constexpr size_t kMaxAutoColumnWidth = 24;
constexpr size_t kMaxBudgetNameWidth = 30;

}  // namespace

Result<std::vector<RunColumn>> ParseRunColumns(std::string_view spec) {
  std::vector<RunColumn> out;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    if (comma == std::string_view::npos) comma = spec.size();
    std::string_view item = Trim(spec.substr(start, comma - start));
    start = comma + 1;
    if (item.empty()) continue;
    bool found = false;
    for (const ColumnName& c : kColumnNames) {
      if (item == c.name) {
        out.push_back({c.kind, ""});
        found = true;
        break;
      }
    }
    for (const ColumnPrefix& p : kColumnPrefixes) {
      if (found || !item.starts_with(p.prefix)) continue;
      std::string_view key = item.substr(p.prefix.size());
      if (key.empty()) return InvalidArgument("column '" + std::string(item) + "' names no key");
      out.push_back({p.kind, std::string(key)});
      found = true;
    }
    if (!found) {
      return InvalidArgument("unknown column '" + std::string(item) +
                             "'; columns are id, run_id, name, status, start, end, duration, "
                             "user, experiment, params.KEY, metrics.KEY, tags.KEY");
    }
  }
  if (out.empty()) return InvalidArgument("no columns given");
  return out;
}

std::vector<RunColumn> DefaultRunColumns() {
  return {{RunColumn::Kind::kId, ""},
          {RunColumn::Kind::kName, ""},
          {RunColumn::Kind::kStatus, ""},
          {RunColumn::Kind::kStart, ""},
          {RunColumn::Kind::kDuration, ""}};
}

std::vector<RunColumn> RankVaryingColumns(std::span<const core::Run> runs) {
  struct Candidate {
    RunColumn column;
    int tier = 0;  // 1 for system metrics
    size_t distinct = 0;
    size_t present = 0;
  };
  // Per key, the distinct values and how many runs have one.
  std::map<std::string, std::pair<std::set<std::string>, size_t>> params, metrics;
  for (const core::Run& run : runs) {
    for (const core::Param& p : run.data.params) {
      auto& [values, count] = params[p.key];
      values.insert(p.value);
      ++count;
    }
    for (const core::Metric& m : run.data.metrics) {
      auto& [values, count] = metrics[m.key];
      values.insert(ExactMetric(m.value));
      ++count;
    }
  }
  std::vector<Candidate> candidates;
  auto add = [&](RunColumn::Kind kind, const auto& keys) {
    for (const auto& [key, seen] : keys) {
      const auto& [values, present] = seen;
      Candidate c;
      c.column = {kind, key};
      c.tier = kind == RunColumn::Kind::kMetric && IsSystemMetric(key) ? 1 : 0;
      c.present = present;
      c.distinct = values.size() + (present < runs.size() ? 1 : 0);
      if (runs.size() >= 2 && c.distinct <= 1) continue;  // the same on every run
      candidates.push_back(std::move(c));
    }
  };
  add(RunColumn::Kind::kParam, params);
  add(RunColumn::Kind::kMetric, metrics);
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) {
                     if (a.tier != b.tier) return a.tier < b.tier;
                     if (a.distinct != b.distinct) return a.distinct > b.distinct;
                     if (a.present != b.present) return a.present > b.present;
                     if (a.column.kind != b.column.kind) {
                       return a.column.kind == RunColumn::Kind::kParam;
                     }
                     return a.column.key < b.column.key;
                   });
  std::vector<RunColumn> out;
  out.reserve(candidates.size());
  for (Candidate& c : candidates) out.push_back(std::move(c.column));
  return out;
}

std::vector<RunColumn> ChooseRunColumns(std::span<const core::Run> runs,
                                        const RunListOptions& options) {
  std::vector<RunColumn> columns = DefaultRunColumns();
  size_t used = 0;
  for (const RunColumn& c : columns) {
    size_t w = NaturalWidth(runs, c, FixedHeader(c.kind), options);
    if (c.kind == RunColumn::Kind::kName) w = std::min(w, kMaxBudgetNameWidth);
    used += (used > 0 ? 2 : 0) + w;
  }
  const size_t limit = options.style.width > 0 ? static_cast<size_t>(options.style.width) : 0;
  for (RunColumn& c : RankVaryingColumns(runs)) {
    size_t w = std::min(NaturalWidth(runs, c, c.key, options), kMaxAutoColumnWidth);
    if (used + 2 + w > limit) break;  // the shown ones stay a prefix of the ranking
    used += 2 + w;
    columns.push_back(std::move(c));
  }
  return columns;
}

std::string FormatRunTable(std::span<const core::Run> runs, std::span<const RunColumn> columns,
                           const RunListOptions& options) {
  std::vector<RunColumn> chosen;
  if (columns.empty()) {
    chosen = ChooseRunColumns(runs, options);
    columns = chosen;
  }
  Table table;
  for (const RunColumn& c : columns) table.columns.push_back(TableColumnOf(c, columns));
  for (const core::Run& run : runs) {
    std::vector<std::string> row;
    row.reserve(columns.size());
    for (const RunColumn& c : columns) row.push_back(CellOf(run, c, options));
    table.rows.push_back(std::move(row));
  }
  return RenderTable(table, options.style);
}

std::string RunsJsonLines(std::span<const core::Run> runs) {
  std::string out;
  for (const core::Run& run : runs) {
    JsonWriter w;
    core::WriteRun(w, run);
    out += w.Take() + "\n";
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// One run

TagGroup GroupOfTag(std::string_view key) {
  if (key.starts_with("mlflow.source.git.") || key.starts_with("cairn.git.")) {
    return TagGroup::kCode;
  }
  if (key.starts_with("cairn.host.") || key.starts_with("cairn.gpu.")) return TagGroup::kHost;
  if (key.starts_with("cairn.env.") || key.starts_with("cairn.python.")) {
    return TagGroup::kEnvironment;
  }
  if (key.starts_with("mlflow.") || key.starts_with("cairn.")) return TagGroup::kSystem;
  return TagGroup::kUser;
}

std::string FormatRunDetails(const RunDetails& details, const OutputStyle& style,
                             int64_t now_millis) {
  const core::Run& run = details.run;
  const core::RunInfo& info = run.info;
  using Items = std::vector<std::pair<std::string, std::string>>;
  Items head;
  head.push_back({"run", info.run_id});
  std::string name = RunName(run);
  if (!name.empty()) head.push_back({"name", name});
  head.push_back({"experiment", details.experiment_name.empty()
                                    ? info.experiment_id
                                    : details.experiment_name + " (" + info.experiment_id + ")"});
  std::string status(core::RunStatusName(info.status));
  if (info.lifecycle_stage == core::LifecycleStage::kDeleted) status += " (deleted)";
  head.push_back({"status", status});
  if (!info.user_id.empty()) head.push_back({"user", info.user_id});
  head.push_back({"start", FormatFullTime(info.start_time)});
  if (info.end_time) {
    head.push_back(
        {"end", FormatFullTime(*info.end_time) + " (" + RunDuration(info, now_millis) + ")"});
  } else if (info.start_time > 0) {
    head.push_back({"running for", RunDuration(info, now_millis)});
  }
  head.push_back({"artifact uri", info.artifact_uri});
  std::string out = KeyValueBlock(head, "");

  auto section = [&](std::string_view title, const Items& items) {
    if (items.empty()) return;
    out += "\n" + std::string(title) + "\n" + KeyValueBlock(items, "  ");
  };
  Items params;
  for (const core::Param& p : run.data.params) params.push_back({p.key, p.value});
  std::sort(params.begin(), params.end());
  section("params", params);

  std::vector<const core::Metric*> metrics;
  for (const core::Metric& m : run.data.metrics) metrics.push_back(&m);
  std::sort(metrics.begin(), metrics.end(), [](const core::Metric* a, const core::Metric* b) {
    bool sa = IsSystemMetric(a->key), sb = IsSystemMetric(b->key);
    return sa != sb ? sb : a->key < b->key;
  });
  Items metric_items;
  for (const core::Metric* m : metrics) {
    metric_items.push_back(
        {m->key, ExactMetric(m->value) + "  (step " + std::to_string(m->step) + ")"});
  }
  section("metrics (latest)", metric_items);

  Items groups[5];
  for (const core::Tag& t : run.data.tags) {
    groups[static_cast<int>(GroupOfTag(t.key))].push_back({t.key, t.value});
  }
  for (Items& g : groups) std::sort(g.begin(), g.end());
  section("tags", groups[static_cast<int>(TagGroup::kUser)]);
  section("code", groups[static_cast<int>(TagGroup::kCode)]);
  section("environment", groups[static_cast<int>(TagGroup::kEnvironment)]);
  section("host", groups[static_cast<int>(TagGroup::kHost)]);
  section("system tags", groups[static_cast<int>(TagGroup::kSystem)]);

  if (!details.artifacts.empty()) {
    Table table;
    table.columns = {{"path", false, true, 20}, {"size", true, false, 4}};
    for (const TrackingClient::ArtifactFile& f : details.artifacts) {
      table.rows.push_back({f.path, FormatSize(f.file_size)});
    }
    std::string title = "artifacts (" + std::to_string(details.artifacts.size()) +
                        (details.artifacts_truncated ? "+ files, listing cut" : " files") + ")";
    OutputStyle inner = style;
    inner.width = std::max(20, style.width - 2);
    std::string rendered = RenderTable(table, inner);
    // Indent under the title, skipping the table's header line.
    out += "\n" + title + "\n";
    size_t start = rendered.find('\n') + 1;
    while (start < rendered.size()) {
      size_t nl = rendered.find('\n', start);
      out += "  " + rendered.substr(start, nl - start) + "\n";
      start = nl + 1;
    }
  } else {
    out += "\nartifacts: none\n";
  }
  return out;
}

std::string RunDetailsJson(const RunDetails& details) {
  JsonWriter w;
  w.BeginObject();
  w.Key("run");
  core::WriteRun(w, details.run);
  w.Key("experiment_name").String(details.experiment_name);
  w.Key("artifacts").BeginArray();
  for (const TrackingClient::ArtifactFile& f : details.artifacts) {
    w.BeginObject().Key("path").String(f.path).Key("file_size").Int(f.file_size).EndObject();
  }
  w.EndArray();
  w.Key("artifacts_truncated").Bool(details.artifacts_truncated);
  w.EndObject();
  return w.Take() + "\n";
}

// ---------------------------------------------------------------------------------------------
// Comparison

namespace {

// A value per run; nullopt-like "absent" is kept apart from an empty value.
struct RowValues {
  std::vector<std::string> shown;
  std::vector<std::string> exact;  // what is compared
  std::vector<bool> present;
};

bool AnyPresent(const RowValues& v) {
  return std::find(v.present.begin(), v.present.end(), true) != v.present.end();
}

bool AllSame(const RowValues& v) {
  for (size_t i = 1; i < v.exact.size(); ++i) {
    if (v.present[i] != v.present[0] || v.exact[i] != v.exact[0]) return false;
  }
  return true;
}

}  // namespace

std::vector<CompareRow> CompareRuns(std::span<const core::Run> runs, int64_t now_millis) {
  std::vector<CompareRow> rows;
  auto add = [&](std::string section, std::string label, RowValues values, bool informational) {
    if (!AnyPresent(values)) return;
    CompareRow row;
    row.section = std::move(section);
    row.label = std::move(label);
    for (size_t i = 0; i < values.shown.size(); ++i) {
      row.values.push_back(values.present[i] ? values.shown[i] : std::string(kMissing));
    }
    row.informational = informational;
    row.differs = !informational && runs.size() >= 2 && !AllSame(values);
    rows.push_back(std::move(row));
  };
  auto collect = [&](auto&& value_of) {  // value_of(run) -> optional<pair<shown, exact>>
    RowValues v;
    for (const core::Run& run : runs) {
      auto got = value_of(run);
      v.present.push_back(got.has_value());
      v.shown.push_back(got ? got->first : std::string());
      v.exact.push_back(got ? got->second : std::string());
    }
    return v;
  };
  using Value = std::optional<std::pair<std::string, std::string>>;
  auto tag = [&](std::string_view key, size_t shorten = 0) {
    return collect([&](const core::Run& run) -> Value {
      const core::Tag* t = run.FindTag(key);
      if (t == nullptr) return std::nullopt;
      std::string shown = shorten > 0 ? t->value.substr(0, shorten) : t->value;
      return std::make_pair(shown, t->value);
    });
  };

  add("run", "status", collect([](const core::Run& run) -> Value {
        std::string s(core::RunStatusName(run.info.status));
        return std::make_pair(s, s);
      }),
      false);
  add("run", "start", collect([&](const core::Run& run) -> Value {
        std::string s = FormatCompactTime(run.info.start_time, now_millis);
        return std::make_pair(s, s);
      }),
      true);
  add("run", "duration", collect([&](const core::Run& run) -> Value {
        std::string s = RunDuration(run.info, now_millis);
        return std::make_pair(s, s);
      }),
      true);

  std::set<std::string> param_keys, metric_keys, tag_keys;
  for (const core::Run& run : runs) {
    for (const core::Param& p : run.data.params) param_keys.insert(p.key);
    for (const core::Metric& m : run.data.metrics) metric_keys.insert(m.key);
    for (const core::Tag& t : run.data.tags) {
      if (GroupOfTag(t.key) == TagGroup::kUser) tag_keys.insert(t.key);
    }
  }
  for (const std::string& key : param_keys) {
    add("params", key, collect([&](const core::Run& run) -> Value {
          const core::Param* p = run.FindParam(key);
          if (p == nullptr) return std::nullopt;
          return std::make_pair(p->value, p->value);
        }),
        false);
  }
  for (int system = 0; system < 2; ++system) {
    for (const std::string& key : metric_keys) {
      if (IsSystemMetric(key) != (system == 1)) continue;
      add(system == 1 ? "system metrics" : "metrics", key,
          collect([&](const core::Run& run) -> Value {
            const core::Metric* m = run.FindMetric(key);
            if (m == nullptr) return std::nullopt;
            return std::make_pair(FormatMetric(m->value), ExactMetric(m->value));
          }),
          system == 1);
    }
  }
  for (const std::string& key : tag_keys) add("tags", key, tag(key), false);

  add("code", "commit", tag("mlflow.source.git.commit", 12), false);
  add("code", "branch", tag("mlflow.source.git.branch"), false);
  add("code", "dirty", tag("cairn.git.dirty"), false);
  add("code", "command", tag("cairn.command"), false);
  add("environment", "env hash", tag("cairn.env.hash", 12), false);
  add("environment", "python", tag("cairn.python.version"), false);
  add("environment", "packages", tag("cairn.python.packages"), false);
  add("host", "os", tag("cairn.host.os"), false);
  add("host", "distribution", tag("cairn.host.distribution"), false);
  add("host", "glibc", tag("cairn.host.glibc"), false);
  add("host", "gpu", tag("cairn.gpu.name"), false);
  add("host", "driver", tag("cairn.gpu.driver"), false);
  add("host", "cuda", tag("cairn.gpu.cuda"), false);
  return rows;
}

std::string FormatComparison(std::span<const core::Run> runs, std::span<const CompareRow> rows,
                             bool only_diff, const OutputStyle& style) {
  Table table;
  table.columns.push_back({"", false, false, 0});
  std::vector<std::string> names = {"  name"};
  for (const core::Run& run : runs) {
    table.columns.push_back({ShortRunId(run.info.run_id), false, true, 8});
    std::string name = RunName(run);
    names.push_back(name.empty() ? std::string(kMissing) : name);
  }
  table.rows.push_back(std::move(names));
  table.highlight.push_back(false);
  std::string current_section;
  size_t shown = 0;
  for (const CompareRow& row : rows) {
    if (only_diff && !row.differs) continue;
    if (row.section != current_section) {
      current_section = row.section;
      std::vector<std::string> heading(table.columns.size());
      heading[0] = row.section;
      table.rows.push_back(std::move(heading));
      table.highlight.push_back(false);
    }
    std::vector<std::string> line;
    line.push_back((row.differs ? "* " : "  ") + row.label);
    for (const std::string& v : row.values) line.push_back(v);
    line.resize(table.columns.size());
    table.rows.push_back(std::move(line));
    table.highlight.push_back(row.differs);
    ++shown;
  }
  // Side by side, one long value (a command line) would push every other column off the
  // screen, so values are cut to the width even off a terminal; `runs show` has them whole.
  OutputStyle fitted = style;
  fitted.truncate = true;
  std::string out = RenderTable(table, fitted);
  if (only_diff && shown == 0) out += "no differences\n";
  return out;
}

// ---------------------------------------------------------------------------------------------
// TOML

const TomlValue* TomlValue::Find(std::string_view key) const {
  if (kind != Kind::kTable) return nullptr;
  for (const TomlKeyValue& kv : table) {
    if (kv.key == key) return &kv.value;
  }
  return nullptr;
}

std::string TomlValue::StringAt(std::string_view key) const {
  const TomlValue* v = Find(key);
  return v != nullptr && v->kind == Kind::kString ? v->string : std::string();
}

namespace {

bool IsBareKeyChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

TomlValue MakeTable() {
  TomlValue v;
  v.kind = TomlValue::Kind::kTable;
  return v;
}

TomlValue* FindMutable(TomlValue* table, std::string_view key) {
  for (TomlKeyValue& kv : table->table) {
    if (kv.key == key) return &kv.value;
  }
  return nullptr;
}

class TomlParser {
 public:
  explicit TomlParser(std::string_view text) : text_(text) {}

  Result<TomlValue> Parse() {
    TomlValue root = MakeTable();
    TomlValue* current = &root;
    for (;;) {
      SkipBlank();
      SkipComment();
      if (AtEnd()) break;
      if (Peek() == '\n' || Peek() == '\r') {
        CAIRN_RETURN_IF_ERROR(LineEnd());
        continue;
      }
      if (Peek() == '[') {
        CAIRN_ASSIGN_OR_RETURN(current, Header(&root));
      } else {
        CAIRN_RETURN_IF_ERROR(KeyValue(current));
      }
      CAIRN_RETURN_IF_ERROR(LineEnd());
    }
    return root;
  }

 private:
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  Status Error(const std::string& what) const {
    return InvalidArgument("TOML line " + std::to_string(line_) + ": " + what);
  }
  void SkipBlank() {
    while (!AtEnd() && (Peek() == ' ' || Peek() == '\t')) ++pos_;
  }
  void SkipComment() {
    if (Peek() != '#') return;
    while (!AtEnd() && Peek() != '\n') ++pos_;
  }
  // Blanks, comments and newlines, as allowed inside arrays.
  void SkipBlankLines() {
    for (;;) {
      SkipBlank();
      SkipComment();
      if (Peek() == '\r' && Peek(1) == '\n') ++pos_;
      if (Peek() != '\n') return;
      ++pos_;
      ++line_;
    }
  }
  // The rest of a line after a statement: blanks, a comment, then a newline or the end.
  Status LineEnd() {
    SkipBlank();
    SkipComment();
    if (AtEnd()) return Status::Ok();
    if (Peek() == '\r' && Peek(1) == '\n') ++pos_;
    if (Peek() != '\n') return Error(std::string("unexpected '") + Peek() + "'");
    ++pos_;
    ++line_;
    return Status::Ok();
  }

  Result<std::string> SimpleKey() {
    if (Peek() == '"') return BasicString();
    if (Peek() == '\'') return LiteralString();
    size_t start = pos_;
    while (!AtEnd() && IsBareKeyChar(Peek())) ++pos_;
    if (pos_ == start) return Error("expected a key");
    return std::string(text_.substr(start, pos_ - start));
  }

  Result<std::vector<std::string>> DottedKey() {
    std::vector<std::string> parts;
    for (;;) {
      SkipBlank();
      CAIRN_ASSIGN_OR_RETURN(std::string part, SimpleKey());
      parts.push_back(std::move(part));
      SkipBlank();
      if (Peek() != '.') return parts;
      ++pos_;
    }
  }

  // The table at `path` below `table`, created when missing. In a path, an array of tables
  // stands for its last element, as TOML's headers mean it.
  Result<TomlValue*> Descend(TomlValue* table, std::span<const std::string> path) {
    for (const std::string& part : path) {
      TomlValue* next = FindMutable(table, part);
      if (next == nullptr) {
        table->table.push_back({part, MakeTable()});
        next = &table->table.back().value;
      } else if (next->kind == TomlValue::Kind::kArray && !next->array.empty() &&
                 next->array.back().kind == TomlValue::Kind::kTable) {
        next = &next->array.back();
      } else if (next->kind != TomlValue::Kind::kTable) {
        return Error("key '" + part + "' is not a table");
      }
      table = next;
    }
    return table;
  }

  Result<TomlValue*> Header(TomlValue* root) {
    ++pos_;  // '['
    const bool array = Peek() == '[';
    if (array) ++pos_;
    CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> path, DottedKey());
    if (Peek() != ']' || (array && Peek(1) != ']')) return Error("unterminated table header");
    pos_ += array ? 2 : 1;
    std::span<const std::string> parents(path.data(), path.size() - 1);
    CAIRN_ASSIGN_OR_RETURN(TomlValue * parent, Descend(root, parents));
    // [a.b] opens the table (also one an earlier header or dotted key created); [[a.b]]
    // appends a table to the array.
    if (!array) return Descend(parent, std::span<const std::string>(&path.back(), 1));
    TomlValue* existing = FindMutable(parent, path.back());
    if (existing == nullptr) {
      TomlValue list;
      list.kind = TomlValue::Kind::kArray;
      parent->table.push_back({path.back(), std::move(list)});
      existing = &parent->table.back().value;
    } else if (existing->kind != TomlValue::Kind::kArray) {
      return Error("key '" + path.back() + "' is not an array of tables");
    }
    existing->array.push_back(MakeTable());
    return &existing->array.back();
  }

  Status KeyValue(TomlValue* table) {
    CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> path, DottedKey());
    if (Peek() != '=') return Error("expected '=' after key '" + path.back() + "'");
    ++pos_;
    SkipBlank();
    CAIRN_ASSIGN_OR_RETURN(TomlValue value, Value());
    std::span<const std::string> parents(path.data(), path.size() - 1);
    CAIRN_ASSIGN_OR_RETURN(TomlValue * parent, Descend(table, parents));
    if (FindMutable(parent, path.back()) != nullptr) {
      return Error("key '" + path.back() + "' defined twice");
    }
    parent->table.push_back({path.back(), std::move(value)});
    return Status::Ok();
  }

  Result<TomlValue> Value() {
    TomlValue v;
    const char c = Peek();
    if (c == '"' || c == '\'') {
      v.kind = TomlValue::Kind::kString;
      CAIRN_ASSIGN_OR_RETURN(v.string, c == '"' ? BasicString() : LiteralString());
      return v;
    }
    if (text_.substr(pos_, 4) == "true" || text_.substr(pos_, 5) == "false") {
      v.kind = TomlValue::Kind::kBoolean;
      v.boolean = c == 't';
      pos_ += v.boolean ? 4 : 5;
      if (IsBareKeyChar(Peek())) return Error("unexpected text after a boolean");
      return v;
    }
    if (c == '[') return Array();
    if (c == '{') return InlineTable();
    if ((c >= '0' && c <= '9') || c == '+' || c == '-') return Integer();
    if (AtEnd() || c == '\n' || c == '\r') return Error("missing value");
    return Error(std::string("unsupported value starting with '") + c + "'");
  }

  Result<TomlValue> Integer() {
    size_t start = pos_;
    std::string digits;
    if (Peek() == '+' || Peek() == '-') digits.push_back(text_[pos_++]);
    while (!AtEnd() && ((Peek() >= '0' && Peek() <= '9') || Peek() == '_')) {
      if (Peek() != '_') digits.push_back(Peek());
      ++pos_;
    }
    const char next = Peek();
    if (next == '.' || next == 'e' || next == 'E' || next == ':' || next == '-' || next == 'x' ||
        next == 'o' || next == 'b' || IsBareKeyChar(next)) {
      return Error("unsupported number '" + std::string(text_.substr(start, pos_ - start + 1)) +
                   "...' (only decimal integers are read)");
    }
    TomlValue v;
    v.kind = TomlValue::Kind::kInteger;
    const char* first = digits.data() + (digits.starts_with('+') ? 1 : 0);
    auto [end, ec] = std::from_chars(first, digits.data() + digits.size(), v.integer);
    if (ec != std::errc() || end != digits.data() + digits.size()) {
      return Error("bad integer '" + std::string(text_.substr(start, pos_ - start)) + "'");
    }
    return v;
  }

  Result<TomlValue> Array() {
    ++pos_;  // '['
    TomlValue v;
    v.kind = TomlValue::Kind::kArray;
    for (;;) {
      SkipBlankLines();
      if (Peek() == ']') break;
      if (AtEnd()) return Error("unterminated array");
      CAIRN_ASSIGN_OR_RETURN(TomlValue item, Value());
      v.array.push_back(std::move(item));
      SkipBlankLines();
      if (AtEnd()) return Error("unterminated array");
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      if (Peek() != ']') return Error("expected ',' or ']' in an array");
      break;
    }
    ++pos_;  // ']'
    return v;
  }

  Result<TomlValue> InlineTable() {
    ++pos_;  // '{'
    TomlValue v = MakeTable();
    SkipBlank();
    if (Peek() == '}') {
      ++pos_;
      return v;
    }
    for (;;) {
      CAIRN_RETURN_IF_ERROR(KeyValue(&v));
      SkipBlank();
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      if (Peek() != '}') return Error("expected ',' or '}' in an inline table");
      ++pos_;
      return v;
    }
  }

  Result<std::string> LiteralString() {
    ++pos_;  // '\''
    if (Peek() == '\'' && Peek(1) == '\'') return Error("multi-line strings are not supported");
    size_t end = text_.find_first_of("'\n", pos_);
    if (end == std::string_view::npos || text_[end] != '\'') return Error("unterminated string");
    std::string s(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }

  Result<std::string> BasicString() {
    ++pos_;  // '"'
    if (Peek() == '"' && Peek(1) == '"') return Error("multi-line strings are not supported");
    std::string out;
    for (;;) {
      if (AtEnd() || Peek() == '\n') return Error("unterminated string");
      char c = text_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      char e = Peek();
      ++pos_;
      switch (e) {
        case 'b':
          out.push_back('\b');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 'e':
          out.push_back('\x1b');
          break;
        case '"':
          out.push_back('"');
          break;
        case '\\':
          out.push_back('\\');
          break;
        case 'u':
        case 'U': {
          const size_t n = e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          std::string_view hex = text_.substr(pos_, n);
          auto [end, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), cp, 16);
          if (hex.size() != n || ec != std::errc() || end != hex.data() + hex.size() ||
              cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
            return Error("bad \\" + std::string(1, e) + " escape");
          }
          AppendUtf8(&out, cp);
          pos_ += n;
          break;
        }
        default:
          return Error("bad escape '\\" + std::string(1, e) + "'");
      }
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;
};

}  // namespace

Result<TomlValue> ParseToml(std::string_view text) { return TomlParser(text).Parse(); }

// ---------------------------------------------------------------------------------------------
// Environment diff

namespace {

std::string TomlText(const TomlValue& v) {
  switch (v.kind) {
    case TomlValue::Kind::kString:
      return v.string;
    case TomlValue::Kind::kInteger:
      return std::to_string(v.integer);
    case TomlValue::Kind::kBoolean:
      return v.boolean ? "true" : "false";
    case TomlValue::Kind::kArray: {
      std::string out;
      for (const TomlValue& item : v.array) {
        if (!out.empty()) out += ", ";
        out += TomlText(item);
      }
      return out;
    }
    case TomlValue::Kind::kTable: {
      std::string out;
      for (const TomlKeyValue& kv : v.table) {
        if (!out.empty()) out += ", ";
        out += kv.key + ":" + TomlText(kv.value);
      }
      return out;
    }
  }
  return std::string();
}

std::string PackageSource(const TomlValue& pkg, const TomlValue* tool) {
  auto with_subdir = [](const TomlValue& t, std::string s) {
    std::string sub = t.StringAt("subdirectory");
    return sub.empty() ? s : s + "#subdirectory=" + sub;
  };
  if (const TomlValue* vcs = pkg.Find("vcs"); vcs != nullptr) {
    return with_subdir(*vcs, vcs->StringAt("type") + " " + vcs->StringAt("url") + "@" +
                                 vcs->StringAt("commit-id"));
  }
  if (const TomlValue* dir = pkg.Find("directory"); dir != nullptr) {
    const TomlValue* editable = dir->Find("editable");
    bool is_editable =
        editable != nullptr && editable->kind == TomlValue::Kind::kBoolean && editable->boolean;
    return with_subdir(*dir,
                       "directory " + dir->StringAt("path") + (is_editable ? " (editable)" : ""));
  }
  if (const TomlValue* archive = pkg.Find("archive"); archive != nullptr) {
    std::string s = "archive " + archive->StringAt("url");
    if (const TomlValue* hashes = archive->Find("hashes"); hashes != nullptr) {
      for (const TomlKeyValue& h : hashes->table) s += " " + h.key + ":" + TomlText(h.value);
    }
    return with_subdir(*archive, s);
  }
  if (tool != nullptr) {
    std::string url = tool->StringAt("direct-url");
    if (!url.empty()) return "url " + url;
  }
  return std::string();
}

constexpr std::string_view kInterpreterKeys[] = {
    "implementation", "python-version", "sys-platform", "platform", "python-tag",
    "abi-tag",        "platform-tags",  "soabi",        "venv",
};

std::vector<FieldChange> DiffFields(const std::vector<std::pair<std::string, std::string>>& a,
                                    const std::vector<std::pair<std::string, std::string>>& b) {
  auto lookup = [](const auto& fields, const std::string& key) -> const std::string* {
    for (const auto& [k, v] : fields) {
      if (k == key) return &v;
    }
    return nullptr;
  };
  std::vector<FieldChange> out;
  for (const auto& [key, value] : a) {
    const std::string* other = lookup(b, key);
    std::string after = other != nullptr ? *other : std::string();
    if (after != value) out.push_back({key, value, after});
  }
  for (const auto& [key, value] : b) {
    if (lookup(a, key) == nullptr && !value.empty()) out.push_back({key, "", value});
  }
  return out;
}

std::string OrNone(std::string_view s) { return s.empty() ? "(none)" : std::string(s); }

std::string ShortHash(std::string_view s) {
  return s.empty() ? "(none)" : std::string(s.substr(0, 12));
}

}  // namespace

Status ReadPylock(std::string_view toml, EnvRecord* record) {
  Result<TomlValue> doc = ParseToml(toml);
  if (!doc.ok()) return doc.status();
  record->packages.clear();
  record->interpreter.clear();
  if (const TomlValue* packages = doc->Find("packages"); packages != nullptr) {
    if (packages->kind != TomlValue::Kind::kArray) {
      return InvalidArgument("'packages' is not an array of tables");
    }
    for (const TomlValue& pkg : packages->array) {
      PackageRecord p;
      p.name = pkg.StringAt("name");
      if (p.name.empty()) return InvalidArgument("a package has no name");
      const TomlValue* tool = pkg.Find("tool");
      if (tool != nullptr) tool = tool->Find("cairn");
      p.version = pkg.StringAt("version");
      if (p.version.empty() && tool != nullptr) p.version = tool->StringAt("version");
      p.source = PackageSource(pkg, tool);
      if (tool != nullptr) p.record_sha256 = tool->StringAt("record-sha256");
      record->packages.push_back(std::move(p));
    }
  }
  std::sort(record->packages.begin(), record->packages.end(),
            [](const PackageRecord& a, const PackageRecord& b) { return a.name < b.name; });
  const TomlValue* tool = doc->Find("tool");
  const TomlValue* cairn = tool != nullptr ? tool->Find("cairn") : nullptr;
  if (cairn != nullptr) {
    for (std::string_view key : kInterpreterKeys) {
      if (const TomlValue* v = cairn->Find(key); v != nullptr) {
        record->interpreter.push_back({std::string(key), TomlText(*v)});
      }
    }
  }
  return Status::Ok();
}

Status ReadHostJson(std::string_view text, EnvRecord* record) {
  CAIRN_ASSIGN_OR_RETURN(env::HostFacts facts, env::ParseHostFactsJson(text));
  record->host = env::ComparedHostFacts(facts);
  return Status::Ok();
}

EnvDiff DiffEnvironments(const EnvRecord& before, const EnvRecord& after) {
  EnvDiff diff;
  size_t i = 0, j = 0;
  const auto& a = before.packages;
  const auto& b = after.packages;
  while (i < a.size() || j < b.size()) {
    if (j == b.size() || (i < a.size() && a[i].name < b[j].name)) {
      diff.packages.push_back({PackageChange::Kind::kRemoved, a[i].name, a[i].version, "", {}});
      ++i;
    } else if (i == a.size() || b[j].name < a[i].name) {
      diff.packages.push_back({PackageChange::Kind::kAdded, b[j].name, "", b[j].version, {}});
      ++j;
    } else {
      const PackageRecord& x = a[i];
      const PackageRecord& y = b[j];
      PackageChange change{PackageChange::Kind::kChanged, x.name, x.version, y.version, {}};
      if (x.source != y.source) {
        change.details.push_back("source " + OrNone(x.source) + " -> " + OrNone(y.source));
      }
      // A new version or source has other files anyway; RECORD tells more only when neither
      // changed (a rebuilt wheel, files edited in place).
      if (x.version == y.version && x.source == y.source && x.record_sha256 != y.record_sha256) {
        change.details.push_back("installed files differ (RECORD sha256 " +
                                 ShortHash(x.record_sha256) + " -> " + ShortHash(y.record_sha256) +
                                 ")");
      }
      if (x.version != y.version || !change.details.empty()) {
        diff.packages.push_back(std::move(change));
      }
      ++i;
      ++j;
    }
  }
  diff.interpreter = DiffFields(before.interpreter, after.interpreter);
  diff.host = DiffFields(before.host, after.host);
  return diff;
}

std::string FormatEnvDiff(const EnvDiff& diff, const EnvRecord& before,
                          std::string_view label_before, std::string_view label_after,
                          const OutputStyle& style) {
  std::string out = "--- " + std::string(label_before) + "\n+++ " + std::string(label_after) + "\n";
  if (diff.empty()) {
    std::string python;
    for (const auto& [key, value] : before.interpreter) {
      if (key == "python-version") python = ", Python " + value;
    }
    return out + "no differences (" + std::to_string(before.packages.size()) + " packages" +
           python + ", same host facts)\n";
  }
  if (!diff.packages.empty()) {
    size_t counts[3] = {0, 0, 0};
    for (const PackageChange& c : diff.packages) ++counts[static_cast<int>(c.kind)];
    std::string summary;
    const char* names[3] = {"added", "removed", "changed"};
    for (int k = 0; k < 3; ++k) {
      if (counts[k] == 0) continue;
      if (!summary.empty()) summary += ", ";
      summary += std::to_string(counts[k]) + " " + names[k];
    }
    out += "packages: " + summary + "\n";
    for (const PackageChange& c : diff.packages) {
      std::string line;
      std::string_view color;
      switch (c.kind) {
        case PackageChange::Kind::kAdded:
          line = "+ " + c.name + " " + OrNone(c.after_version);
          color = kGreen;
          break;
        case PackageChange::Kind::kRemoved:
          line = "- " + c.name + " " + OrNone(c.before_version);
          color = kRed;
          break;
        case PackageChange::Kind::kChanged:
          line = "~ " + c.name + " " + OrNone(c.before_version);
          if (c.after_version != c.before_version) line += " -> " + OrNone(c.after_version);
          for (size_t k = 0; k < c.details.size(); ++k) {
            line += (k == 0 ? ": " : "; ") + c.details[k];
          }
          color = kYellow;
          break;
      }
      out += "  " + Colored(CellText(line), color, style.color) + "\n";
    }
  }
  auto fields = [&](std::string_view title, const std::vector<FieldChange>& changes) {
    if (changes.empty()) return;
    out += std::string(title) + ":\n";
    for (const FieldChange& c : changes) {
      std::string line = "~ " + c.field + ": " + OrNone(c.before) + " -> " + OrNone(c.after);
      out += "  " + Colored(CellText(line), kYellow, style.color) + "\n";
    }
  };
  fields("interpreter", diff.interpreter);
  fields("host", diff.host);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Fetching

namespace {

constexpr int64_t kPageSize = 1000;

bool IsPrefixSafe(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
  });
}

}  // namespace

Result<std::vector<core::Experiment>> ListAllExperiments(TrackingClient& client,
                                                         core::ViewType view) {
  std::vector<core::Experiment> out;
  TrackingClient::ExperimentSearch search;
  search.view = view;
  search.max_results = kPageSize;
  for (;;) {
    CAIRN_ASSIGN_OR_RETURN(TrackingClient::ExperimentPage page, client.SearchExperiments(search));
    for (core::Experiment& e : page.experiments) out.push_back(std::move(e));
    if (page.next_page_token.empty()) return out;
    search.page_token = page.next_page_token;
  }
}

Result<std::vector<core::Run>> SearchRunsUpTo(TrackingClient& client,
                                              TrackingClient::RunSearch search, size_t limit,
                                              bool* more) {
  std::vector<core::Run> out;
  *more = false;
  for (;;) {
    int64_t want = kPageSize;
    if (limit > 0) want = std::min<int64_t>(kPageSize, static_cast<int64_t>(limit - out.size()));
    search.max_results = want;
    CAIRN_ASSIGN_OR_RETURN(TrackingClient::RunPage page, client.SearchRuns(search));
    for (core::Run& run : page.runs) out.push_back(std::move(run));
    if (page.next_page_token.empty()) return out;
    if (limit > 0 && out.size() >= limit) {
      *more = true;
      return out;
    }
    search.page_token = page.next_page_token;
  }
}

Result<core::Run> ResolveRun(TrackingClient& client, const std::string& id_or_prefix) {
  if (id_or_prefix.empty()) return InvalidArgument("empty run id");
  Result<core::Run> run = client.GetRun(id_or_prefix);
  if (run.ok() || run.status().code() != StatusCode::kNotFound) return run;
  const std::string not_found = "no run with id or id prefix '" + id_or_prefix + "'";
  // A LIKE pattern made of these characters means only "starts with".
  if (!IsPrefixSafe(id_or_prefix)) return NotFound(not_found);
  CAIRN_ASSIGN_OR_RETURN(std::vector<core::Experiment> experiments,
                         ListAllExperiments(client, core::ViewType::kAll));
  TrackingClient::RunSearch search;
  for (const core::Experiment& e : experiments) search.experiment_ids.push_back(e.experiment_id);
  if (search.experiment_ids.empty()) return NotFound(not_found);
  search.view = core::ViewType::kAll;
  search.filter = "attributes.run_id LIKE '" + id_or_prefix + "%'";
  bool more = false;
  CAIRN_ASSIGN_OR_RETURN(std::vector<core::Run> matches,
                         SearchRunsUpTo(client, search, /*limit=*/5, &more));
  if (matches.empty()) return NotFound(not_found);
  if (matches.size() > 1) {
    std::string ids;
    for (const core::Run& m : matches) ids += (ids.empty() ? "" : ", ") + m.info.run_id;
    return InvalidArgument("run id prefix '" + id_or_prefix + "' is ambiguous: " + ids +
                           (more ? ", ..." : ""));
  }
  return std::move(matches.front());
}

Result<RunDetails> FetchRunDetails(TrackingClient& client, const core::Run& run) {
  RunDetails details;
  details.run = run;
  // The name is a convenience: a run whose experiment cannot be read is still shown.
  Result<core::Experiment> experiment = client.GetExperiment(run.info.experiment_id);
  if (experiment.ok()) details.experiment_name = experiment->name;
  std::vector<std::string> dirs = {""};
  size_t listed_dirs = 0;
  while (!dirs.empty()) {
    std::string dir = std::move(dirs.back());
    dirs.pop_back();
    if (++listed_dirs > kMaxListedArtifacts) {
      details.artifacts_truncated = true;
      break;
    }
    CAIRN_ASSIGN_OR_RETURN(std::vector<TrackingClient::ArtifactFile> entries,
                           client.ListArtifacts(run.info.run_id, dir));
    for (TrackingClient::ArtifactFile& e : entries) {
      if (e.is_dir) {
        dirs.push_back(std::move(e.path));
      } else if (details.artifacts.size() < kMaxListedArtifacts) {
        details.artifacts.push_back(std::move(e));
      } else {
        details.artifacts_truncated = true;
      }
    }
  }
  std::sort(details.artifacts.begin(), details.artifacts.end(),
            [](const auto& a, const auto& b) { return a.path < b.path; });
  return details;
}

Result<EnvRecord> FetchEnvRecord(TrackingClient& client, const core::Run& run) {
  EnvRecord record;
  auto fetch = [&](std::string_view artifact) -> Result<std::string> {
    Result<std::string> text =
        client.DownloadArtifact(run.info.artifact_uri, std::string(artifact));
    if (text.status().code() == StatusCode::kNotFound) {
      return NotFound("run " + run.info.run_id + " has no artifact " + std::string(artifact) +
                      " (runs recorded by `cairn run` have one)");
    }
    return text;
  };
  CAIRN_ASSIGN_OR_RETURN(std::string pylock, fetch(kPylockArtifact));
  Status s = ReadPylock(pylock, &record);
  if (!s.ok())
    return s.WithContext("reading " + std::string(kPylockArtifact) + " of run " + run.info.run_id);
  CAIRN_ASSIGN_OR_RETURN(std::string host, fetch(kHostArtifact));
  s = ReadHostJson(host, &record);
  if (!s.ok())
    return s.WithContext("reading " + std::string(kHostArtifact) + " of run " + run.info.run_id);
  return record;
}

}  // namespace cairn::report
