#include "store/memory/memory_store.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <tuple>
#include <unordered_map>

#include "store/listing.h"
#include "store/memory/memory_dataset_store.h"
#include "store/memory/memory_identity_store.h"
#include "store/memory/memory_queue_store.h"
#include "store/memory/memory_registry_store.h"
#include "store/store_util.h"
#include "util/clock.h"

namespace cairn::store {
namespace {

using core::Experiment;
using core::LifecycleStage;
using core::Metric;
using core::Run;

struct RunRecord {
  Run run;  // data.metrics holds the latest value per key
  std::map<std::string, std::vector<Metric>, std::less<>> history;
  std::vector<core::ConsoleChunk> log;  // in offset order, contiguous
  int64_t log_end = 0;
};

class MemoryStore : public MetadataStore {
 public:
  MemoryStore(const StoreOptions& options, Clock* clock) : options_(options) {
    Experiment def;
    def.creation_time = def.last_update_time = clock->NowMillis();
    def.experiment_id = "0";
    def.name = "Default";
    def.artifact_location = options_.default_artifact_root + "/0";
    experiments_[0] = def;
  }

  Result<std::string> CreateExperiment(const Experiment& experiment) override {
    std::unique_lock lock(mu_);
    for (const auto& [id, e] : experiments_) {
      if (e.name == experiment.name) return ExperimentNameTaken(experiment.name);
    }
    int64_t id = experiments_.rbegin()->first + 1;
    Experiment e = experiment;
    e.experiment_id = std::to_string(id);
    if (e.artifact_location.empty()) {
      e.artifact_location = options_.default_artifact_root + "/" + e.experiment_id;
    }
    experiments_[id] = std::move(e);
    return std::to_string(id);
  }

  Result<Experiment> GetExperiment(std::string_view experiment_id) override {
    std::shared_lock lock(mu_);
    const Experiment* e = FindExperiment(experiment_id);
    if (e == nullptr) return ExperimentNotFound(experiment_id);
    return *e;
  }

  Result<Experiment> GetExperimentByName(std::string_view name) override {
    std::shared_lock lock(mu_);
    for (const auto& [id, e] : experiments_) {
      if (e.name == name) return e;
    }
    return NotFound("Could not find experiment with name '" + std::string(name) + "'");
  }

  Result<std::vector<Experiment>> ListExperiments(core::ViewType view) override {
    std::shared_lock lock(mu_);
    std::vector<Experiment> out;
    for (const auto& [id, e] : experiments_) {
      if (core::StageVisible(e.lifecycle_stage, view)) out.push_back(e);
    }
    return out;
  }

  Status RenameExperiment(std::string_view experiment_id, std::string_view new_name,
                          int64_t now) override {
    std::unique_lock lock(mu_);
    Experiment* e = FindExperiment(experiment_id);
    if (e == nullptr) return ExperimentNotFound(experiment_id);
    for (const auto& [id, other] : experiments_) {
      if (other.name == new_name && &other != e) return ExperimentNameTaken(new_name);
    }
    e->name = std::string(new_name);
    e->last_update_time = now;
    return Status::Ok();
  }

  Status SetExperimentStage(std::string_view experiment_id, LifecycleStage stage,
                            int64_t now) override {
    std::unique_lock lock(mu_);
    Experiment* e = FindExperiment(experiment_id);
    if (e == nullptr) return ExperimentNotFound(experiment_id);
    e->lifecycle_stage = stage;
    e->last_update_time = now;
    for (auto& [id, rec] : runs_) {
      if (rec.run.info.experiment_id == e->experiment_id) rec.run.info.lifecycle_stage = stage;
    }
    return Status::Ok();
  }

  Status SetExperimentTag(std::string_view experiment_id, const core::Tag& tag) override {
    std::unique_lock lock(mu_);
    Experiment* e = FindExperiment(experiment_id);
    if (e == nullptr) return ExperimentNotFound(experiment_id);
    UpsertTag(&e->tags, tag);
    return Status::Ok();
  }

  Status DeleteExperimentTag(std::string_view experiment_id, std::string_view key) override {
    std::unique_lock lock(mu_);
    Experiment* e = FindExperiment(experiment_id);
    if (e == nullptr) return ExperimentNotFound(experiment_id);
    if (!EraseTag(&e->tags, key)) {
      return NotFound("No tag with name: " + std::string(key) + " in experiment with id " +
                      std::string(experiment_id));
    }
    return Status::Ok();
  }

