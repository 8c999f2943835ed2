// Retention rules: what of old runs' artifacts a server removes so that storage stops growing
// with every experiment (docs/retention.md). Rules are set server-wide (`cairn server
// --retention FILE`) and per experiment (its tag cairn.retention), each a JSON list such as
//
//   [{"keep_last": 10, "artifacts": "checkpoints/*"},
//    {"keep_best": 3, "by": "metrics.val_loss", "order": "min"},
//    {"max_age": "90d", "status": "FAILED"},
//    {"purge_deleted_after": "30d"}]
//
// `artifacts` is a glob over paths under a run's artifact root ('*' and '?' within one
// segment, '**' across segments; default "**", everything). What it matches are the units a
// rule keeps or removes: a file, or a directory (all the files under it) when the pattern
// matches the directory's path. keep_last keeps each run's last N units in natural order
// (epoch_9 before epoch_10); keep_best keeps the matching artifacts of the N ended runs best by
// a metric and removes the other ended runs'; max_age removes those of runs that ended longer
// ago than that (in `status` only, when given); purge_deleted_after removes every artifact of
// runs deleted longer ago than that. No rule touches a pinned run (tag cairn.pinned=true), a
// run a registered model version comes from, or files outside runs' artifacts (the registry's
// and datasets'). This header is the parsing and matching; service/retention.h applies them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace cairn::core {

inline constexpr std::string_view kRetentionTag = "cairn.retention";
inline constexpr std::string_view kPinnedTag = "cairn.pinned";
// When a run was deleted (ms), for purge_deleted_after.
inline constexpr std::string_view kDeletedTimeTag = "cairn.deleted_time";

enum class RetentionKind { kKeepLast, kKeepBest, kMaxAge, kPurgeDeleted };

struct RetentionRule {
  RetentionKind kind = RetentionKind::kKeepLast;
  std::string artifacts = "**";
  int64_t count = 0;            // keep_last, keep_best
  std::string metric;           // keep_best: the metric's key (without "metrics.")
  bool lower_is_better = true;  // keep_best: "order": "min" (default) or "max"
  int64_t age_ms = 0;           // max_age, purge_deleted_after
  std::string status;           // max_age: "" (any ended run) or FINISHED, FAILED, KILLED
  // The rule as JSON, for reports.
  std::string Text() const;
};

// Parses a JSON list of rules; InvalidArgument naming the rule (by index) and what is wrong.
Result<std::vector<RetentionRule>> ParseRetentionRules(std::string_view json);

// "90d", "12h", "30m", "45s", "1500ms" to milliseconds.
Result<int64_t> ParseRetentionAge(std::string_view text);

// Whether `path` matches the glob `pattern` ('*' and '?' within a segment, '**' any number of
// whole segments).
bool GlobMatches(std::string_view pattern, std::string_view path);

// The unit of `path` under `pattern`: the shortest prefix of whole segments (the path itself
// last) that the pattern matches; "" when none does.
std::string RetentionUnit(std::string_view pattern, std::string_view path);

// Natural order: runs of digits compare as numbers ("ckpt_9" < "ckpt_10"), the rest byte by
// byte.
bool NaturalLess(std::string_view a, std::string_view b);

}  // namespace cairn::core
