#include "store/sqlite/run_search.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "store/sqlite/run_rows.h"
#include "store/store_util.h"

namespace cairn::store::sqlite {
namespace {

using core::EntityType;
using core::LifecycleStage;
using core::Metric;
using core::Run;

// ---------------------------------------------------------------------------------------------
// What a query refers to.

// The query's experiments as keys, each once; ids that name no experiment are left out.
std::vector<int64_t> QueryExperiments(const RunSearchQuery& query) {
  std::vector<int64_t> experiments;
  for (const std::string& exp : query.experiment_ids) {
    int64_t id = 0;
    if (!ParseExperimentId(exp, &id)) continue;
    if (std::find(experiments.begin(), experiments.end(), id) != experiments.end()) continue;
    experiments.push_back(id);
  }
  return experiments;
}

// The keys whose values matching and ordering read; run_name is read as the mlflow.runName tag.
struct WantedKeys {
  std::set<std::string> metrics, params, tags;
  bool inputs = false;
};

WantedKeys ReferencedKeys(const RunSearchQuery& query) {
  WantedKeys keys;
  auto want = [&](EntityType type, const std::string& key) {
    switch (type) {
      case EntityType::kMetric:
        keys.metrics.insert(key);
        break;
      case EntityType::kParam:
        keys.params.insert(key);
        break;
      case EntityType::kTag:
        keys.tags.insert(key);
        break;
      case EntityType::kDataset:
        keys.inputs = true;
        break;
      case EntityType::kAttribute:
        if (key == "run_name") keys.tags.insert(std::string(core::kRunNameTag));
        break;
    }
  };
  for (const core::Clause& cl : query.filter) want(cl.type, cl.key);
  for (const core::OrderKey& o : query.order) want(o.type, o.key);
  return keys;
}

// ---------------------------------------------------------------------------------------------
// Narrowing through the key indexes.

// The narrowing query for a metric comparison, or nullptr for comparators SQL does not decide
// exactly as RunMatches does (!=, on which NaN matches). Literals: statements are cached by
// their address.
const char* MetricNarrowingSql(core::Comparator op) {
#define CAIRN_NARROW(cmp)                                                                    \
  "SELECT run, step, timestamp, is_nan, value FROM latest_metrics WHERE key = ? AND is_nan " \
  "= 0 AND value " cmp " ?"
  switch (op) {
    case core::Comparator::kGt:
      return CAIRN_NARROW(">");
    case core::Comparator::kGe:
      return CAIRN_NARROW(">=");
    case core::Comparator::kLt:
      return CAIRN_NARROW("<");
    case core::Comparator::kLe:
      return CAIRN_NARROW("<=");
    case core::Comparator::kEq:
      return CAIRN_NARROW("=");
    default:
      return nullptr;
  }
#undef CAIRN_NARROW
}

// A set of internal run keys as a bitmap over [first, first + size): keys are dense.
struct RunSet {
  int64_t first = 0;
  std::vector<uint8_t> bits;
  size_t count = 0;
  bool Has(int64_t key) const {
    return key >= first && key - first < static_cast<int64_t>(bits.size()) &&
           bits[static_cast<size_t>(key - first)] != 0;
  }
  void Add(int64_t key) {
    if (key < first || key - first >= static_cast<int64_t>(bits.size())) return;
    uint8_t& b = bits[static_cast<size_t>(key - first)];
    count += b == 0 ? 1 : 0;
    b = 1;
  }
};

// Values of one key read while narrowing: (internal run key, value) for every run that
// passed the clause. Every run that survives narrowing is among them.
using NarrowedTexts = std::map<std::string, std::vector<std::pair<int64_t, std::string>>>;
struct NarrowedKeys {
  std::map<std::string, std::vector<std::pair<int64_t, Metric>>> metrics;
  NarrowedTexts params, tags;
};

// The statement that finds the runs passing `cl`, bound; nullptr when SQL cannot decide the
// clause exactly as RunMatches does.
Result<Stmt*> NarrowingStmt(Connection& c, const core::Clause& cl) {
  Stmt* s = nullptr;
  if ((cl.type == EntityType::kParam || cl.type == EntityType::kTag) &&
      cl.op == core::Comparator::kEq) {
    if (cl.type == EntityType::kParam) {
      CAIRN_ASSIGN_OR_RETURN(s, c.Prepare("SELECT run, value FROM params WHERE key = ? AND "
                                          "value = ?"));
    } else {
      CAIRN_ASSIGN_OR_RETURN(s, c.Prepare("SELECT run, value FROM tags WHERE key = ? AND "
                                          "value = ?"));
    }
    s->Bind(1, cl.key).Bind(2, cl.text);
  } else if (cl.type == EntityType::kMetric) {
    const char* sql = MetricNarrowingSql(cl.op);
    if (sql == nullptr) return s;
    CAIRN_ASSIGN_OR_RETURN(s, c.Prepare(sql));
    s->Bind(1, cl.key).Bind(2, cl.number);
  }
  return s;
}

// An empty set over the range of every run key.
Result<RunSet> AllRunsRange(Connection& c) {
  RunSet all;
  CAIRN_ASSIGN_OR_RETURN(Stmt * r, c.Prepare("SELECT MIN(id), MAX(id) FROM runs"));
  if (r->Step() && !r->IsNull(0)) {
    all.first = r->Int(0);
    all.bits.assign(static_cast<size_t>(r->Int(1) - r->Int(0) + 1), 0);
  }
  CAIRN_RETURN_IF_ERROR(r->status());
  return all;
}

// Runs that may satisfy the filter, found through the key indexes: the intersection over
// the clauses SQL can decide exactly as RunMatches does (param and tag equality, numeric
// metric comparisons on non-NaN values). nullopt when no clause qualifies. This only narrows
// the runs that are built; RunMatches still decides. The values read are kept in `read`, so
// that these keys need not be read again.
Result<std::optional<RunSet>> NarrowRuns(Connection& c, const std::vector<core::Clause>& filter,
                                         NarrowedKeys* read) {
  std::optional<RunSet> allowed;
  std::optional<RunSet> all;  // the range every set spans: all run keys
  for (const core::Clause& cl : filter) {
    CAIRN_ASSIGN_OR_RETURN(Stmt * s, NarrowingStmt(c, cl));
    if (s == nullptr) continue;
    if (!all) {
      CAIRN_ASSIGN_OR_RETURN(all, AllRunsRange(c));
    }
    const bool text = cl.type != EntityType::kMetric;
    RunSet match{all->first, std::vector<uint8_t>(all->bits.size(), 0), 0};
    std::vector<std::pair<int64_t, Metric>> metrics;
    std::vector<std::pair<int64_t, std::string>> texts;
    while (s->Step()) {
      int64_t run = s->Int(0);
      if (allowed && !allowed->Has(run)) continue;
      match.Add(run);
      if (text) {
        texts.emplace_back(run, s->Str(1));
      } else {
        metrics.emplace_back(run, ReadMetricPoint(*s, 1, cl.key));
      }
    }
    CAIRN_RETURN_IF_ERROR(s->status());
    if (cl.type == EntityType::kMetric) read->metrics[cl.key] = std::move(metrics);
    if (cl.type == EntityType::kParam) read->params[cl.key] = std::move(texts);
    if (cl.type == EntityType::kTag) read->tags[cl.key] = std::move(texts);
    allowed = std::move(match);
  }
  return allowed;
}

// ---------------------------------------------------------------------------------------------
// Walking a metric's order.

// Searches the walk answers: ordered first by a metric, with no dataset in filter or order.
bool MetricOrderWalkable(const RunSearchQuery& query) {
  if (query.order.empty() || query.order[0].type != EntityType::kMetric) return false;
  for (const core::Clause& cl : query.filter) {
    if (cl.type == EntityType::kDataset) return false;
  }
  for (const core::OrderKey& o : query.order) {
    if (o.type == EntityType::kDataset) return false;
  }
  return true;
}

// Which runs a walk takes, and the values (besides the walked metric) each one needs.
struct WalkScope {
  std::vector<int64_t> experiments;
  core::ViewType view = core::ViewType::kActiveOnly;
  WantedKeys keys;
};

// Loads run `key` for matching, with a few point lookups; false when it is outside the
// scope's experiments or view.
Result<bool> LoadWalkedRun(Connection& c, int64_t key, const WalkScope& scope, Run* run) {
  CAIRN_ASSIGN_OR_RETURN(Stmt * r, c.Prepare("SELECT " CAIRN_RUN_INFO_COLUMNS " FROM runs "
                                             "WHERE id = ?"));
  r->Bind(1, key);
  if (!r->Step()) return r->status().ok() ? Result<bool>(false) : r->status();
  if (std::find(scope.experiments.begin(), scope.experiments.end(), r->Int(2)) ==
      scope.experiments.end()) {
    return false;
  }
  ReadRunInfo(*r, &run->info);
  if (!core::StageVisible(run->info.lifecycle_stage, scope.view)) return false;
  for (const std::string& k : scope.keys.metrics) {
    CAIRN_ASSIGN_OR_RETURN(Stmt * m, c.Prepare("SELECT step, timestamp, is_nan, value FROM "
                                               "latest_metrics WHERE run = ? AND key = ?"));
    m->Bind(1, key).Bind(2, k);
    if (m->Step()) run->data.metrics.push_back(ReadMetricPoint(*m, 0, k));
    CAIRN_RETURN_IF_ERROR(m->status());
  }
  // Params and tags: one value per (run, key).
  auto read_values = [&](const char* sql, const std::set<std::string>& keys, auto* out) -> Status {
    for (const std::string& k : keys) {
      CAIRN_ASSIGN_OR_RETURN(Stmt * v, c.Prepare(sql));
      v->Bind(1, key).Bind(2, k);
      if (v->Step()) out->push_back({k, v->Str(0)});
      CAIRN_RETURN_IF_ERROR(v->status());
    }
    return Status::Ok();
  };
  CAIRN_RETURN_IF_ERROR(read_values("SELECT value FROM params WHERE run = ? AND key = ?",
                                    scope.keys.params, &run->data.params));
  CAIRN_RETURN_IF_ERROR(read_values("SELECT value FROM tags WHERE run = ? AND key = ?",
                                    scope.keys.tags, &run->data.tags));
  return true;
}

// A search ordered first by a metric can usually stop early. Walking that metric's values in
// the order asked for (then its NaNs, which sort after every number), the page is settled once
// offset + max_results runs have matched and every run tied with the last of them is in:
// whatever comes later sorts after all of those. Returns the matched runs, loaded as
// LoadSearchCandidates loads them, or nullopt when the walk does not settle within its budget
// (a filter few runs pass, or a page that reaches the runs without the metric); the full
// search answers then.
Result<std::optional<std::vector<Run>>> WalkMetricOrder(Connection& c,
                                                        const RunSearchQuery& query) {
  using Walked = std::optional<std::vector<Run>>;
  if (!MetricOrderWalkable(query)) return Walked();
  const std::string& walked_key = query.order[0].key;
  WalkScope scope{QueryExperiments(query), query.view, ReferencedKeys(query)};
  scope.keys.metrics.erase(walked_key);

  const size_t need = static_cast<size_t>(std::max<int64_t>(0, query.offset) + query.max_results);
  // A walk longer than this costs more than reading every run once.
  const size_t budget = 4 * need + 2000;
  size_t walked = 0;
  std::vector<Run> matched;
  const char* values_sql = query.order[0].ascending
                               ? "SELECT run, step, timestamp, is_nan, value FROM "
                                 "latest_metrics WHERE key = ? AND is_nan = 0 ORDER BY value"
                               : "SELECT run, step, timestamp, is_nan, value FROM "
                                 "latest_metrics WHERE key = ? AND is_nan = 0 ORDER BY value "
                                 "DESC";
  const char* nans_sql =
      "SELECT run, step, timestamp, is_nan, value FROM latest_metrics "
      "WHERE key = ? AND is_nan = 1";
  for (const char* sql : {values_sql, nans_sql}) {
    CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare(sql));
    s->Bind(1, walked_key);
    std::optional<double> last;  // the walked value of the last run that matched
    while (s->Step()) {
      Metric point = ReadMetricPoint(*s, 1, walked_key);
      // NaNs all tie with one another, so once reached they are read to the end.
      if (matched.size() >= need && !std::isnan(point.value) && point.value != *last) {
        return Walked(std::move(matched));
      }
      if (++walked > budget) return Walked();
      Run run;
      CAIRN_ASSIGN_OR_RETURN(bool visible, LoadWalkedRun(c, s->Int(0), scope, &run));
      if (!visible) continue;
      run.data.metrics.push_back(point);
      if (!core::RunMatches(run, query.filter)) continue;
      last = point.value;
      matched.push_back(std::move(run));
    }
    CAIRN_RETURN_IF_ERROR(s->status());
    if (matched.size() >= need) return Walked(std::move(matched));
  }
  return Walked();  // the page reaches the runs without the metric
}

// ---------------------------------------------------------------------------------------------
// Loading every candidate.

// Whether the query looks at attributes beyond the id, stage and start time, which the covering
// index runs_by_experiment holds.
bool NeedsWholeRunInfo(const RunSearchQuery& query) {
  auto lean = [](EntityType type, const std::string& key) {
    return type != EntityType::kAttribute || key == "run_id" || key == "start_time";
  };
  return !std::all_of(query.filter.begin(), query.filter.end(),
                      [&](const core::Clause& cl) { return lean(cl.type, cl.key); }) ||
         !std::all_of(query.order.begin(), query.order.end(),
                      [&](const core::OrderKey& o) { return lean(o.type, o.key); });
}

// Appends the runs of the query's experiments that are in `allowed` (when narrowed) and visible
// in its view, with as much of their info as `whole_info` asks for; keys gets their internal
// keys.
Status ReadCandidateRows(Connection& c, const RunSearchQuery& query,
                         const std::optional<RunSet>& allowed, bool whole_info,
                         std::vector<Run>* runs, std::vector<int64_t>* keys) {
  for (int64_t id : QueryExperiments(query)) {
    CAIRN_ASSIGN_OR_RETURN(
        Stmt * s, c.Prepare(whole_info ? "SELECT " CAIRN_RUN_INFO_COLUMNS " FROM runs WHERE "
                                         "experiment_id = ?"
                                       : "SELECT id, run_uuid, lifecycle_stage, start_time "
                                         "FROM runs WHERE experiment_id = ?"));
    s->Bind(1, id);
    const int stage_col = whole_info ? 9 : 2;
    while (s->Step()) {
      if (allowed && !allowed->Has(s->Int(0))) continue;
      LifecycleStage stage = LifecycleStage::kActive;
      core::ParseLifecycleStage(s->Text(stage_col), &stage);
      if (!core::StageVisible(stage, query.view)) continue;
      Run& run = runs->emplace_back();
      if (whole_info) {
        keys->push_back(ReadRunInfo(*s, &run.info));
        continue;
      }
      keys->push_back(s->Int(0));
      run.info.run_id = s->Str(1);
      run.info.experiment_id = std::to_string(id);
      run.info.lifecycle_stage = stage;
      run.info.start_time = s->Int(3);
    }
    CAIRN_RETURN_IF_ERROR(s->status());
  }
  return Status::Ok();
}

// Candidates by internal key. Keys of runs are dense integers, so a vector maps them back to
// positions.
class CandidateIndex {
 public:
  CandidateIndex(const std::vector<int64_t>& keys, std::vector<Run>* runs) : runs_(runs) {
    auto [lo, hi] = std::minmax_element(keys.begin(), keys.end());
    base_ = *lo;
    slot_.assign(static_cast<size_t>(*hi - base_ + 1), -1);
    for (size_t i = 0; i < keys.size(); ++i) slot_[keys[i] - base_] = static_cast<int32_t>(i);
  }
  // The candidate with internal key `key`, or nullptr.
  Run* Find(int64_t key) const {
    if (key < base_ || key - base_ >= static_cast<int64_t>(slot_.size())) return nullptr;
    int32_t i = slot_[key - base_];
    return i < 0 ? nullptr : &(*runs_)[static_cast<size_t>(i)];
  }