  Status CreateRun(const Run& run) override {
    std::unique_lock lock(mu_);
    if (FindExperiment(run.info.experiment_id) == nullptr) {
      return ExperimentNotFound(run.info.experiment_id);
    }
    if (runs_.count(run.info.run_id) != 0) {
      return AlreadyExists("Run with id " + run.info.run_id + " already exists");
    }
    RunRecord rec;
    rec.run.info = run.info;
    runs_.emplace(run.info.run_id, std::move(rec));
    return LogBatchLocked(run.info.run_id, run.data.metrics, run.data.params, run.data.tags);
  }

  Result<Run> GetRun(std::string_view run_id) override {
    std::shared_lock lock(mu_);
    auto it = runs_.find(std::string(run_id));
    if (it == runs_.end()) return RunNotFound(run_id);
    return it->second.run;
  }

  Result<std::vector<ExperimentRunStats>> RunStatsByExperiment() override {
    std::shared_lock lock(mu_);
    std::map<int64_t, ExperimentRunStats> by_id;
    for (const auto& [id, rec] : runs_) {
      const core::RunInfo& info = rec.run.info;
      if (info.lifecycle_stage != LifecycleStage::kActive) continue;
      ExperimentRunStats& st = by_id[std::stoll(info.experiment_id)];
      st.experiment_id = info.experiment_id;
      ++st.runs;
      if (info.status == core::RunStatus::kRunning) ++st.running;
      st.last_activity = std::max({st.last_activity, info.start_time, info.end_time.value_or(0)});
    }
    std::vector<ExperimentRunStats> out;
    for (auto& [id, st] : by_id) out.push_back(std::move(st));
    return out;
  }

  Result<core::RunInfo> GetRunInfo(std::string_view run_id) override {
    std::shared_lock lock(mu_);
    auto it = runs_.find(std::string(run_id));
    if (it == runs_.end()) return RunNotFound(run_id);
    return it->second.run.info;
  }

  Status UpdateRun(std::string_view run_id, std::optional<core::RunStatus> status,
                   std::optional<int64_t> end_time, std::optional<std::string> run_name) override {
    std::unique_lock lock(mu_);
    auto it = runs_.find(std::string(run_id));
    if (it == runs_.end()) return RunNotFound(run_id);
    core::RunInfo& info = it->second.run.info;
    if (status) info.status = *status;
    if (end_time) info.end_time = *end_time;
    if (run_name) {
      info.run_name = *run_name;
      UpsertTag(&it->second.run.data.tags, {std::string(core::kRunNameTag), *run_name});
    }
    return Status::Ok();
  }

  void UpdateRunAsync(std::string run_id, RunUpdate update,
                      std::function<void(Status)> done) override {
    done([&]() -> Status {
      std::unique_lock lock(mu_);
      auto it = runs_.find(run_id);
      if (it == runs_.end()) return RunNotFound(run_id);
      core::RunInfo& info = it->second.run.info;
      if (update.status) info.status = *update.status;
      if (update.start_time) info.start_time = *update.start_time;
      if (update.end_time) info.end_time = *update.end_time;
      if (!update.drop_tag.empty()) EraseTag(&it->second.run.data.tags, update.drop_tag);
      return Status::Ok();
    }());
  }

  Status SetRunStage(std::string_view run_id, LifecycleStage stage) override {
    std::unique_lock lock(mu_);
    auto it = runs_.find(std::string(run_id));
    if (it == runs_.end()) return RunNotFound(run_id);
    it->second.run.info.lifecycle_stage = stage;
    return Status::Ok();
  }

  Status LogBatch(std::string_view run_id, const std::vector<Metric>& metrics,
                  const std::vector<core::Param>& params,
                  const std::vector<core::Tag>& tags) override {
    std::unique_lock lock(mu_);
    auto it = runs_.find(std::string(run_id));
    if (it == runs_.end()) return RunNotFound(run_id);
    if (it->second.run.info.lifecycle_stage != LifecycleStage::kActive) {
      return RunNotActive(run_id, it->second.run.info.lifecycle_stage);
    }
    return LogBatchLocked(run_id, metrics, params, tags);
  }

