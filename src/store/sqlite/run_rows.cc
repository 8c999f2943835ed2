#include "store/sqlite/run_rows.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>
#include <utility>

#include "store/store_util.h"
#include "util/json_writer.h"

namespace cairn::store::sqlite {
namespace {

using core::Run;

// Where each run of a batch is, by internal key.
using RunPositions = std::unordered_map<int64_t, size_t>;

// The latest metrics, params and tags of the runs with internal keys in `ids` (a JSON array),
// each run's in key order.
Status LoadLatestValues(Connection& c, const std::string& ids, const RunPositions& position,
                        std::vector<Run>* runs) {
  auto run_of = [&](int64_t key) -> Run* {
    auto it = position.find(key);
    return it == position.end() ? nullptr : &(*runs)[it->second];
  };
  CAIRN_ASSIGN_OR_RETURN(Stmt * m, c.Prepare("SELECT run, key, step, timestamp, is_nan, value "
                                             "FROM latest_metrics WHERE run IN (SELECT value "
                                             "FROM json_each(?))"));
  m->Bind(1, ids);
  while (m->Step()) {
    if (Run* r = run_of(m->Int(0))) r->data.metrics.push_back(ReadMetricPoint(*m, 2, m->Str(1)));
  }
  CAIRN_RETURN_IF_ERROR(m->status());

  CAIRN_ASSIGN_OR_RETURN(Stmt * p, c.Prepare("SELECT run, key, value FROM params WHERE run IN "
                                             "(SELECT value FROM json_each(?))"));
  p->Bind(1, ids);
  while (p->Step()) {
    if (Run* r = run_of(p->Int(0))) r->data.params.push_back({p->Str(1), p->Str(2)});
  }
  CAIRN_RETURN_IF_ERROR(p->status());

  CAIRN_ASSIGN_OR_RETURN(Stmt * t, c.Prepare("SELECT run, key, value FROM tags WHERE run IN "
                                             "(SELECT value FROM json_each(?))"));
  t->Bind(1, ids);
  while (t->Step()) {
    if (Run* r = run_of(t->Int(0))) r->data.tags.push_back({t->Str(1), t->Str(2)});
  }
  CAIRN_RETURN_IF_ERROR(t->status());
  // Sorting a few per run is cheaper than having SQLite sort the rows of all runs.
  auto by_key = [](const auto& x, const auto& y) { return x.key < y.key; };
  for (Run& r : *runs) {
    std::sort(r.data.metrics.begin(), r.data.metrics.end(), by_key);
    std::sort(r.data.params.begin(), r.data.params.end(), by_key);
    std::sort(r.data.tags.begin(), r.data.tags.end(), by_key);
  }
  return Status::Ok();
}

// The dataset inputs of the runs with internal keys in `ids`, with their tags, in the order
// each run logged them.
Status LoadInputs(Connection& c, const std::string& ids, const RunPositions& position,
                  std::vector<Run>* runs) {
  CAIRN_ASSIGN_OR_RETURN(Stmt * in, c.Prepare("SELECT i.run, d.id, d.name, d.digest, "
                                              "d.source_type, d.source, d.schema, d.profile "
                                              "FROM inputs i JOIN datasets d ON d.id = "
                                              "i.dataset WHERE i.run IN (SELECT value FROM "
                                              "json_each(?)) ORDER BY i.run, i.seq"));
  in->Bind(1, ids);
  // (run key, dataset id) -> (run position, input position), for the input tags.
  std::map<std::pair<int64_t, int64_t>, std::pair<size_t, size_t>> where;
  while (in->Step()) {
    auto pos = position.find(in->Int(0));
    if (pos == position.end()) continue;
    Run& r = (*runs)[pos->second];
    core::DatasetInput input;
    input.dataset = {in->Str(2), in->Str(3), in->Str(4), in->Str(5), in->Str(6), in->Str(7)};
    r.inputs.push_back(std::move(input));
    where[{in->Int(0), in->Int(1)}] = {pos->second, r.inputs.size() - 1};
  }
  CAIRN_RETURN_IF_ERROR(in->status());
  if (where.empty()) return Status::Ok();
  CAIRN_ASSIGN_OR_RETURN(Stmt * it, c.Prepare("SELECT run, dataset, key, value FROM input_tags "
                                              "WHERE run IN (SELECT value FROM json_each(?)) "
                                              "ORDER BY key"));
  it->Bind(1, ids);
  while (it->Step()) {
    auto found = where.find({it->Int(0), it->Int(1)});
    if (found == where.end()) continue;
    auto [run_pos, input_pos] = found->second;
    (*runs)[run_pos].inputs[input_pos].tags.push_back({it->Str(2), it->Str(3)});
  }
  return it->status();
}

}  // namespace

int64_t ReadRunInfo(const Stmt& s, core::RunInfo* info) {
  info->run_id = s.Str(1);
  info->experiment_id = std::to_string(s.Int(2));
  info->run_name = s.Str(3);
  info->user_id = s.Str(4);
  core::ParseRunStatus(s.Text(5), &info->status);
  info->start_time = s.Int(6);
  if (s.IsNull(7)) {
    info->end_time.reset();
  } else {
    info->end_time = s.Int(7);
  }
  info->artifact_uri = s.Str(8);
  core::ParseLifecycleStage(s.Text(9), &info->lifecycle_stage);
  return s.Int(0);
}

core::Metric ReadMetricPoint(const Stmt& s, int first_col, std::string key) {
  core::Metric m;
  m.key = std::move(key);
  m.step = s.Int(first_col);
  m.timestamp = s.Int(first_col + 1);
  m.value = s.Int(first_col + 2) != 0 ? std::nan("") : s.Double(first_col + 3);
  return m;
}

Result<int64_t> ExperimentKey(Connection& c, std::string_view experiment_id) {
  int64_t id = 0;
  if (!ParseExperimentId(experiment_id, &id)) return ExperimentNotFound(experiment_id);
  CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT 1 FROM experiments WHERE experiment_id = ?"));
  s->Bind(1, id);
  if (!s->Step()) {
    CAIRN_RETURN_IF_ERROR(s->status());
    return ExperimentNotFound(experiment_id);
  }
  return id;
}

Result<RunRow> FindRun(Connection& c, std::string_view run_id) {
  CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT id, experiment_id, lifecycle_stage FROM "
                                             "runs WHERE run_uuid = ?"));
  s->Bind(1, run_id);
  if (!s->Step()) {
    CAIRN_RETURN_IF_ERROR(s->status());
    return RunNotFound(run_id);
  }
  RunRow row{s->Int(0), s->Int(1), core::LifecycleStage::kActive};
  core::ParseLifecycleStage(s->Text(2), &row.stage);
  return row;
}

