#include "report/run_report.h"
#include "report/run_report_internal.h"

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
#include "util/json_writer.h"
#include "util/strings.h"
#include "util/utf8.h"

namespace cairn::report {

using client::TrackingClient;
using internal::kMissing;
using internal::TagValue;
using internal::RunName;
using internal::ExactMetric;
using internal::IsSystemMetric;
using internal::KeyValueBlock;

namespace {

constexpr std::string_view kEllipsis = "…";
constexpr std::string_view kReset = "\x1b[0m";
constexpr std::string_view kYellow = "\x1b[33m";

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

}  // namespace

namespace internal {

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
    std::string line = std::string(indent) + PadTo(PrintableText(key), key_width, false) + "  ";
    size_t start = 0;
    bool first = true;
    for (;;) {
      size_t nl = value.find('\n', start);
      std::string_view piece = std::string_view(value).substr(
          start, nl == std::string::npos ? std::string::npos : nl - start);
      if (!first) line = std::string(indent.size() + key_width + 2, ' ');
      line += PrintableText(piece);
      RightTrim(&line);
      out += line + "\n";
      first = false;
      if (nl == std::string::npos) break;
      start = nl + 1;
    }
  }
  return out;
}

}  // namespace internal

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
  for (const TableColumn& c : table.columns) header.push_back(PrintableText(c.header));
  cells.push_back(std::move(header));
  for (const std::vector<std::string>& row : table.rows) {
    std::vector<std::string> clean(n);
    for (size_t i = 0; i < n && i < row.size(); ++i) clean[i] = PrintableText(row[i]);
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
    w = std::max(w, DisplayWidth(PrintableText(CellOf(run, c, options))));
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

}  // namespace cairn::report