  Status DeleteRunTag(std::string_view run_id, std::string_view key) override {
    std::unique_lock lock(mu_);
    auto it = runs_.find(std::string(run_id));
    if (it == runs_.end()) return RunNotFound(run_id);
    if (!EraseTag(&it->second.run.data.tags, key)) return RunTagNotFound(run_id, key);
    return Status::Ok();
  }

  Status LogInputs(std::string_view run_id,
                   const std::vector<core::DatasetInput>& inputs) override {
    std::unique_lock lock(mu_);
    auto it = runs_.find(std::string(run_id));
    if (it == runs_.end()) return RunNotFound(run_id);
    std::vector<core::DatasetInput>& have = it->second.run.inputs;
    for (const core::DatasetInput& in : inputs) {
      bool seen = std::any_of(have.begin(), have.end(), [&](const core::DatasetInput& h) {
        return h.dataset.name == in.dataset.name && h.dataset.digest == in.dataset.digest;
      });
      if (!seen) have.push_back(in);
    }
    return Status::Ok();
  }

  Result<std::vector<DatasetSummary>> SearchDatasets(const std::vector<std::string>& experiment_ids,
                                                     int64_t limit) override {
    std::shared_lock lock(mu_);
    std::set<std::tuple<int64_t, std::string, std::string, std::string>> found;
    for (const auto& [id, entry] : runs_) {
      const core::Run& run = entry.run;
      if (std::find(experiment_ids.begin(), experiment_ids.end(), run.info.experiment_id) ==
          experiment_ids.end()) {
        continue;
      }
      int64_t exp = 0;
      ParseExperimentId(run.info.experiment_id, &exp);
      for (const core::DatasetInput& in : run.inputs) {
        std::string context;
        for (const core::Tag& t : in.tags) {
          if (t.key == core::kDatasetContextTag) context = t.value;
        }
        found.emplace(exp, in.dataset.name, in.dataset.digest, context);
      }
    }
    std::vector<DatasetSummary> out;
    for (const auto& [exp, name, digest, context] : found) {
      if (static_cast<int64_t>(out.size()) >= limit) break;
      out.push_back({std::to_string(exp), name, digest, context});
    }
    return out;
  }

  Result<std::vector<std::string>> RunsUsingDataset(std::string_view name, std::string_view digest,
                                                    int64_t limit) override {
    std::shared_lock lock(mu_);
    std::vector<std::string> out;
    for (const auto& [id, entry] : runs_) {
      for (const core::DatasetInput& in : entry.run.inputs) {
        if (in.dataset.name == name && in.dataset.digest == digest) {
          if (static_cast<int64_t>(out.size()) >= limit) return out;
          out.push_back(id);
          break;
        }
      }
    }
    return out;
  }

  Status ScanMetricHistory(const MetricHistoryQuery& query,
                           const std::function<bool(const Metric&)>& visit) override {
    std::shared_lock lock(mu_);
    auto it = runs_.find(query.run_id);
    if (it == runs_.end()) return RunNotFound(query.run_id);
    auto h = it->second.history.find(query.key);
    if (h == it->second.history.end()) return Status::Ok();
    int64_t skipped = 0, emitted = 0;
    for (const Metric& m : h->second) {
      if (query.min_step && m.step < *query.min_step) continue;
      if (query.max_step && m.step > *query.max_step) continue;
      if (query.after && !core::MetricIsNewer(m, *query.after)) continue;
      if (skipped++ < query.offset) continue;
      if (query.max_results > 0 && emitted == query.max_results) break;
      ++emitted;
      if (!visit(m)) break;
    }
    return Status::Ok();
  }

  Result<std::vector<Run>> SearchRuns(const RunSearchQuery& query) override {
    std::vector<Run> matched;
    {
      std::shared_lock lock(mu_);
      for (const auto& [id, rec] : runs_) {
        const core::RunInfo& info = rec.run.info;
        if (!core::StageVisible(info.lifecycle_stage, query.view)) continue;
        if (std::find(query.experiment_ids.begin(), query.experiment_ids.end(),
                      info.experiment_id) == query.experiment_ids.end()) {
          continue;
        }
        if (core::RunMatches(rec.run, query.filter)) matched.push_back(rec.run);
      }
    }
    return SortAndPage(std::move(matched), query);
  }

