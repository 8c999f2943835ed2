#include "core/search.h"

#include <algorithm>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/search_syntax.h"

namespace cairn::core {
namespace {

using search_syntax::ComparatorName;
using search_syntax::IdentifierPart;
using search_syntax::IsListComparator;
using search_syntax::ParseComparisons;
using search_syntax::ParseOrderEntry;
using search_syntax::Quoted;
using search_syntax::RawComparison;
using search_syntax::RawOrder;
using search_syntax::RawValue;
using search_syntax::Token;

// ---------------------------------------------------------------------------------------------
// Identifiers: entity prefixes, attribute names and their aliases.

struct EntityName {
  std::string_view name;
  EntityType type;
};

struct AttributeName {
  std::string_view name;
  std::string_view canonical;
  bool numeric;
};

constexpr EntityName kRunEntities[] = {
    {"metric", EntityType::kMetric},
    {"metrics", EntityType::kMetric},
    {"param", EntityType::kParam},
    {"params", EntityType::kParam},
    {"parameter", EntityType::kParam},
    {"parameters", EntityType::kParam},
    {"tag", EntityType::kTag},
    {"tags", EntityType::kTag},
    {"attribute", EntityType::kAttribute},
    {"attributes", EntityType::kAttribute},
    {"attr", EntityType::kAttribute},
    {"run", EntityType::kAttribute},
    {"dataset", EntityType::kDataset},
    {"datasets", EntityType::kDataset},
};

// The aliases are the spellings MLflow's UI sends.
constexpr AttributeName kRunAttributes[] = {
    {"run_id", "run_id", false},
    {"run_name", "run_name", false},
    {"user_id", "user_id", false},
    {"status", "status", false},
    {"artifact_uri", "artifact_uri", false},
    {"start_time", "start_time", true},
    {"end_time", "end_time", true},
    {"created", "start_time", true},
    {"Created", "start_time", true},
    {"run name", "run_name", false},
    {"Run name", "run_name", false},
    {"Run Name", "run_name", false},
};

constexpr AttributeName kDatasetKeys[] = {
    {"name", "name", false},
    {"digest", "digest", false},
    {"context", "context", false},
};

// MLflow accepts only "attribute", "tag" and "tags" here; the other attribute spellings of runs
// are accepted too so that one habit works for both searches.
constexpr EntityName kExperimentEntities[] = {
    {"attribute", EntityType::kAttribute},
    {"attributes", EntityType::kAttribute},
    {"attr", EntityType::kAttribute},
    {"tag", EntityType::kTag},
    {"tags", EntityType::kTag},
};

constexpr AttributeName kExperimentFilterAttributes[] = {
    {"name", "name", false},
    {"creation_time", "creation_time", true},
    {"last_update_time", "last_update_time", true},
};

constexpr AttributeName kExperimentOrderAttributes[] = {
    {"name", "name", false},
    {"experiment_id", "experiment_id", false},
    {"creation_time", "creation_time", true},
    {"last_update_time", "last_update_time", true},
};

// MLflow reads registry filters with prefixes "attribute"/"tag"/"tags" only; the other
// attribute spellings are accepted as for experiments.
constexpr EntityName kRegistryEntities[] = {
    {"attribute", EntityType::kAttribute},
    {"attributes", EntityType::kAttribute},
    {"attr", EntityType::kAttribute},
    {"tag", EntityType::kTag},
    {"tags", EntityType::kTag},
};

constexpr AttributeName kRegisteredModelFilterAttributes[] = {
    {"name", "name", false},
};

constexpr AttributeName kRegisteredModelOrderAttributes[] = {
    {"name", "name", false},
    {"creation_timestamp", "creation_timestamp", true},
    {"last_updated_timestamp", "last_updated_timestamp", true},
    {"timestamp", "last_updated_timestamp", true},
};

constexpr AttributeName kModelVersionFilterAttributes[] = {
    {"name", "name", false},
    {"version_number", "version_number", true},
    {"run_id", "run_id", false},
    {"source_path", "source_path", false},
};

constexpr AttributeName kModelVersionOrderAttributes[] = {
    {"name", "name", false},
    {"version_number", "version_number", true},
    {"creation_timestamp", "creation_timestamp", true},
    {"last_updated_timestamp", "last_updated_timestamp", true},
    {"timestamp", "last_updated_timestamp", true},
};

template <typename T>
const T* FindName(std::span<const T> table, std::string_view name) {
  for (const T& entry : table) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

// "'a', 'b', 'c'" of the table's names; for attributes only the canonical names.
std::string ListNames(std::span<const EntityName> table) {
  std::string out;
  for (const EntityName& entry : table) {
    if (!out.empty()) out += ", ";
    out += Quoted(entry.name);
  }
  return out;
}

std::string ListNames(std::span<const AttributeName> table) {
  std::string out;
  for (const AttributeName& entry : table) {
    if (entry.name != entry.canonical) continue;
    if (!out.empty()) out += ", ";
    out += Quoted(entry.name);
  }
  return out;
}

// What an identifier names once prefixes, quotes and aliases are resolved.
struct Target {
  EntityType type = EntityType::kAttribute;
  std::string key;
  bool numeric = false;  // compared with numbers (metrics, times) rather than strings
};

std::string DescribeTarget(const Target& target) {
  switch (target.type) {
    case EntityType::kMetric:
      return "metric " + Quoted(target.key);
    case EntityType::kParam:
      return "parameter " + Quoted(target.key);
    case EntityType::kTag:
      return "tag " + Quoted(target.key);
    case EntityType::kAttribute:
      return "attribute " + Quoted(target.key);
    case EntityType::kDataset:
      return "dataset key " + Quoted(target.key);
  }
  return Quoted(target.key);
}

// The key after the entity prefix: either one quoted part (which may hold dots and spaces) or
// bare parts joined by dots, so that tags.mlflow.user means the tag "mlflow.user".
Result<std::string> KeyAfterPrefix(const Token& identifier) {
  const std::vector<IdentifierPart>& parts = identifier.parts;
  if (parts.size() == 2) return parts[1].text;
  std::string key;
  for (size_t i = 1; i < parts.size(); ++i) {
    if (parts[i].quote != 0) {
      return InvalidArgument("Invalid identifier " + Quoted(identifier.source) +
                             ": quote the whole key, e.g. tags.\"a.b\"");
    }
    if (i > 1) key += ".";
    key += parts[i].text;
  }
  return key;
}

Result<Target> ResolveTarget(const Token& identifier, std::span<const EntityName> entities,
                             std::span<const AttributeName> attributes) {
  Target target;
  std::string key;
  if (identifier.parts.size() == 1) {
    key = identifier.parts[0].text;
  } else {
    const std::string& prefix = identifier.parts[0].text;
    const EntityName* entity = FindName(entities, prefix);
    if (entity == nullptr) {
      return InvalidArgument("Invalid entity type " + Quoted(prefix) + " in " +
                             Quoted(identifier.source) + ". Valid entity types are " +
                             ListNames(entities));
    }
    target.type = entity->type;
    CAIRN_ASSIGN_OR_RETURN(key, KeyAfterPrefix(identifier));
  }
  if (key.empty()) {
    return InvalidArgument("Invalid identifier " + Quoted(identifier.source) +
                           ": the key is empty");
  }
  switch (target.type) {
    case EntityType::kAttribute: {
      const AttributeName* attribute = FindName(attributes, key);
      if (attribute == nullptr) {
        return InvalidArgument("Invalid attribute key " + Quoted(key) +
                               " specified. Valid keys are " + ListNames(attributes));
      }
      target.key = std::string(attribute->canonical);
      target.numeric = attribute->numeric;
      break;
    }
    case EntityType::kDataset: {
      const AttributeName* dataset_key =
          FindName(std::span<const AttributeName>(kDatasetKeys), key);
      if (dataset_key == nullptr) {
        return InvalidArgument("Invalid dataset key " + Quoted(key) +
                               " specified. Valid keys are " + ListNames(kDatasetKeys));
      }
      target.key = std::string(dataset_key->canonical);
      break;
    }
    case EntityType::kMetric:
      target.key = std::move(key);
      target.numeric = true;
      break;
    case EntityType::kParam:
    case EntityType::kTag:
      target.key = std::move(key);
      break;
  }
  return target;
}

// ---------------------------------------------------------------------------------------------
// Clauses: which comparators and values each kind of key accepts.

constexpr Comparator kNumericComparators[] = {Comparator::kEq, Comparator::kNe, Comparator::kGt,
                                              Comparator::kGe, Comparator::kLt, Comparator::kLe};
constexpr Comparator kStringComparators[] = {Comparator::kEq, Comparator::kNe, Comparator::kLike,
                                             Comparator::kILike};
constexpr Comparator kStringOrListComparators[] = {Comparator::kEq,   Comparator::kNe,
                                                   Comparator::kLike, Comparator::kILike,
                                                   Comparator::kIn,   Comparator::kNotIn};

Result<Clause> BuildClause(const Target& target, RawComparison raw, bool lists_allowed) {
  using Comparators = std::span<const Comparator>;
  const Comparators allowed = target.numeric  ? Comparators(kNumericComparators)
                              : lists_allowed ? Comparators(kStringOrListComparators)
                                              : Comparators(kStringComparators);
  if (std::find(allowed.begin(), allowed.end(), raw.op) == allowed.end()) {
    std::string names;
    for (Comparator op : allowed) {
      if (!names.empty()) names += ", ";
      names += ComparatorName(op);
    }
    return InvalidArgument("Invalid comparator " + Quoted(ComparatorName(raw.op)) + " for " +
                           DescribeTarget(target) + "; expected one of " + names);
  }
  Clause clause;
  clause.type = target.type;
  clause.key = target.key;
  clause.op = raw.op;
  RawValue& value = raw.value;
  if (target.numeric) {
    if (value.kind != RawValue::Kind::kNumber) {
      return InvalidArgument("Expected numeric value type for " + DescribeTarget(target) +
                             ". Found " + value.source);
    }
    clause.number = value.number;
  } else if (IsListComparator(raw.op)) {
    clause.list = std::move(value.list);  // the parser gives IN and NOT IN a list, nothing else
  } else {
    if (value.kind != RawValue::Kind::kString) {
      return InvalidArgument("Expected a quoted string value for " + DescribeTarget(target) +
                             " (e.g. 'my-value'). Got value " + value.source);
    }
    clause.text = std::move(value.text);
  }
  return clause;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Public interface.

Result<std::vector<Clause>> ParseRunFilter(std::string_view filter) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<RawComparison> comparisons, ParseComparisons(filter));
  std::vector<Clause> clauses;
  clauses.reserve(comparisons.size());
  for (RawComparison& raw : comparisons) {
    CAIRN_ASSIGN_OR_RETURN(Target target,
                           ResolveTarget(raw.identifier, kRunEntities, kRunAttributes));
    const bool is_string_attribute = target.type == EntityType::kAttribute && !target.numeric;
    if (is_string_attribute && IsListComparator(raw.op) && target.key != "run_id") {
      return InvalidArgument(
          "Only the 'run_id' attribute supports comparison with a list of quoted string values; "
          "got " +
          Quoted(raw.identifier.source) + " " + std::string(ComparatorName(raw.op)));
    }
    const bool lists_allowed =
        target.type == EntityType::kDataset || (is_string_attribute && target.key == "run_id");
    CAIRN_ASSIGN_OR_RETURN(Clause clause, BuildClause(target, std::move(raw), lists_allowed));
    clauses.push_back(std::move(clause));
  }
  return clauses;
}

Result<std::vector<OrderKey>> ParseRunOrderBy(const std::vector<std::string>& order_by) {
  std::vector<OrderKey> keys;
  for (size_t i = 0; i < order_by.size(); ++i) {
    CAIRN_ASSIGN_OR_RETURN(RawOrder raw, ParseOrderEntry(order_by[i]));
    CAIRN_ASSIGN_OR_RETURN(Target target,
                           ResolveTarget(raw.identifier, kRunEntities, kRunAttributes));
    if (target.type == EntityType::kDataset) {
      return InvalidArgument("Invalid order_by clause " + Quoted(order_by[i]) +
                             ": runs are ordered by attributes, metrics, params or tags");
    }
    for (size_t j = 0; j < keys.size(); ++j) {
      if (keys[j].type == target.type && keys[j].key == target.key) {
        return InvalidArgument("order_by contains duplicate fields: " + Quoted(order_by[j]) +
                               " and " + Quoted(order_by[i]) + " name the same key");
      }
    }
    keys.push_back({target.type, std::move(target.key), raw.ascending});
  }
  return keys;
}

Result<std::vector<Clause>> ParseExperimentFilter(std::string_view filter) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<RawComparison> comparisons, ParseComparisons(filter));
  std::vector<Clause> clauses;
  clauses.reserve(comparisons.size());
  for (RawComparison& raw : comparisons) {
    CAIRN_ASSIGN_OR_RETURN(Target target, ResolveTarget(raw.identifier, kExperimentEntities,
                                                        kExperimentFilterAttributes));
    CAIRN_ASSIGN_OR_RETURN(Clause clause,
                           BuildClause(target, std::move(raw), /*lists_allowed=*/false));
    clauses.push_back(std::move(clause));
  }
  return clauses;
}

