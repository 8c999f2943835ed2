#include "core/reproduce.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>

#include "util/json_reader.h"
#include "util/json_writer.h"
#include "util/strings.h"

namespace cairn::core {
namespace {

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof(double)) == 0; }

// Whether `reproduced` is within tolerance of `original`.
bool Within(double original, double reproduced, const Tolerance& t) {
  if (std::isnan(original) || std::isnan(reproduced)) {
    return std::isnan(original) && std::isnan(reproduced);
  }
  if (std::isinf(original) || std::isinf(reproduced)) return original == reproduced;
  return std::fabs(reproduced - original) <= t.atol + t.rtol * std::fabs(original);
}

bool StepOrder(const core::Metric& a, const core::Metric& b) {
  return a.step != b.step ? a.step < b.step : a.timestamp < b.timestamp;
}

bool InOrder(const std::vector<core::Metric>& series) {
  return std::is_sorted(series.begin(), series.end(), StepOrder);
}

std::vector<core::Metric> Sorted(std::vector<core::Metric> series) {
  std::stable_sort(series.begin(), series.end(), StepOrder);
  return series;
}

MetricVerdict CompareSeries(const std::string& key, const std::vector<core::Metric>* original,
                            const std::vector<core::Metric>* reproduced, const Tolerance& tol,
                            const std::string* partial) {
  MetricVerdict v;
  v.key = key;
  const bool none = original == nullptr || original->empty() || reproduced == nullptr ||
                    reproduced->empty();
  if (partial != nullptr && none) {
    v.kind = VerdictKind::kIncomplete;
    v.note = *partial;
    return v;
  }
  if (original == nullptr || original->empty()) {
    v.kind = VerdictKind::kIncomplete;
    v.note = "the original run has no values of it";
    return v;
  }
  if (reproduced == nullptr || reproduced->empty()) {
    v.kind = VerdictKind::kIncomplete;
    v.note = "the new run logged none of it";
    return v;
  }
  // The store gives histories in order; a copy is made only of one that is not.
  std::vector<core::Metric> sorted_a, sorted_b;
  const std::vector<core::Metric>& a = InOrder(*original) ? *original : (sorted_a = Sorted(*original));
  const std::vector<core::Metric>& b =
      InOrder(*reproduced) ? *reproduced : (sorted_b = Sorted(*reproduced));
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    ++v.points;
    if (a[i].step != b[i].step) {
      v.kind = VerdictKind::kDiverged;
      v.step = std::min(a[i].step, b[i].step);
      v.original = a[i].value;
      v.reproduced = b[i].value;
      v.note = "value " + std::to_string(i + 1) + " is at step " + std::to_string(b[i].step) +
               ", in the original at step " + std::to_string(a[i].step);
      return v;
    }
    if (SameBits(a[i].value, b[i].value)) continue;
    if (!Within(a[i].value, b[i].value, tol)) {
      v.kind = VerdictKind::kDiverged;
      v.step = a[i].step;
      v.original = a[i].value;
      v.reproduced = b[i].value;
      return v;
    }
    v.kind = VerdictKind::kWithinTolerance;
    if (std::isfinite(a[i].value) && std::isfinite(b[i].value)) {
      v.max_abs_diff = std::max(v.max_abs_diff, std::fabs(b[i].value - a[i].value));
    }
  }
  if (partial != nullptr &&
      (v.kind == VerdictKind::kIdentical || v.kind == VerdictKind::kWithinTolerance)) {
    v.kind = VerdictKind::kIncomplete;
    v.note = *partial;
    return v;
  }
  if (b.size() < a.size()) {
    v.kind = VerdictKind::kIncomplete;
    v.step = a[n].step;
    v.note = std::to_string(b.size()) + " of " + std::to_string(a.size()) +
             " values; none from step " + std::to_string(a[n].step) + " on";
  } else if (b.size() > a.size()) {
    v.kind = VerdictKind::kDiverged;
    v.step = b[n].step;
    v.reproduced = b[n].value;
    v.note = "the new run logged " + std::to_string(b.size() - a.size()) +
             " more value(s), from step " + std::to_string(b[n].step);
  }
  return v;
}

void WriteLines(JsonWriter& w, std::string_view key, const std::vector<std::string>& lines) {
  w.Key(key).BeginArray();
  for (const std::string& line : lines) w.String(line);
  w.EndArray();
}

std::string TagOf(const core::Run& run, std::string_view key) {
  const core::Tag* t = run.FindTag(key);
  return t == nullptr ? "" : t->value;
}

}  // namespace

