// Matching and ordering of runs, experiments and registry entries by parsed clauses and order keys
// (search.h).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string_view>
#include <vector>

#include "core/search.h"
#include "util/strings.h"

namespace cairn::core {
namespace {

// ---------------------------------------------------------------------------------------------
// Values of runs and experiments, shared by matching and ordering.

// A run's or experiment's value for one key, borrowed from it.
struct FieldValue {
  enum class Kind { kMissing, kNumber, kText };
  Kind kind = Kind::kMissing;
  double number = 0;
  std::string_view text;

  static FieldValue Missing() { return {}; }
  static FieldValue Number(double number) { return {Kind::kNumber, number, {}}; }
  static FieldValue Text(std::string_view text) { return {Kind::kText, 0, text}; }
};

FieldValue TagValue(const std::vector<Tag>& tags, std::string_view key) {
  for (const Tag& tag : tags) {
    if (tag.key == key) return FieldValue::Text(tag.value);
  }
  return FieldValue::Missing();
}

FieldValue RunAttribute(const Run& run, std::string_view key) {
  const RunInfo& info = run.info;
  if (key == "run_id") return FieldValue::Text(info.run_id);
  if (key == "run_name") {
    // MLflow evaluates run_name as the mlflow.runName tag: runs from old clients have no name
    // column. A run that has neither has no name at all.
    if (const Tag* tag = run.FindTag(kRunNameTag)) return FieldValue::Text(tag->value);
    if (!info.run_name.empty()) return FieldValue::Text(info.run_name);
    return FieldValue::Missing();
  }
  if (key == "user_id") return FieldValue::Text(info.user_id);
  if (key == "status") return FieldValue::Text(RunStatusName(info.status));
  if (key == "artifact_uri") return FieldValue::Text(info.artifact_uri);
  if (key == "start_time") return FieldValue::Number(static_cast<double>(info.start_time));
  if (key == "end_time" && info.end_time.has_value()) {
    return FieldValue::Number(static_cast<double>(*info.end_time));
  }
  return FieldValue::Missing();
}

FieldValue RunField(const Run& run, EntityType type, std::string_view key) {
  switch (type) {
    case EntityType::kMetric:
      if (const Metric* metric = run.FindMetric(key)) return FieldValue::Number(metric->value);
      return FieldValue::Missing();
    case EntityType::kParam:
      if (const Param* param = run.FindParam(key)) return FieldValue::Text(param->value);
      return FieldValue::Missing();
    case EntityType::kTag:
      return TagValue(run.data.tags, key);
    case EntityType::kAttribute:
      return RunAttribute(run, key);
    case EntityType::kDataset:
      return FieldValue::Missing();  // a run has many; see DatasetMatches
  }
  return FieldValue::Missing();
}

FieldValue ExperimentField(const Experiment& experiment, EntityType type, std::string_view key) {
  if (type == EntityType::kTag) return TagValue(experiment.tags, key);
  if (type != EntityType::kAttribute) return FieldValue::Missing();
  if (key == "name") return FieldValue::Text(experiment.name);
  if (key == "experiment_id") return FieldValue::Text(experiment.experiment_id);
  if (key == "creation_time")
    return FieldValue::Number(static_cast<double>(experiment.creation_time));
  if (key == "last_update_time") {
    return FieldValue::Number(static_cast<double>(experiment.last_update_time));
  }
  return FieldValue::Missing();
}

FieldValue RegisteredModelField(const RegisteredModel& model, EntityType type,
                                std::string_view key) {
  if (type == EntityType::kTag) return TagValue(model.tags, key);
  if (type != EntityType::kAttribute) return FieldValue::Missing();
  if (key == "name") return FieldValue::Text(model.name);
  if (key == "creation_timestamp") {
    return FieldValue::Number(static_cast<double>(model.creation_timestamp));
  }
  if (key == "last_updated_timestamp") {
    return FieldValue::Number(static_cast<double>(model.last_updated_timestamp));
  }
  return FieldValue::Missing();
}

FieldValue ModelVersionField(const ModelVersion& version, EntityType type, std::string_view key) {
  if (type == EntityType::kTag) return TagValue(version.tags, key);
  if (type != EntityType::kAttribute) return FieldValue::Missing();
  if (key == "name") return FieldValue::Text(version.name);
  if (key == "version_number") return FieldValue::Number(static_cast<double>(version.version));
  if (key == "run_id") return FieldValue::Text(version.run_id);
  if (key == "source_path") return FieldValue::Text(version.source);
  if (key == "creation_timestamp") {
    return FieldValue::Number(static_cast<double>(version.creation_timestamp));
  }
  if (key == "last_updated_timestamp") {
    return FieldValue::Number(static_cast<double>(version.last_updated_timestamp));
  }
  return FieldValue::Missing();
}

// IEEE comparisons, so a NaN value satisfies only !=.
bool NumberMatches(double value, Comparator op, double literal) {
  switch (op) {
    case Comparator::kEq:
      return value == literal;
    case Comparator::kNe:
      return value != literal;
    case Comparator::kLt:
      return value < literal;
    case Comparator::kLe:
      return value <= literal;
    case Comparator::kGt:
      return value > literal;
    case Comparator::kGe:
      return value >= literal;
    default:
      return false;
  }
}

bool TextMatches(std::string_view value, const Clause& clause) {
  switch (clause.op) {
    case Comparator::kEq:
      return value == clause.text;
    case Comparator::kNe:
      return value != clause.text;
    case Comparator::kLike:
      return LikeMatch(value, clause.text, /*fold_case=*/false);
    case Comparator::kILike:
      return LikeMatch(value, clause.text, /*fold_case=*/true);
    case Comparator::kIn:
      return std::find(clause.list.begin(), clause.list.end(), value) != clause.list.end();
    case Comparator::kNotIn:
      return std::find(clause.list.begin(), clause.list.end(), value) == clause.list.end();
    default:
      return false;
  }
}

// A missing value never matches, whatever the comparator: MLflow's SQL store joins on the key.
bool FieldMatches(const FieldValue& value, const Clause& clause) {
  switch (value.kind) {
    case FieldValue::Kind::kMissing:
      return false;
    case FieldValue::Kind::kNumber:
      return NumberMatches(value.number, clause.op, clause.number);
    case FieldValue::Kind::kText:
      return TextMatches(value.text, clause);
  }
  return false;
}

// A dataset clause holds when any one of the run's inputs satisfies it.
bool DatasetMatches(const Run& run, const Clause& clause) {
  for (const DatasetInput& input : run.inputs) {
    FieldValue value;
    if (clause.key == "name") {
      value = FieldValue::Text(input.dataset.name);
    } else if (clause.key == "digest") {
      value = FieldValue::Text(input.dataset.digest);
    } else if (clause.key == "context") {
      value = TagValue(input.tags, kDatasetContextTag);
    }
    if (FieldMatches(value, clause)) return true;
  }
  return false;
}

// Three-way comparison of two present, non-NaN values of one key.
int CompareValues(const FieldValue& a, const FieldValue& b) {
  if (a.kind == FieldValue::Kind::kNumber && b.kind == FieldValue::Kind::kNumber) {
    return a.number < b.number ? -1 : (a.number > b.number ? 1 : 0);
  }
  if (a.kind == FieldValue::Kind::kText && b.kind == FieldValue::Kind::kText) {
    const int c = a.text.compare(b.text);
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  return a.kind == FieldValue::Kind::kNumber ? -1 : 1;  // unreachable for parsed keys
}

// Where a value sorts regardless of direction: values, then NaN, then missing. This is the order
// MLflow's SQL store produces with its CASE columns.
int PlacementRank(const FieldValue& value) {
  if (value.kind == FieldValue::Kind::kMissing) return 2;
  if (value.kind == FieldValue::Kind::kNumber && std::isnan(value.number)) return 1;
  return 0;
}

int CompareForOrder(const FieldValue& a, const FieldValue& b, bool ascending) {
  const int rank_a = PlacementRank(a);
  const int rank_b = PlacementRank(b);
  if (rank_a != rank_b) return rank_a < rank_b ? -1 : 1;
  if (rank_a != 0) return 0;
  const int c = CompareValues(a, b);
  return ascending ? c : -c;
}

bool IsAllDigits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Experiment ids are integers in MLflow's SQL store and compare numerically there; ids that are
// not integers fall back to byte order.
int CompareExperimentIds(std::string_view a, std::string_view b) {
  if (IsAllDigits(a) && IsAllDigits(b)) {
    const auto strip = [](std::string_view s) {
      const size_t first = s.find_first_not_of('0');
      return first == std::string_view::npos ? std::string_view() : s.substr(first);
    };
    a = strip(a);
    b = strip(b);
    if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  }
  const int c = a.compare(b);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

// Steps over one UTF-8 character starting at `i`, so that '_' matches a character, not a byte.
size_t NextCharacter(std::string_view text, size_t i) {
  ++i;
  while (i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) ++i;
  return i;
}

}  // namespace

bool RunMatches(const Run& run, const std::vector<Clause>& clauses) {
  return std::all_of(clauses.begin(), clauses.end(), [&run](const Clause& clause) {
    if (clause.type == EntityType::kDataset) return DatasetMatches(run, clause);
    return FieldMatches(RunField(run, clause.type, clause.key), clause);
  });
}

bool ExperimentMatches(const Experiment& experiment, const std::vector<Clause>& clauses) {
  return std::all_of(clauses.begin(), clauses.end(), [&experiment](const Clause& clause) {
    return FieldMatches(ExperimentField(experiment, clause.type, clause.key), clause);
  });
}

void SortRuns(std::vector<Run>* runs, const std::vector<OrderKey>& order, size_t limit) {
  std::vector<OrderKey> keys = order;
  const bool orders_by_start_time = std::any_of(order.begin(), order.end(), [](const OrderKey& k) {
    return k.type == EntityType::kAttribute && k.key == "start_time";
  });
  if (!orders_by_start_time) keys.push_back({EntityType::kAttribute, "start_time", false});
  keys.push_back({EntityType::kAttribute, "run_id", true});

  // Look every value up once rather than once per comparison, into one flat table (a row per
  // run, a column per key); the views borrow from *runs, which stays untouched until the order
  // is known.
  const size_t width = keys.size();
  std::vector<FieldValue> values;
  values.reserve(runs->size() * width);
  for (const Run& run : *runs) {
    for (const OrderKey& key : keys) values.push_back(RunField(run, key.type, key.key));
  }
  std::vector<size_t> order_of(runs->size());
  for (size_t i = 0; i < order_of.size(); ++i) order_of[i] = i;
  // Ties left after every key (equal run ids) keep their input order.
  auto before = [&](size_t a, size_t b) {
    const FieldValue* va = &values[a * width];
    const FieldValue* vb = &values[b * width];
    for (size_t k = 0; k < width; ++k) {
      const int c = CompareForOrder(va[k], vb[k], keys[k].ascending);
      if (c != 0) return c < 0;
    }
    return a < b;
  };
  const size_t keep = std::min(limit, order_of.size());
  if (keep < order_of.size()) {
    std::partial_sort(order_of.begin(), order_of.begin() + static_cast<ptrdiff_t>(keep),
                      order_of.end(), before);
  } else {
    std::sort(order_of.begin(), order_of.end(), before);
  }

  std::vector<Run> sorted;
  sorted.reserve(keep);
  for (size_t n = 0; n < keep; ++n) sorted.push_back(std::move((*runs)[order_of[n]]));
  *runs = std::move(sorted);
}

void SortExperiments(std::vector<Experiment>* experiments, const std::vector<OrderKey>& order) {
  std::vector<OrderKey> keys = order;
  if (keys.empty()) keys.push_back({EntityType::kAttribute, "creation_time", false});
  const bool orders_by_id = std::any_of(keys.begin(), keys.end(), [](const OrderKey& k) {
    return k.type == EntityType::kAttribute && k.key == "experiment_id";
  });
  if (!orders_by_id) keys.push_back({EntityType::kAttribute, "experiment_id", true});

  std::stable_sort(experiments->begin(), experiments->end(),
                   [&keys](const Experiment& a, const Experiment& b) {
                     for (const OrderKey& key : keys) {
                       int c = 0;
                       if (key.type == EntityType::kAttribute && key.key == "experiment_id") {
                         c = CompareExperimentIds(a.experiment_id, b.experiment_id);
                         if (!key.ascending) c = -c;
                       } else {
                         c = CompareForOrder(ExperimentField(a, key.type, key.key),
                                             ExperimentField(b, key.type, key.key), key.ascending);
                       }
                       if (c != 0) return c < 0;
                     }
                     return false;
                   });
}

bool RegisteredModelMatches(const RegisteredModel& model, const std::vector<Clause>& clauses) {
  return std::all_of(clauses.begin(), clauses.end(), [&model](const Clause& clause) {
    return FieldMatches(RegisteredModelField(model, clause.type, clause.key), clause);
  });
}

bool ModelVersionMatches(const ModelVersion& version, const std::vector<Clause>& clauses) {
  return std::all_of(clauses.begin(), clauses.end(), [&version](const Clause& clause) {
    return FieldMatches(ModelVersionField(version, clause.type, clause.key), clause);
  });
}

namespace {

bool HasKey(const std::vector<OrderKey>& keys, std::string_view key) {
  return std::any_of(keys.begin(), keys.end(), [key](const OrderKey& k) { return k.key == key; });
}

template <typename T, typename Field>
void SortByKeys(std::vector<T>* items, const std::vector<OrderKey>& keys, Field field) {
  std::stable_sort(items->begin(), items->end(), [&](const T& a, const T& b) {
    for (const OrderKey& key : keys) {
      const int c =
          CompareForOrder(field(a, key.type, key.key), field(b, key.type, key.key), key.ascending);
      if (c != 0) return c < 0;
    }
    return false;
  });
}

}  // namespace

std::vector<OrderKey> RegisteredModelOrder(const std::vector<OrderKey>& order) {
  std::vector<OrderKey> keys = order;
  if (!HasKey(keys, "name")) keys.push_back({EntityType::kAttribute, "name", true});
  return keys;
}

std::vector<OrderKey> ModelVersionOrder(const std::vector<OrderKey>& order) {
  std::vector<OrderKey> keys = order;
  if (keys.empty()) keys.push_back({EntityType::kAttribute, "last_updated_timestamp", false});
  if (!HasKey(keys, "name")) keys.push_back({EntityType::kAttribute, "name", true});
  if (!HasKey(keys, "version_number")) {
    keys.push_back({EntityType::kAttribute, "version_number", false});
  }
  return keys;
}

void SortRegisteredModels(std::vector<RegisteredModel>* models,
                          const std::vector<OrderKey>& order) {
  SortByKeys(models, RegisteredModelOrder(order), RegisteredModelField);
}

void SortModelVersions(std::vector<ModelVersion>* versions, const std::vector<OrderKey>& order) {
  SortByKeys(versions, ModelVersionOrder(order), ModelVersionField);
}

bool LikeMatch(std::string_view text, std::string_view pattern, bool fold_case) {
  const auto same = [fold_case](char a, char b) {
    return fold_case ? AsciiLower(a) == AsciiLower(b) : a == b;
  };
  // Greedy matching that, on a mismatch, lets the last '%' absorb one more character. Linear in
  // practice and O(text * pattern) at worst, without recursion.
  size_t t = 0;
  size_t p = 0;
  size_t star_p = std::string_view::npos;  // pattern position just after the last '%'
  size_t star_t = 0;                       // text position that '%' has absorbed up to
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '%') {
      star_p = ++p;
      star_t = t;
    } else if (p < pattern.size() && pattern[p] == '_') {
      t = NextCharacter(text, t);
      ++p;
    } else if (p < pattern.size() && same(text[t], pattern[p])) {
      ++t;
      ++p;
    } else if (star_p != std::string_view::npos) {
      star_t = NextCharacter(text, star_t);
      t = star_t;
      p = star_p;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '%') ++p;
  return p == pattern.size();
}

}  // namespace cairn::core
