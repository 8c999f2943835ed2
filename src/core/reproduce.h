// The verdict of a reproduction (`cairn reproduce`, docs/reproduce.md): a run re-run from its
// record, compared with the original metric by metric, step by step.
//
//   identical         every compared series is equal, bit for bit, at the same steps
//   within tolerance  equal within the tolerances: |new - original| <= atol + rtol * |original|
//   diverged          a value beyond tolerance (or a step that differs): the first one by step
//   incomplete        the new run did not finish, or a series is missing or stopped early
//
// Pure functions of the two runs' metric histories, so that every rule is unit-tested. The
// server gives the verdict (service/reproduction.h); `cairn reproduce` and the web UI show it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "util/status.h"

namespace cairn::core {

struct Tolerance {
  double rtol = 0;
  double atol = 0;
};

struct ReproduceOptions {
  Tolerance tolerance;                          // for every metric
  std::map<std::string, Tolerance> per_metric;  // instead, for these
  // The metrics compared; empty: every metric of the original but system/... (CPU, memory
  // and GPU use, which no two runs share).
  std::vector<std::string> metrics;
};

// The options as JSON ({"rtol", "atol", "per_metric": {KEY: {"rtol", "atol"}}, "metrics"}),
// as cairn/reproduce.json, a reproduction task's spec and POST runs/reproduction hold them.
std::string ReproduceOptionsJson(const ReproduceOptions& options);
// InvalidArgument naming the field for a negative or non-numeric tolerance, or a metric that
// is not a string. Absent fields keep their defaults (exact comparison of every metric).
Result<ReproduceOptions> ParseReproduceOptions(std::string_view json);

enum class VerdictKind { kIdentical, kWithinTolerance, kDiverged, kIncomplete };
std::string_view VerdictName(VerdictKind kind);  // "identical", "within tolerance", ...

struct MetricVerdict {
  std::string key;
  VerdictKind kind = VerdictKind::kIdentical;
  int64_t points = 0;       // compared pairs
  double max_abs_diff = 0;  // over the compared pairs
  // diverged: the first step beyond tolerance and both values there; incomplete: why.
  int64_t step = 0;
  double original = 0;
  double reproduced = 0;
  std::string note;
};

struct Verdict {
  VerdictKind kind = VerdictKind::kIncomplete;
  std::string summary;                 // one line: "diverged at step 12: loss 0.513 (original 0.5)"
  std::vector<MetricVerdict> metrics;  // by key
};

// A run's full metric histories, by key.
using MetricHistories = std::map<std::string, std::vector<core::Metric>>;

// Why some series are partial, by metric: cut at the comparison's limits. A partial metric
// whose values agree so far, or that has none, is incomplete with that reason.
using PartialSeries = std::map<std::string, std::string>;

// Compares the histories. `reproduced_status` is the new run's status: one that did not
// finish makes the verdict incomplete whatever its metrics.
Verdict CompareReproduction(const MetricHistories& original, const MetricHistories& reproduced,
                            const ReproduceOptions& options, core::RunStatus reproduced_status,
                            const PartialSeries& partial = {});

// How the two runs differ beside their metrics, each a list of lines for people ("" when
// the same).
struct ReproductionDifferences {
  std::vector<std::string> environment;
  std::vector<std::string> code;
  std::vector<std::string> datasets;
  std::vector<std::string> artifacts;
};

// The code snapshots (tag cairn.code.snapshot) and dataset inputs (name and digest) of two runs.
ReproductionDifferences CompareRunRecords(const core::Run& original, const core::Run& reproduced);

// cairn/reproduce.json: both runs, the options, the verdict with every metric, the
// differences, and the new run's environment (the hash of the lock it was built from, tag
// cairn.env.lock; of its installed snapshot, cairn.env.hash) and host facts (JSON text, ""
// for none), so that environments can be matched with the verdicts they gave.
std::string ReproductionJson(const core::Run& original, const core::Run& reproduced,
                             const ReproduceOptions& options, const Verdict& verdict,
                             const ReproductionDifferences& differences,
                             const std::string& host_facts_json);

}  // namespace cairn::core
