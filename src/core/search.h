// MLflow's search language for runs, experiments and the model registry: a filter is comparisons
// joined by AND; order_by is a list of "<identifier> [ASC|DESC]". Parsing turns the text into
// clauses once; matching and ordering then run over in-memory runs, so every store answers a search
// the same way. Grammar, aliases and the placement of NaN and missing values follow MLflow's
// search_utils.py and its SQL store; docs/api/search.md states them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "core/registry.h"
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
//    "last_update_time" for experiments; "name", "creation_timestamp",
//    "last_updated_timestamp" for registered models; those and "version_number", "run_id",
//    "source_path" for model versions. Numeric attributes use number, string attributes text,
//    IN / NOT IN use list.
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

// Registered models filter on the attribute "name" and on tags, and are ordered by "name",
// "creation_timestamp" or "last_updated_timestamp" (also spelled "timestamp").
Result<std::vector<Clause>> ParseRegisteredModelFilter(std::string_view filter);
Result<std::vector<OrderKey>> ParseRegisteredModelOrderBy(const std::vector<std::string>& order_by);
// Model versions filter on "name", "version_number", "run_id" (also with IN and NOT IN),
// "source_path" and on tags, and are ordered by "name", "version_number",
// "creation_timestamp" or "last_updated_timestamp".
Result<std::vector<Clause>> ParseModelVersionFilter(std::string_view filter);
Result<std::vector<OrderKey>> ParseModelVersionOrderBy(const std::vector<std::string>& order_by);

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

bool RegisteredModelMatches(const RegisteredModel& model, const std::vector<Clause>& clauses);
bool ModelVersionMatches(const ModelVersion& version, const std::vector<Clause>& clauses);
// Registered models: by the keys, then name ASC. Versions: by the keys (last_updated_timestamp
// DESC when none), then name ASC and version_number DESC unless already ordered by them.
void SortRegisteredModels(std::vector<RegisteredModel>* models, const std::vector<OrderKey>& order);
void SortModelVersions(std::vector<ModelVersion>* versions, const std::vector<OrderKey>& order);
// The order keys SortModelVersions applies, tie-breaks included; a store that orders in its
// own query language follows them.
std::vector<OrderKey> ModelVersionOrder(const std::vector<OrderKey>& order);
std::vector<OrderKey> RegisteredModelOrder(const std::vector<OrderKey>& order);

// SQL LIKE over bytes: '%' any run, '_' one character; case-insensitive when `fold_case`.
bool LikeMatch(std::string_view text, std::string_view pattern, bool fold_case);

}  // namespace cairn::core
