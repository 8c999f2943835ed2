#include "service/retention.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <unordered_set>

namespace cairn::service {
namespace {

using core::RetentionKind;
using core::RetentionRule;

constexpr int64_t kMaxRunFiles = 1'000'000;
constexpr int64_t kRunsPerPage = 1000;

struct Unit {
  std::string path;  // relative to the run's artifact root
  int64_t files = 0;
  int64_t bytes = 0;
};

struct RunEntry {
  core::Run run;
  bool protected_run = false;  // pinned, or a registered version's source
};

// The run's files matching the rule's pattern, grouped into units.
std::vector<Unit> UnitsOf(const std::vector<store::ArtifactFile>& files,
                          const std::string& pattern) {
  std::map<std::string, Unit> units;
  for (const store::ArtifactFile& f : files) {
    std::string unit = core::RetentionUnit(pattern, f.path);
    if (unit.empty()) continue;
    Unit& u = units[unit];
    u.path = unit;
    ++u.files;
    u.bytes += f.size;
  }
  std::vector<Unit> out;
  for (auto& [path, u] : units) out.push_back(std::move(u));
  std::sort(out.begin(), out.end(),
            [](const Unit& a, const Unit& b) { return core::NaturalLess(a.path, b.path); });
  return out;
}

bool Ended(const core::Run& r) {
  return r.info.status == core::RunStatus::kFinished || r.info.status == core::RunStatus::kFailed ||
         r.info.status == core::RunStatus::kKilled;
}

std::optional<int64_t> DeletedTime(const core::Run& r, const core::Experiment& e) {
  if (r.info.lifecycle_stage != core::LifecycleStage::kDeleted) return std::nullopt;
  if (const core::Tag* t = r.FindTag(core::kDeletedTimeTag)) {
    int64_t ms = 0;
    if (std::from_chars(t->value.data(), t->value.data() + t->value.size(), ms).ec == std::errc()) {
      return ms;
    }
  }
  if (e.lifecycle_stage == core::LifecycleStage::kDeleted) return e.last_update_time;
  return std::nullopt;  // deleted by a client that left no time: never purged
}

class Applier {
 public:
  Applier(store::MetadataStore& store, ArtifactService& artifacts, int64_t now, bool dry_run,
          std::vector<std::string>* problems)
      : store_(store), artifacts_(artifacts), now_(now), dry_run_(dry_run), problems_(problems) {}

  Status Init() {
    // Runs a registered model version comes from: never touched.
    store::RegistrySearchQuery q;
    q.max_results = 1000;
    for (;;) {
      CAIRN_ASSIGN_OR_RETURN(std::vector<core::ModelVersion> page,
                             store_.registry().SearchModelVersions(q));
      for (const core::ModelVersion& v : page) {
        if (!v.run_id.empty()) model_runs_.insert(v.run_id);
      }
      if (static_cast<int64_t>(page.size()) < q.max_results) break;
      q.offset += q.max_results;
    }
    return Status::Ok();
  }

  Result<std::vector<RunEntry>> RunsOf(const core::Experiment& e) {
    std::vector<RunEntry> out;
    std::unordered_set<std::string> seen;  // pages by offset may repeat a run as runs are made
    store::RunSearchQuery q;
    q.experiment_ids = {e.experiment_id};
    q.view = core::ViewType::kAll;
    q.max_results = kRunsPerPage;
    for (;;) {
      CAIRN_ASSIGN_OR_RETURN(std::vector<core::Run> page, store_.SearchRuns(q));
      for (core::Run& r : page) {
        if (!seen.insert(r.info.run_id).second) continue;
        RunEntry entry;
        const core::Tag* pinned = r.FindTag(core::kPinnedTag);
        entry.protected_run =
            (pinned != nullptr && pinned->value == "true") || model_runs_.count(r.info.run_id) != 0;
        entry.run = std::move(r);
        out.push_back(std::move(entry));
      }
      if (static_cast<int64_t>(page.size()) < q.max_results) break;
      q.offset += q.max_results;
    }
    return out;
  }

