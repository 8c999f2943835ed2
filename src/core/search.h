// MLflow's search language for runs and experiments: a filter is comparisons joined by AND;
// order_by is a list of "<identifier> [ASC|DESC]". Parsing turns the text into clauses once;
// matching and ordering then run over in-memory runs, so every store answers a search the same
// way. Grammar, aliases and the placement of NaN and missing values follow MLflow's
// search_utils.py and its SQL store; docs/api/search.md states them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "util/status.h"

namespace cairn::core {

enum class EntityType { kMetric, kParam, kTag, kAttribute, kDataset };

enum class Comparator { kEq, kNe, kLt, kLe, kGt, kGe, kLike, kILike, kIn, kNotIn };

// One comparison of a filter.
//  - kMetric: key is the metric key; number holds the literal; compared with the run's latest
//    value.
//  - kParam / kTag: key is the param or tag key; text holds the literal.
//  - kAttribute: key is the canonical attribute name: "run_id", "run_name", "user_id",
//    "status", "artifact_uri", "start_time", "end_time" for runs; "name", "creation_time",
//    "last_update_time" for experiments. Numeric attributes use number, string attributes
//    text, IN / NOT IN use list.
//  - kDataset: key is "name", "digest" or "context"; text or list.
struct Clause {
  EntityType type = EntityType::kAttribute;
  std::string key;
  Comparator op = Comparator::kEq;
  double number = 0;
  std::string text;
  std::vector<std::string> list;
};

struct OrderKey {
  EntityType type = EntityType::kAttribute;
  std::string key;  // canonical, as in Clause
  bool ascending = true;
};

// Parses a runs/search filter. An empty or all-blank filter gives no clauses. Errors are
// kInvalidArgument with a message that names the offending part, e.g.
// "Invalid clause(s) in filter string: 'or'".
Result<std::vector<Clause>> ParseRunFilter(std::string_view filter);
// Parses runs/search order_by entries; a duplicated key is an error.
Result<std::vector<OrderKey>> ParseRunOrderBy(const std::vector<std::string>& order_by);

Result<std::vector<Clause>> ParseExperimentFilter(std::string_view filter);
Result<std::vector<OrderKey>> ParseExperimentOrderBy(const std::vector<std::string>& order_by);

// True when the run satisfies every clause. A run lacking the key of a clause never matches.
bool RunMatches(const Run& run, const std::vector<Clause>& clauses);
bool ExperimentMatches(const Experiment& experiment, const std::vector<Clause>& clauses);

// Sorts in place by the order keys, then MLflow's tie-breaks (start_time DESC unless start_time
// is among the keys, then run_id ASC). Values come first, then NaN metrics, then runs lacking
// the key, in either direction. With `limit`, only the first `limit` runs of that order are
// kept (and only they are fully ordered): what a page needs, for less work.
void SortRuns(std::vector<Run>* runs, const std::vector<OrderKey>& order,
              size_t limit = static_cast<size_t>(-1));
// Default order creation_time DESC, experiment_id ASC; explicit keys tie-break on
// experiment_id ASC.
void SortExperiments(std::vector<Experiment>* experiments, const std::vector<OrderKey>& order);

// SQL LIKE over bytes: '%' any run, '_' one character; case-insensitive when `fold_case`.
bool LikeMatch(std::string_view text, std::string_view pattern, bool fold_case);

}  // namespace cairn::core