Result<std::vector<OrderKey>> ParseExperimentOrderBy(const std::vector<std::string>& order_by) {
  std::vector<OrderKey> keys;
  for (const std::string& entry : order_by) {
    CAIRN_ASSIGN_OR_RETURN(RawOrder raw, ParseOrderEntry(entry));
    CAIRN_ASSIGN_OR_RETURN(Target target, ResolveTarget(raw.identifier, kExperimentEntities,
                                                        kExperimentOrderAttributes));
    if (target.type != EntityType::kAttribute) {
      return InvalidArgument("Invalid order_by clause " + Quoted(entry) +
                             ": experiments are ordered by attributes only (" +
                             ListNames(kExperimentOrderAttributes) + ")");
    }
    keys.push_back({target.type, std::move(target.key), raw.ascending});
  }
  return keys;
}

namespace {

Result<std::vector<Clause>> ParseRegistryFilter(std::string_view filter,
                                                std::span<const AttributeName> attributes,
                                                bool lists_allowed) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<RawComparison> comparisons, ParseComparisons(filter));
  std::vector<Clause> clauses;
  clauses.reserve(comparisons.size());
  for (RawComparison& raw : comparisons) {
    CAIRN_ASSIGN_OR_RETURN(Target target,
                           ResolveTarget(raw.identifier, kRegistryEntities, attributes));
    // As for runs, only run_id compares with a list.
    const bool lists =
        lists_allowed && target.type == EntityType::kAttribute && target.key == "run_id";
    if (IsListComparator(raw.op) && !lists) {
      return InvalidArgument(
          "Only the 'run_id' attribute supports comparison with a list of quoted string values.");
    }
    CAIRN_ASSIGN_OR_RETURN(Clause clause, BuildClause(target, std::move(raw), lists));
    clauses.push_back(std::move(clause));
  }
  return clauses;
}

