#include "store/sqlite/run_values.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <utility>

#include "store/sqlite/run_rows.h"
#include "store/store_util.h"

namespace cairn::store::sqlite {
namespace {

using core::Metric;

// Metric order: (step, timestamp, value).
bool Older(const Metric& a, const Metric& b) { return core::MetricIsNewer(b, a); }

// The query's points still in the metric log, in order: few, since the log is compacted often.
Result<std::vector<Metric>> PendingPoints(Connection& c, int64_t run,
                                          const MetricHistoryQuery& query) {
  CAIRN_ASSIGN_OR_RETURN(Stmt * l, c.Prepare("SELECT step, timestamp, is_nan, value FROM "
                                             "metric_log WHERE run = ? AND key = ? AND step >= "
                                             "? AND step <= ?"));
  l->Bind(1, run).Bind(2, query.key);
  l->Bind(3, query.min_step.value_or(INT64_MIN)).Bind(4, query.max_step.value_or(INT64_MAX));
  std::vector<Metric> pending;
  while (l->Step()) {
    Metric m = ReadMetricPoint(*l, 0, query.key);
    if (!query.after || core::MetricIsNewer(m, *query.after)) pending.push_back(std::move(m));
  }
  CAIRN_RETURN_IF_ERROR(l->status());
  std::sort(pending.begin(), pending.end(), Older);
  return pending;
}

// The scan of the clustered table for the query, in order. With nothing pending the database
// applies the page bounds itself; otherwise it reads up to the page's end, and *skip is how
// many of the merged points precede the page.
Result<Stmt*> PrepareClusteredScan(Connection& c, int64_t run, const MetricHistoryQuery& query,
                                   bool nothing_pending, int64_t* skip) {
  // The scan starts at one row-value bound, which SQLite seeks to in the primary key: after
  // query.after, or at min_step, whichever is later. (is_nan is 0 or 1, so -1 places the
  // bound before every row of its step and timestamp.)
  // A whole history (what a chart reads) skips the bound's comparisons, a sixth of the work.
  const int64_t min_step = query.min_step.value_or(INT64_MIN);
  const bool whole = !query.after && !query.min_step && !query.max_step;
  CAIRN_ASSIGN_OR_RETURN(
      Stmt * s,
      c.Prepare(whole ? "SELECT step, timestamp, is_nan, value FROM metrics WHERE run = ?1 AND "
                        "key = ?2 ORDER BY step, timestamp, is_nan, value LIMIT ?5 OFFSET ?6"
                      : "SELECT step, timestamp, is_nan, value FROM metrics WHERE run = ?1 AND "
                        "key = ?2 AND (step, timestamp, is_nan, value) > (?3, ?7, ?8, ?9) AND "
                        "step <= ?4 ORDER BY step, timestamp, is_nan, value LIMIT ?5 OFFSET ?6"));
  s->Bind(1, run).Bind(2, query.key);
  if (!whole) {
    s->Bind(4, query.max_step.value_or(INT64_MAX));
    if (query.after && query.after->step >= min_step) {
      bool nan = std::isnan(query.after->value);
      s->Bind(3, query.after->step).Bind(7, query.after->timestamp).Bind(8, nan ? 1 : 0);
      s->Bind(9, nan ? 0.0 : query.after->value);
    } else {
      s->Bind(3, min_step).Bind(7, INT64_MIN).Bind(8, -1).Bind(9, 0.0);
    }
  }
  *skip = query.offset;
  if (nothing_pending) {
    s->Bind(5, query.max_results > 0 ? query.max_results : int64_t{-1}).Bind(6, query.offset);
    *skip = 0;
  } else {
    s->Bind(5, query.max_results > 0 ? query.offset + query.max_results : int64_t{-1});
    s->Bind(6, int64_t{0});
  }
  return s;
}

}  // namespace

Status UpsertRunTag(Connection& c, int64_t run, const core::Tag& tag) {
  CAIRN_RETURN_IF_ERROR(ExecStmt(c,
                                 "INSERT INTO tags (run, key, value) VALUES (?, ?, ?) ON "
                                 "CONFLICT (run, key) DO UPDATE SET value = excluded.value",
                                 run, tag.key, tag.value));
  if (tag.key == core::kRunNameTag) {
    return ExecStmt(c, "UPDATE runs SET name = ? WHERE id = ?", tag.value, run);
  }
  return Status::Ok();
}

Status LogBatchIn(Connection& c, int64_t run, std::string_view run_id,
                  const std::vector<Metric>& metrics, const std::vector<core::Param>& params,
                  const std::vector<core::Tag>& tags, int64_t* logged_points) {
  for (const core::Param& p : params) {
    CAIRN_ASSIGN_OR_RETURN(Stmt * s,
                           c.Prepare("SELECT value FROM params WHERE run = ? AND key = ?"));
    s->Bind(1, run).Bind(2, p.key);
    if (s->Step()) {
      if (s->Text(0) != p.value) return ParamChanged(run_id, p.key, s->Text(0), p.value);
      continue;
    }
    CAIRN_RETURN_IF_ERROR(s->status());
    CAIRN_RETURN_IF_ERROR(ExecStmt(c,
                                   "INSERT OR IGNORE INTO params (run, key, value) VALUES "
                                   "(?, ?, ?)",
                                   run, p.key, p.value));
  }
  for (const core::Tag& t : tags) CAIRN_RETURN_IF_ERROR(UpsertRunTag(c, run, t));
  if (metrics.empty()) return Status::Ok();

  std::vector<Metric> latest;
  CAIRN_ASSIGN_OR_RETURN(Stmt * ins, c.Prepare("INSERT INTO metric_log (run, key, step, "
                                               "timestamp, is_nan, value) VALUES (?, ?, ?, ?, "
                                               "?, ?)"));
  for (const Metric& m : metrics) {
    bool nan = std::isnan(m.value);
    ins->Reset();
    ins->Bind(1, run).Bind(2, m.key).Bind(3, m.step).Bind(4, m.timestamp).Bind(5, nan ? 1 : 0);
    ins->Bind(6, nan ? 0.0 : m.value);
    CAIRN_RETURN_IF_ERROR(ins->Exec());
    UpdateLatest(&latest, m);
  }
  *logged_points += static_cast<int64_t>(metrics.size());
  for (const Metric& m : latest) {
    bool nan = std::isnan(m.value);
    CAIRN_RETURN_IF_ERROR(ExecStmt(
        c,
        "INSERT INTO latest_metrics (run, key, step, timestamp, is_nan, value) VALUES (?, ?, "
        "?, ?, ?, ?) ON CONFLICT (run, key) DO UPDATE SET step = excluded.step, timestamp = "
        "excluded.timestamp, is_nan = excluded.is_nan, value = excluded.value WHERE "
        "(excluded.step, excluded.timestamp, excluded.is_nan, excluded.value) > "
        "(latest_metrics.step, latest_metrics.timestamp, latest_metrics.is_nan, "
        "latest_metrics.value)",
        run, m.key, m.step, m.timestamp, nan ? 1 : 0, nan ? 0.0 : m.value));
  }
  return Status::Ok();
}

// Merges the clustered table, read in order, with the points still in the log, drops exact
// duplicates, and applies the page's offset and size.
Status ScanHistoryIn(Connection& c, const MetricHistoryQuery& query,
                     const std::function<bool(const Metric&)>& visit) {
  CAIRN_ASSIGN_OR_RETURN(int64_t run, RunKey(c, query.run_id));
  CAIRN_ASSIGN_OR_RETURN(std::vector<Metric> pending, PendingPoints(c, run, query));
  int64_t skip = 0;
  CAIRN_ASSIGN_OR_RETURN(Stmt * s, PrepareClusteredScan(c, run, query, pending.empty(), &skip));
  int64_t emitted = 0;
  size_t next_pending = 0;
  bool have_last = false;
  Metric last;
  // Emits m unless it repeats the previous point; false once the page is complete or the
  // visitor stops.
  auto emit = [&](Metric m) {
    if (have_last && core::SameMetricPoint(last, m)) return true;
    last = m;
    have_last = true;
    if (skip > 0) {
      --skip;
      return true;
    }
    if (query.max_results > 0 && emitted == query.max_results) return false;
    ++emitted;
    return visit(last);
  };
  bool more = true;
  while (more && s->Step()) {
    Metric m = ReadMetricPoint(*s, 0, query.key);
    while (more && next_pending < pending.size() && Older(pending[next_pending], m)) {
      more = emit(std::move(pending[next_pending++]));
    }
    if (more) more = emit(std::move(m));
  }
  CAIRN_RETURN_IF_ERROR(s->status());
  while (more && next_pending < pending.size()) more = emit(std::move(pending[next_pending++]));
  return Status::Ok();
}

Status CompactMetricLog(Connection& writer) {
  Status s = ExecStmt(writer, "BEGIN IMMEDIATE");
  if (s.ok()) {
    s = ExecStmt(writer,
                 "INSERT OR IGNORE INTO metrics (run, key, step, timestamp, is_nan, value) SELECT "
                 "run, key, step, timestamp, is_nan, value FROM metric_log");
  }
  if (s.ok()) s = ExecStmt(writer, "DELETE FROM metric_log");
  if (s.ok()) s = ExecStmt(writer, "COMMIT");
  writer.ResetAll();
  if (!s.ok()) (void)ExecStmt(writer, "ROLLBACK");
  return s;
}

}  // namespace cairn::store::sqlite