  // Removes the units `remove` of run `r`, adding them to `outcome`.
  Status Remove(const core::Run& r, const std::vector<Unit>& remove, RuleOutcome* outcome) {
    if (remove.empty()) return Status::Ok();
    ++outcome->runs;
    Result<std::string> root = ProxyPathOfUri(r.info.artifact_uri);
    if (!root.ok() || root->empty()) return Status::Ok();
    for (const Unit& u : remove) {
      outcome->files += u.files;
      outcome->bytes += u.bytes;
      if (dry_run_) continue;
      Result<ArtifactService::Freed> freed = artifacts_.DeleteCounting(*root + "/" + u.path);
      if (!freed.ok()) {
        if (freed.status().code() == StatusCode::kNotFound) continue;
        if (freed.status().code() == StatusCode::kUnavailable) return freed.status();
        problems_->push_back("run " + r.info.run_id + ": " + freed.status().message());
        return Status::Ok();
      }
      outcome->blobs_freed += freed->blobs;
      outcome->bytes_freed += freed->bytes;
    }
    return Status::Ok();
  }

  Status Apply(const RetentionRule& rule, const core::Experiment& e,
               const std::vector<RunEntry>& runs, RuleOutcome* outcome) {
    // A run whose files cannot be listed or removed is named among the problems and left:
    // one run must not stop the rules for every other, nor the collection after them.
    auto files_of = [&](const core::Run& r) -> Result<std::vector<store::ArtifactFile>> {
      Result<std::vector<store::ArtifactFile>> files =
          artifacts_.ListRunFiles(r.info.artifact_uri, kMaxRunFiles);
      if (!files.ok()) {
        problems_->push_back("run " + r.info.run_id + ": " + files.status().message());
        return std::vector<store::ArtifactFile>();
      }
      return files;
    };
    switch (rule.kind) {
      case RetentionKind::kKeepLast:
        for (const RunEntry& entry : runs) {
          if (entry.protected_run) continue;
          CAIRN_ASSIGN_OR_RETURN(std::vector<store::ArtifactFile> files, files_of(entry.run));
          std::vector<Unit> units = UnitsOf(files, rule.artifacts);
          if (static_cast<int64_t>(units.size()) <= rule.count) continue;
          units.resize(units.size() - static_cast<size_t>(rule.count));
          CAIRN_RETURN_IF_ERROR(Remove(entry.run, units, outcome));
        }
        return Status::Ok();
      case RetentionKind::kKeepBest: {
        // Ended runs with the metric, best first; the ones past `count` lose their files.
        std::vector<std::pair<double, const RunEntry*>> ranked;
        for (const RunEntry& entry : runs) {
          if (!Ended(entry.run) ||
              entry.run.info.lifecycle_stage != core::LifecycleStage::kActive) {
            continue;
          }
          const core::Metric* m = entry.run.FindMetric(rule.metric);
          if (m == nullptr || m->value != m->value) continue;  // no value, or NaN
          ranked.emplace_back(rule.lower_is_better ? m->value : -m->value, &entry);
        }
        std::stable_sort(ranked.begin(), ranked.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
        for (size_t i = static_cast<size_t>(rule.count); i < ranked.size(); ++i) {
          const RunEntry& entry = *ranked[i].second;
          if (entry.protected_run) continue;
          CAIRN_ASSIGN_OR_RETURN(std::vector<store::ArtifactFile> files, files_of(entry.run));
          CAIRN_RETURN_IF_ERROR(Remove(entry.run, UnitsOf(files, rule.artifacts), outcome));
        }
        return Status::Ok();
      }
      case RetentionKind::kMaxAge:
        for (const RunEntry& entry : runs) {
          const core::Run& r = entry.run;
          if (entry.protected_run || !Ended(r) || !r.info.end_time) continue;
          if (*r.info.end_time > now_ - rule.age_ms) continue;
          if (!rule.status.empty() && core::RunStatusName(r.info.status) != rule.status) continue;
          CAIRN_ASSIGN_OR_RETURN(std::vector<store::ArtifactFile> files, files_of(r));
          CAIRN_RETURN_IF_ERROR(Remove(r, UnitsOf(files, rule.artifacts), outcome));
        }
        return Status::Ok();
      case RetentionKind::kPurgeDeleted:
        for (const RunEntry& entry : runs) {
          if (entry.protected_run) continue;
          std::optional<int64_t> deleted = DeletedTime(entry.run, e);
          if (!deleted || *deleted > now_ - rule.age_ms) continue;
          CAIRN_ASSIGN_OR_RETURN(std::vector<store::ArtifactFile> files, files_of(entry.run));
          CAIRN_RETURN_IF_ERROR(Remove(entry.run, UnitsOf(files, "**"), outcome));
        }
        return Status::Ok();
    }
    return Status::Ok();
  }

 private:
  store::MetadataStore& store_;
  ArtifactService& artifacts_;
  const int64_t now_;
  const bool dry_run_;
  std::unordered_set<std::string> model_runs_;
  std::vector<std::string>* problems_;
};

}  // namespace

Result<RetentionOutcome> ApplyRetention(store::MetadataStore& store, ArtifactService& artifacts,
                                        const std::vector<RetentionRule>& server_rules, int64_t now,
                                        bool dry_run) {
  RetentionOutcome out;
  Applier applier(store, artifacts, now, dry_run, &out.problems);
  CAIRN_RETURN_IF_ERROR(applier.Init());
  CAIRN_ASSIGN_OR_RETURN(std::vector<core::Experiment> experiments,
                         store.ListExperiments(core::ViewType::kAll));
  std::map<std::string, RuleOutcome> server_totals;  // by rule text
  for (const core::Experiment& e : experiments) {
    std::vector<RetentionRule> own;
    for (const core::Tag& t : e.tags) {
      if (t.key != core::kRetentionTag) continue;
      Result<std::vector<RetentionRule>> parsed = core::ParseRetentionRules(t.value);
      if (!parsed.ok()) {
        out.problems.push_back("experiment " + e.experiment_id + ": " + parsed.status().message());
      } else {
        own = *std::move(parsed);
      }
    }
    if (server_rules.empty() && own.empty()) continue;
    CAIRN_ASSIGN_OR_RETURN(std::vector<RunEntry> runs, applier.RunsOf(e));
    for (const RetentionRule& rule : server_rules) {
      RuleOutcome& total = server_totals[rule.Text()];
      total.scope = "server";
      total.rule = rule.Text();
      CAIRN_RETURN_IF_ERROR(applier.Apply(rule, e, runs, &total));
    }
    for (const RetentionRule& rule : own) {
      RuleOutcome outcome;
      outcome.scope = e.experiment_id;
      outcome.rule = rule.Text();
      CAIRN_RETURN_IF_ERROR(applier.Apply(rule, e, runs, &outcome));
      out.rules.push_back(std::move(outcome));
    }
  }
  for (const RetentionRule& rule : server_rules) {
    auto it = server_totals.find(rule.Text());
    RuleOutcome o = it != server_totals.end() ? it->second : RuleOutcome{"server", rule.Text()};
    out.rules.insert(out.rules.begin() + static_cast<long>(&rule - server_rules.data()), o);
  }
  for (const RuleOutcome& o : out.rules) {
    out.files += o.files;
    out.bytes += o.bytes;
    out.blobs_freed += o.blobs_freed;
    out.bytes_freed += o.bytes_freed;
  }
  return out;
}

Result<StorageCollection> CollectStorage(store::MetadataStore& store, ArtifactService& artifacts,
                                         const std::vector<core::RetentionRule>& server_rules,
                                         int64_t grace_ms, bool dry_run, int64_t now) {
  StorageCollection out;
  CAIRN_ASSIGN_OR_RETURN(out.retention,
                         ApplyRetention(store, artifacts, server_rules, now, dry_run));
  CAIRN_ASSIGN_OR_RETURN(out.blobs, artifacts.CollectGarbage(grace_ms, dry_run, now));
  return out;
}

}  // namespace cairn::service