 private:
  std::vector<Run>* runs_;
  int64_t base_ = 0;
  std::vector<int32_t> slot_;
};

// Adds the latest value of each key to the candidates that have it, from what narrowing read
// where it read the key.
Status AttachMetrics(Connection& c, const std::set<std::string>& keys, NarrowedKeys* narrowed,
                     const CandidateIndex& index) {
  for (const std::string& k : keys) {
    if (auto it = narrowed->metrics.find(k); it != narrowed->metrics.end()) {
      for (auto& [key, m] : it->second) {
        if (Run* r = index.Find(key)) r->data.metrics.push_back(std::move(m));
      }
      continue;
    }
    CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT run, step, timestamp, is_nan, value "
                                               "FROM latest_metrics WHERE key = ?"));
    s->Bind(1, k);
    while (s->Step()) {
      if (Run* r = index.Find(s->Int(0))) r->data.metrics.push_back(ReadMetricPoint(*s, 1, k));
    }
    CAIRN_RETURN_IF_ERROR(s->status());
  }
  return Status::Ok();
}

// Params or tags (`sql` selects run, value by key; `list` picks the run's list) as
// AttachMetrics adds metrics.
template <typename ListOf>
Status AttachTexts(Connection& c, const char* sql, const std::set<std::string>& keys,
                   NarrowedTexts* narrowed, const CandidateIndex& index, ListOf list) {
  for (const std::string& k : keys) {
    if (auto it = narrowed->find(k); it != narrowed->end()) {
      for (auto& [key, v] : it->second) {
        if (Run* r = index.Find(key)) list(*r).push_back({k, std::move(v)});
      }
      continue;
    }
    CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare(sql));
    s->Bind(1, k);
    while (s->Step()) {
      if (Run* r = index.Find(s->Int(0))) list(*r).push_back({k, s->Str(1)});
    }
    CAIRN_RETURN_IF_ERROR(s->status());
  }
  return Status::Ok();
}