std::string ReproduceOptionsJson(const ReproduceOptions& options) {
  JsonWriter w;
  w.BeginObject();
  w.Key("rtol").Double(options.tolerance.rtol).Key("atol").Double(options.tolerance.atol);
  w.Key("per_metric").BeginObject();
  for (const auto& [key, t] : options.per_metric) {
    w.Key(key).BeginObject().Key("rtol").Double(t.rtol).Key("atol").Double(t.atol).EndObject();
  }
  w.EndObject();
  w.Key("metrics").BeginArray();
  for (const std::string& key : options.metrics) w.String(key);
  w.EndArray().EndObject();
  return w.Take();
}

namespace {

// The tolerance fields of `object` read into `t` (absent ones keep their values).
Status ReadTolerance(JsonValue object, const std::string& where, Tolerance* t) {
  if (!object.is_object()) return InvalidArgument(where + " must be an object");
  for (const char* name : {"rtol", "atol"}) {
    JsonValue v = object.Find(name);
    if (!v.exists()) continue;
    if (!v.is_number() || !(v.number() >= 0) || !std::isfinite(v.number())) {
      return InvalidArgument(where + "." + name + " must be a number >= 0");
    }
    (std::string_view(name) == "rtol" ? t->rtol : t->atol) = v.number();
  }
  return Status::Ok();
}

}  // namespace

Result<ReproduceOptions> ParseReproduceOptions(std::string_view json) {
  CAIRN_ASSIGN_OR_RETURN(JsonDocument doc, JsonDocument::Parse(json, 8));
  ReproduceOptions options;
  CAIRN_RETURN_IF_ERROR(ReadTolerance(doc.root(), "options", &options.tolerance));
  if (JsonValue per = doc.root().Find("per_metric"); per.exists()) {
    if (!per.is_object()) return InvalidArgument("options.per_metric must be an object");
    for (auto it = per.begin(); it != per.end(); ++it) {
      const std::string key(it.key());
      Tolerance t = options.tolerance;
      CAIRN_RETURN_IF_ERROR(ReadTolerance(*it, "options.per_metric." + key, &t));
      options.per_metric[key] = t;
    }
  }
  if (JsonValue metrics = doc.root().Find("metrics"); metrics.exists()) {
    if (!metrics.is_array()) return InvalidArgument("options.metrics must be an array");
    for (JsonValue m : metrics) {
      if (!m.is_string() || m.str().empty()) {
        return InvalidArgument("options.metrics must hold metric keys");
      }
      options.metrics.emplace_back(m.str());
    }
  }
  return options;
}

std::string_view VerdictName(VerdictKind kind) {
  switch (kind) {
    case VerdictKind::kIdentical:
      return "identical";
    case VerdictKind::kWithinTolerance:
      return "within tolerance";
    case VerdictKind::kDiverged:
      return "diverged";
    case VerdictKind::kIncomplete:
      return "incomplete";
  }
  return "incomplete";
}