Result<int64_t> RunKey(Connection& c, std::string_view run_id) {
  CAIRN_ASSIGN_OR_RETURN(RunRow row, FindRun(c, run_id));
  return row.key;
}

Result<int64_t> LoadRunInfo(Connection& c, std::string_view run_id, core::RunInfo* info) {
  CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT " CAIRN_RUN_INFO_COLUMNS " FROM runs WHERE "
                                             "run_uuid = ?"));
  s->Bind(1, run_id);
  if (!s->Step()) {
    CAIRN_RETURN_IF_ERROR(s->status());
    return RunNotFound(run_id);
  }
  return ReadRunInfo(*s, info);
}

Result<Run> LoadRun(Connection& c, std::string_view run_id) {
  std::vector<Run> one(1);
  CAIRN_ASSIGN_OR_RETURN(int64_t key, LoadRunInfo(c, run_id, &one[0].info));
  CAIRN_RETURN_IF_ERROR(LoadRunData(c, {key}, &one));
  return std::move(one[0]);
}

Status ReloadRuns(Connection& c, std::vector<Run>* runs) {
  if (runs->empty()) return Status::Ok();
  std::string ids = "[";
  std::unordered_map<std::string, size_t> position;
  for (size_t i = 0; i < runs->size(); ++i) {
    if (i > 0) ids += ',';
    AppendJsonString(&ids, (*runs)[i].info.run_id);
    position[(*runs)[i].info.run_id] = i;
  }
  ids += ']';
  CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT " CAIRN_RUN_INFO_COLUMNS " FROM runs WHERE "
                                             "run_uuid IN (SELECT value FROM json_each(?))"));
  s->Bind(1, ids);
  std::vector<int64_t> keys(runs->size(), -1);
  while (s->Step()) {
    size_t i = position[std::string(s->Text(1))];
    (*runs)[i] = Run();
    keys[i] = ReadRunInfo(*s, &(*runs)[i].info);
  }
  CAIRN_RETURN_IF_ERROR(s->status());
  return LoadRunData(c, keys, runs);
}

Status LoadRunData(Connection& c, const std::vector<int64_t>& keys, std::vector<Run>* runs) {
  RunPositions position;
  std::string ids = "[";
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i > 0) ids += ',';
    ids += std::to_string(keys[i]);
    position[keys[i]] = i;
  }
  ids += ']';
  CAIRN_RETURN_IF_ERROR(LoadLatestValues(c, ids, position, runs));
  return LoadInputs(c, ids, position, runs);
}

}  // namespace cairn::store::sqlite