// The candidates' dataset inputs, with only what a dataset clause reads: name, digest and
// context.
Status AttachInputs(Connection& c, const CandidateIndex& index) {
  CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT i.run, d.name, d.digest, t.value FROM "
                                             "inputs i JOIN datasets d ON d.id = i.dataset "
                                             "LEFT JOIN input_tags t ON t.run = i.run AND "
                                             "t.dataset = i.dataset AND t.key = "
                                             "'mlflow.data.context'"));
  while (s->Step()) {
    Run* r = index.Find(s->Int(0));
    if (r == nullptr) continue;
    core::DatasetInput input;
    input.dataset.name = s->Str(1);
    input.dataset.digest = s->Str(2);
    if (!s->IsNull(3)) input.tags.push_back({std::string(core::kDatasetContextTag), s->Str(3)});
    r->inputs.push_back(std::move(input));
  }
  return s->status();
}

// Loads the runs visible to the query with just the metrics, params, tags and inputs its
// filter and order refer to, so that matching and sorting need no further queries, and keeps
// those that match.
Result<std::vector<Run>> LoadSearchCandidates(Connection& c, const RunSearchQuery& query) {
  NarrowedKeys narrowed;
  CAIRN_ASSIGN_OR_RETURN(std::optional<RunSet> allowed, NarrowRuns(c, query.filter, &narrowed));
  std::vector<Run> runs;
  std::vector<int64_t> keys;  // keys[i] is the internal key of runs[i]
  if (allowed) {
    runs.reserve(allowed->count);
  } else {
    CAIRN_ASSIGN_OR_RETURN(Stmt * n, c.Prepare("SELECT COUNT(*) FROM runs"));
    if (n->Step()) runs.reserve(static_cast<size_t>(n->Int(0)));
    CAIRN_RETURN_IF_ERROR(n->status());
  }
  CAIRN_RETURN_IF_ERROR(
      ReadCandidateRows(c, query, allowed, NeedsWholeRunInfo(query), &runs, &keys));
  if (runs.empty()) return runs;

  const CandidateIndex index(keys, &runs);
  const WantedKeys wanted = ReferencedKeys(query);
  CAIRN_RETURN_IF_ERROR(AttachMetrics(c, wanted.metrics, &narrowed, index));
  CAIRN_RETURN_IF_ERROR(AttachTexts(
      c, "SELECT run, value FROM params WHERE key = ?", wanted.params, &narrowed.params, index,
      [](Run & r) -> auto& { return r.data.params; }));
  CAIRN_RETURN_IF_ERROR(AttachTexts(
      c, "SELECT run, value FROM tags WHERE key = ?", wanted.tags, &narrowed.tags, index,
      [](Run & r) -> auto& { return r.data.tags; }));
  if (wanted.inputs) CAIRN_RETURN_IF_ERROR(AttachInputs(c, index));
  if (!query.filter.empty()) {
    runs.erase(std::remove_if(runs.begin(), runs.end(),
                              [&](const Run& run) { return !core::RunMatches(run, query.filter); }),
               runs.end());
  }
  return runs;
}

}  // namespace

Result<std::vector<Run>> SearchRunsIn(Connection& c, const RunSearchQuery& query) {
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::vector<Run>> candidates, WalkMetricOrder(c, query));
  if (!candidates) {
    CAIRN_ASSIGN_OR_RETURN(candidates, LoadSearchCandidates(c, query));
  }
  std::vector<Run> page = SortAndPage(std::move(*candidates), query);
  CAIRN_RETURN_IF_ERROR(ReloadRuns(c, &page));
  return page;
}

}  // namespace cairn::store::sqlite