Result<std::vector<OrderKey>> ParseRegistryOrderBy(const std::vector<std::string>& order_by,
                                                   std::span<const AttributeName> attributes) {
  std::vector<OrderKey> keys;
  for (size_t i = 0; i < order_by.size(); ++i) {
    CAIRN_ASSIGN_OR_RETURN(RawOrder raw, ParseOrderEntry(order_by[i]));
    CAIRN_ASSIGN_OR_RETURN(Target target,
                           ResolveTarget(raw.identifier, kRegistryEntities, attributes));
    if (target.type != EntityType::kAttribute) {
      return InvalidArgument("Invalid order_by clause " + Quoted(order_by[i]) +
                             ": only attributes can be ordered by (" + ListNames(attributes) + ")");
    }
    for (size_t j = 0; j < keys.size(); ++j) {
      if (keys[j].key == target.key) {
        return InvalidArgument("order_by contains duplicate fields: " + Quoted(order_by[j]) +
                               " and " + Quoted(order_by[i]) + " name the same key");
      }
    }
    keys.push_back({target.type, std::move(target.key), raw.ascending});
  }
  return keys;
}

}  // namespace

Result<std::vector<Clause>> ParseRegisteredModelFilter(std::string_view filter) {
  return ParseRegistryFilter(filter, kRegisteredModelFilterAttributes, /*lists_allowed=*/false);
}

Result<std::vector<OrderKey>> ParseRegisteredModelOrderBy(
    const std::vector<std::string>& order_by) {
  return ParseRegistryOrderBy(order_by, kRegisteredModelOrderAttributes);
}

Result<std::vector<Clause>> ParseModelVersionFilter(std::string_view filter) {
  return ParseRegistryFilter(filter, kModelVersionFilterAttributes, /*lists_allowed=*/true);
}

Result<std::vector<OrderKey>> ParseModelVersionOrderBy(const std::vector<std::string>& order_by) {
  return ParseRegistryOrderBy(order_by, kModelVersionOrderAttributes);
}

}  // namespace cairn::core
