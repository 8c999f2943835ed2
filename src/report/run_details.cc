// One run's details and the side-by-side comparison of runs (run_report.h).
#include <algorithm>
#include <map>
#include <set>

#include "core/mlflow_json.h"
#include "report/run_report.h"
#include "report/run_report_internal.h"
#include "util/json_writer.h"
#include "util/strings.h"

namespace cairn::report {

using client::TrackingClient;
using internal::ExactMetric;
using internal::IsSystemMetric;
using internal::KeyValueBlock;
using internal::kMissing;
using internal::RunName;

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
  // A pipeline step's run: which pipeline run made it, and as which step.
  std::map<std::string_view, std::string_view> pipeline_tags;
  for (const core::Tag& t : run.data.tags) {
    if (t.key == "cairn.pipeline.name" || t.key == "cairn.pipeline.run" ||
        t.key == "cairn.step.id") {
      pipeline_tags[t.key] = t.value;
    }
  }
  if (pipeline_tags.count("cairn.step.id") != 0 && pipeline_tags.count("cairn.pipeline.run") != 0) {
    head.push_back({"pipeline", std::string(pipeline_tags["cairn.pipeline.name"]) + " run " +
                                    std::string(pipeline_tags["cairn.pipeline.run"]) + ", step " +
                                    std::string(pipeline_tags["cairn.step.id"])});
  }
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

  Items datasets;
  for (const core::DatasetInput& in : run.inputs) {
    std::string value = "digest " + in.dataset.digest;
    if (!in.dataset.source.empty()) value += ", " + in.dataset.source;
    for (const core::Tag& t : in.tags) {
      if (t.key == core::kDatasetContextTag) value += " (" + t.value + ")";
    }
    datasets.push_back({in.dataset.name, value});
  }
  section("datasets", datasets);

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

}  // namespace cairn::report