  Result<std::optional<ArtifactFile>> PutArtifact(const ArtifactFile& file) override {
    std::unique_lock lock(mu_);
    return PutArtifactLocked(file);
  }

  Result<std::vector<ArtifactFile>> PutArtifacts(const std::vector<ArtifactFile>& files) override {
    std::unique_lock lock(mu_);
    // What each put did, to undo them all when one is refused.
    std::vector<std::pair<std::string, std::optional<ArtifactFile>>> undo;
    std::vector<ArtifactFile> replaced;
    for (const ArtifactFile& f : files) {
      Result<std::optional<ArtifactFile>> r = PutArtifactLocked(f);
      if (!r.ok()) {
        for (auto it = undo.rbegin(); it != undo.rend(); ++it) {
          if (it->second) {
            artifacts_[it->first] = *it->second;
          } else {
            artifacts_.erase(it->first);
          }
        }
        return r.status();
      }
      undo.emplace_back(f.path, *r);
      if (*r) replaced.push_back(**r);
    }
    return replaced;
  }

  Result<std::optional<ArtifactFile>> PutArtifactLocked(const ArtifactFile& file) {
    for (std::string_view dir : ParentDirs(file.path)) {
      if (artifacts_.count(dir) != 0) return ArtifactPathTaken(file.path, dir);
    }
    std::string prefix = DirPrefix(file.path);
    auto under = artifacts_.lower_bound(prefix);
    if (under != artifacts_.end() && under->first.starts_with(prefix)) {
      return ArtifactPathTaken(file.path, file.path);
    }
    std::optional<ArtifactFile> replaced;
    if (auto it = artifacts_.find(file.path); it != artifacts_.end()) replaced = it->second;
    artifacts_[file.path] = file;
    return replaced;
  }

  Result<ArtifactFile> GetArtifact(std::string_view path) override {
    std::shared_lock lock(mu_);
    auto it = artifacts_.find(path);
    if (it == artifacts_.end()) return ArtifactNotFound(path);
    return it->second;
  }

  Result<std::vector<ArtifactEntry>> ListArtifacts(std::string_view dir) override {
    std::shared_lock lock(mu_);
    ListingBuilder builder(dir);
    for (auto it = artifacts_.lower_bound(builder.prefix());
         it != artifacts_.end() && it->first.starts_with(builder.prefix()); ++it) {
      builder.Add(it->second);
    }
    return builder.Take();
  }

  Result<std::vector<ArtifactFile>> DeleteArtifacts(std::string_view path) override {
    std::unique_lock lock(mu_);
    std::vector<ArtifactFile> removed;
    if (auto it = artifacts_.find(path); it != artifacts_.end()) {
      removed.push_back(it->second);
      artifacts_.erase(it);
      return removed;
    }
    std::string prefix = DirPrefix(path);
    auto it = artifacts_.lower_bound(prefix);
    while (it != artifacts_.end() && it->first.starts_with(prefix)) {
      removed.push_back(it->second);
      it = artifacts_.erase(it);
    }
    if (removed.empty()) return ArtifactNotFound(path);
    return removed;
  }

  Result<int64_t> AppendRunLog(std::string_view run_id,
                               const std::vector<core::ConsoleChunk>& chunks) override {
    std::unique_lock lock(mu_);
    auto it = runs_.find(std::string(run_id));
    if (it == runs_.end()) return RunNotFound(run_id);
    RunRecord& rec = it->second;
    CAIRN_ASSIGN_OR_RETURN(std::vector<core::ConsoleChunk> add,
                           ChunksToAppend(rec.log_end, chunks));
    for (core::ConsoleChunk& c : add) {
      rec.log_end = c.offset + static_cast<int64_t>(c.data.size());
      rec.log.push_back(std::move(c));
    }
    return rec.log_end;
  }