Verdict CompareReproduction(const MetricHistories& original, const MetricHistories& reproduced,
                            const ReproduceOptions& options, core::RunStatus reproduced_status,
                            const PartialSeries& partial) {
  Verdict verdict;
  std::vector<std::string> keys = options.metrics;
  if (keys.empty()) {
    for (const auto& [key, series] : original) {
      if (!key.starts_with("system/")) keys.push_back(key);
    }
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  for (const std::string& key : keys) {
    auto a = original.find(key);
    auto b = reproduced.find(key);
    auto per = options.per_metric.find(key);
    auto cut = partial.find(key);
    verdict.metrics.push_back(
        CompareSeries(key, a == original.end() ? nullptr : &a->second,
                      b == reproduced.end() ? nullptr : &b->second,
                      per != options.per_metric.end() ? per->second : options.tolerance,
                      cut != partial.end() ? &cut->second : nullptr));
  }

  const MetricVerdict* incomplete = nullptr;
  const MetricVerdict* diverged = nullptr;
  const MetricVerdict* widest = nullptr;
  int64_t points = 0;
  for (const MetricVerdict& m : verdict.metrics) {
    points += m.points;
    if (m.kind == VerdictKind::kIncomplete && incomplete == nullptr) incomplete = &m;
    if (m.kind == VerdictKind::kDiverged && (diverged == nullptr || m.step < diverged->step)) {
      diverged = &m;
    }
    if (m.kind == VerdictKind::kWithinTolerance &&
        (widest == nullptr || m.max_abs_diff > widest->max_abs_diff)) {
      widest = &m;
    }
  }
  if (reproduced_status != core::RunStatus::kFinished) {
    verdict.kind = VerdictKind::kIncomplete;
    verdict.summary =
        "incomplete: the new run ended " + std::string(core::RunStatusName(reproduced_status));
  } else if (keys.empty()) {
    verdict.kind = VerdictKind::kIncomplete;
    verdict.summary = "incomplete: the original run has no metrics to compare";
  } else if (incomplete != nullptr) {
    verdict.kind = VerdictKind::kIncomplete;
    verdict.summary = "incomplete: " + incomplete->key + ": " + incomplete->note;
  } else if (diverged != nullptr) {
    verdict.kind = VerdictKind::kDiverged;
    verdict.summary =
        "diverged at step " + std::to_string(diverged->step) + ": " + diverged->key + " " +
        (diverged->note.empty() ? ShortestNumber(diverged->reproduced) + " (original " +
                                      ShortestNumber(diverged->original) + ")"
                                : diverged->note);
  } else if (widest != nullptr) {
    verdict.kind = VerdictKind::kWithinTolerance;
    verdict.summary = "within tolerance: " + std::to_string(verdict.metrics.size()) +
                      " metric(s), " + std::to_string(points) +
                      " value(s); the largest difference is " +
                      ShortestNumber(widest->max_abs_diff) + " in " + widest->key;
  } else {
    verdict.kind = VerdictKind::kIdentical;
    verdict.summary = "identical: " + std::to_string(verdict.metrics.size()) + " metric(s), " +
                      std::to_string(points) + " value(s), bit for bit";
  }
  return verdict;
}

ReproductionDifferences CompareRunRecords(const core::Run& original, const core::Run& reproduced) {
  ReproductionDifferences d;
  const std::string a = TagOf(original, "cairn.code.snapshot");
  const std::string b = TagOf(reproduced, "cairn.code.snapshot");
  if (a != b) {
    d.code.push_back("code snapshot " + (a.empty() ? std::string("(none)") : a.substr(0, 12)) +
                     " -> " + (b.empty() ? std::string("(none)") : b.substr(0, 12)));
  }
  const std::string ca = TagOf(original, "mlflow.source.git.commit");
  const std::string cb = TagOf(reproduced, "mlflow.source.git.commit");
  if (ca != cb) {
    d.code.push_back("commit " + (ca.empty() ? std::string("(none)") : ca.substr(0, 12)) + " -> " +
                     (cb.empty() ? std::string("(none)") : cb.substr(0, 12)));
  }
  std::map<std::string, std::string> da, db;
  for (const core::DatasetInput& in : original.inputs) da[in.dataset.name] = in.dataset.digest;
  for (const core::DatasetInput& in : reproduced.inputs) db[in.dataset.name] = in.dataset.digest;
  for (const auto& [name, digest] : da) {
    auto it = db.find(name);
    if (it == db.end()) {
      d.datasets.push_back("dataset " + name + " (" + digest + ") not used by the new run");
    } else if (it->second != digest) {
      d.datasets.push_back("dataset " + name + ": digest " + digest + " -> " + it->second);
    }
  }
  for (const auto& [name, digest] : db) {
    if (da.count(name) == 0) {
      d.datasets.push_back("dataset " + name + " (" + digest + ") used only by the new run");
    }
  }
  return d;
}

std::string ReproductionJson(const core::Run& original, const core::Run& reproduced,
                             const ReproduceOptions& options, const Verdict& verdict,
                             const ReproductionDifferences& differences,
                             const std::string& host_facts_json) {
  JsonWriter w;
  w.BeginObject();
  w.Key("original").String(original.info.run_id);
  w.Key("reproduced").String(reproduced.info.run_id);
  w.Key("verdict").String(VerdictName(verdict.kind));
  w.Key("summary").String(verdict.summary);
  w.Key("options").Raw(ReproduceOptionsJson(options));
  w.Key("metrics").BeginArray();
  for (const MetricVerdict& m : verdict.metrics) {
    w.BeginObject().Key("key").String(m.key).Key("verdict").String(VerdictName(m.kind));
    w.Key("points").Int(m.points).Key("max_abs_diff").Double(m.max_abs_diff);
    if (m.kind == VerdictKind::kDiverged || m.kind == VerdictKind::kIncomplete) {
      w.Key("step").Int(m.step);
    }
    if (m.kind == VerdictKind::kDiverged) {
      w.Key("original").Double(m.original).Key("reproduced").Double(m.reproduced);
    }
    if (!m.note.empty()) w.Key("note").String(m.note);
    w.EndObject();
  }
  w.EndArray();
  w.Key("differences").BeginObject();
  WriteLines(w, "environment", differences.environment);
  WriteLines(w, "code", differences.code);
  WriteLines(w, "datasets", differences.datasets);
  WriteLines(w, "artifacts", differences.artifacts);
  w.EndObject();
  w.Key("environment").BeginObject();
  // The lock its environment was built from (an agent's task, or a project's active
  // environment), and the snapshot of what was installed.
  w.Key("lock_hash").String(TagOf(reproduced, "cairn.env.lock"));
  w.Key("snapshot_hash").String(TagOf(reproduced, "cairn.env.hash"));
  w.Key("host");
  if (host_facts_json.empty()) {
    w.Null();
  } else {
    w.Raw(host_facts_json);
  }
  w.EndObject();
  w.EndObject();
  return w.Take();
}

}  // namespace cairn::core