  Result<std::vector<core::ConsoleChunk>> ReadRunLog(std::string_view run_id, int64_t offset,
                                                     int64_t max_bytes) override {
    std::shared_lock lock(mu_);
    auto it = runs_.find(std::string(run_id));
    if (it == runs_.end()) return RunNotFound(run_id);
    const std::vector<core::ConsoleChunk>& log = it->second.log;
    // The first chunk that ends after `offset`.
    auto first = std::upper_bound(log.begin(), log.end(), offset,
                                  [](int64_t off, const core::ConsoleChunk& c) {
                                    return off < c.offset + static_cast<int64_t>(c.data.size());
                                  });
    std::vector<core::ConsoleChunk> out;
    int64_t bytes = 0;
    for (auto c = first; c != log.end() && bytes < max_bytes; ++c) {
      bytes += static_cast<int64_t>(c->data.size());
      out.push_back(*c);
    }
    return out;
  }

  Result<bool> BlobReferenced(std::string_view digest) override {
    {
      std::shared_lock lock(mu_);
      for (const auto& [path, f] : artifacts_) {
        if (f.digest == digest) return true;
      }
    }
    CAIRN_ASSIGN_OR_RETURN(bool noted, datasets_->DataBlobNoted(digest));
    if (noted) return true;
    return datasets_->AnyUploaded(digest);
  }

  Result<std::vector<ArtifactFile>> ListArtifactFiles(std::string_view after,
                                                      int64_t limit) override {
    std::shared_lock lock(mu_);
    std::vector<ArtifactFile> out;
    for (auto it = artifacts_.upper_bound(after);
         it != artifacts_.end() && static_cast<int64_t>(out.size()) < limit; ++it) {
      out.push_back(it->second);
    }
    return out;
  }

  IdentityStore& identity() override { return *identity_; }
  RegistryStore& registry() override { return *registry_; }
  QueueStore& queue() override { return *queue_; }
  DatasetStore& datasets() override { return *datasets_; }

 private:
  Experiment* FindExperiment(std::string_view id) {
    int64_t n = 0;
    if (!ParseExperimentId(id, &n)) return nullptr;
    auto it = experiments_.find(n);
    return it == experiments_.end() ? nullptr : &it->second;
  }

  Status LogBatchLocked(std::string_view run_id, const std::vector<Metric>& metrics,
                        const std::vector<core::Param>& params,
                        const std::vector<core::Tag>& tags) {
    auto it = runs_.find(std::string(run_id));
    if (it == runs_.end()) return RunNotFound(run_id);
    RunRecord& rec = it->second;
    for (const core::Param& p : params) {
      const core::Param* have = rec.run.FindParam(p.key);
      if (have != nullptr && have->value != p.value) {
        return ParamChanged(run_id, p.key, have->value, p.value);
      }
    }
    for (const core::Param& p : params) {
      if (rec.run.FindParam(p.key) == nullptr) rec.run.data.params.push_back(p);
    }
    for (const core::Tag& t : tags) {
      UpsertTag(&rec.run.data.tags, t);
      if (t.key == core::kRunNameTag) rec.run.info.run_name = t.value;
    }
    for (const Metric& m : metrics) {
      std::vector<Metric>& points = rec.history[m.key];
      // Keep history in (step, timestamp, value) order; drop exact duplicates.
      auto pos = std::upper_bound(
          points.begin(), points.end(), m,
          [](const Metric& a, const Metric& b) { return core::MetricIsNewer(b, a); });
      bool duplicate = false;
      for (auto back = pos; back != points.begin();) {
        --back;
        if (back->step != m.step || back->timestamp != m.timestamp) break;
        if (core::SameMetricPoint(*back, m)) duplicate = true;
      }
      if (duplicate) continue;
      points.insert(pos, m);
      UpdateLatest(&rec.run.data.metrics, m);
    }
    return Status::Ok();
  }

  StoreOptions options_;
  std::shared_mutex mu_;
  std::unique_ptr<IdentityStore> identity_ = NewMemoryIdentityStore();
  std::unique_ptr<RegistryStore> registry_ = NewMemoryRegistryStore();
  std::unique_ptr<QueueStore> queue_ = NewMemoryQueueStore();
  std::unique_ptr<DatasetStore> datasets_ = NewMemoryDatasetStore();
  std::map<int64_t, Experiment> experiments_;
  std::unordered_map<std::string, RunRecord> runs_;
  std::map<std::string, ArtifactFile, std::less<>> artifacts_;
};

}  // namespace

std::unique_ptr<MetadataStore> NewMemoryMetadataStore(const StoreOptions& options) {
  return std::make_unique<MemoryStore>(options, SystemClock());
}

}  // namespace cairn::store
