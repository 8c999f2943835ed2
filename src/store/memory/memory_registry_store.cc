#include "store/memory/memory_registry_store.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "store/store_util.h"

namespace cairn::store {
namespace {

using core::AliasMove;
using core::AliasMoveKind;
using core::ModelVersion;
using core::RegisteredModel;

struct ModelEntry {
  RegisteredModel model;  // aliases kept here, latest_versions unused
  std::map<int64_t, ModelVersion> versions;
  int64_t last_version = 0;
  std::vector<AliasMove> history;
};

class MemoryRegistryStore : public RegistryStore {
 public:
  Status CreateRegisteredModel(const RegisteredModel& model) override {
    std::lock_guard lock(mu_);
    if (models_.count(model.name) != 0) return RegisteredModelTaken(model.name);
    ModelEntry& e = models_[model.name];
    e.model = model;
    e.model.aliases.clear();
    e.model.latest_versions.clear();
    return Status::Ok();
  }

  Result<RegisteredModel> GetRegisteredModel(std::string_view name) override {
    std::lock_guard lock(mu_);
    CAIRN_ASSIGN_OR_RETURN(ModelEntry * e, Find(name));
    return e->model;
  }

  Status RenameRegisteredModel(std::string_view name, std::string_view new_name,
                               int64_t now) override {
    std::lock_guard lock(mu_);
    CAIRN_ASSIGN_OR_RETURN(ModelEntry * e, Find(name));
    if (name == new_name) return Status::Ok();
    if (models_.count(new_name) != 0) return RegisteredModelTaken(new_name);
    ModelEntry moved = std::move(*e);
    models_.erase(models_.find(name));
    moved.model.name = std::string(new_name);
    moved.model.last_updated_timestamp = now;
    for (auto& [number, v] : moved.versions) {
      v.name = std::string(new_name);
      v.last_updated_timestamp = now;
    }
    models_[std::string(new_name)] = std::move(moved);
    return Status::Ok();
  }

  Status UpdateRegisteredModel(std::string_view name, std::string_view description,
                               int64_t now) override {
    std::lock_guard lock(mu_);
    CAIRN_ASSIGN_OR_RETURN(ModelEntry * e, Find(name));
    e->model.description = std::string(description);
    e->model.last_updated_timestamp = now;
    return Status::Ok();
  }

  Result<std::vector<ModelVersion>> DeleteRegisteredModel(std::string_view name) override {
    std::lock_guard lock(mu_);
    CAIRN_ASSIGN_OR_RETURN(ModelEntry * e, Find(name));
    std::vector<ModelVersion> versions;
    for (auto& [number, v] : e->versions) versions.push_back(WithAliases(*e, v));
    models_.erase(models_.find(name));
    return versions;
  }

  Status SetRegisteredModelTag(std::string_view name, const core::Tag& tag) override {
    std::lock_guard lock(mu_);
    CAIRN_ASSIGN_OR_RETURN(ModelEntry * e, Find(name));
    UpsertTag(&e->model.tags, tag);
    return Status::Ok();
  }

  Status DeleteRegisteredModelTag(std::string_view name, std::string_view key) override {
    std::lock_guard lock(mu_);
    CAIRN_ASSIGN_OR_RETURN(ModelEntry * e, Find(name));
    EraseTag(&e->model.tags, key);
    return Status::Ok();
  }

  Result<std::vector<RegisteredModel>> SearchRegisteredModels(
      const RegistrySearchQuery& query) override {
    std::vector<RegisteredModel> found;
    {
      std::lock_guard lock(mu_);
      for (const auto& [name, e] : models_) {
        if (query.visible && !query.visible(name)) continue;
        if (core::RegisteredModelMatches(e.model, query.filter)) found.push_back(e.model);
      }
    }
    core::SortRegisteredModels(&found, query.order);
    return Page(std::move(found), query);
  }

  Result<ModelVersion> CreateModelVersion(const ModelVersion& version) override {
    std::lock_guard lock(mu_);
    CAIRN_ASSIGN_OR_RETURN(ModelEntry * e, Find(version.name));
    ModelVersion v = version;
    v.version = ++e->last_version;
    v.aliases.clear();
    e->versions[v.version] = v;
    e->model.last_updated_timestamp = v.creation_timestamp;
    return v;
  }

  Result<ModelVersion> GetModelVersion(std::string_view name, int64_t version) override {
    std::lock_guard lock(mu_);
    CAIRN_ASSIGN_OR_RETURN(ModelVersion * v, FindVersion(name, version));
    return WithAliases(models_.find(name)->second, *v);
  }

  Status UpdateModelVersion(std::string_view name, int64_t version,
                            std::optional<std::string> description,
                            std::optional<core::ModelVersionStatus> status,
                            std::optional<std::string> status_message, int64_t now) override {
    std::lock_guard lock(mu_);
    CAIRN_ASSIGN_OR_RETURN(ModelVersion * v, FindVersion(name, version));
    if (description) v->description = std::move(*description);
    if (status) v->status = *status;
    if (status_message) v->status_message = std::move(*status_message);
    v->last_updated_timestamp = now;
    return Status::Ok();
  }

  Status TransitionModelVersionStage(std::string_view name, int64_t version, core::ModelStage stage,
                                     bool archive_existing, int64_t now) override {
    std::lock_guard lock(mu_);
    CAIRN_ASSIGN_OR_RETURN(ModelVersion * v, FindVersion(name, version));
    if (archive_existing) {
      for (auto& [number, other] : models_.find(name)->second.versions) {
        if (number == version || other.current_stage != stage) continue;
        other.current_stage = core::ModelStage::kArchived;
        other.last_updated_timestamp = now;
      }
    }
    v->current_stage = stage;
    v->last_updated_timestamp = now;
    models_.find(name)->second.model.last_updated_timestamp = now;
    return Status::Ok();
  }

  Result<ModelVersion> DeleteModelVersion(std::string_view name, int64_t version,
                                          std::string_view actor, int64_t now) override {
    std::lock_guard lock(mu_);
    CAIRN_ASSIGN_OR_RETURN(ModelVersion * v, FindVersion(name, version));
    ModelEntry& e = models_.find(name)->second;
    ModelVersion removed = WithAliases(e, *v);
    std::vector<core::ModelAlias>& aliases = e.model.aliases;
    for (auto it = aliases.begin(); it != aliases.end();) {
      if (it->version != version) {
        ++it;
        continue;
      }
      Record(&e, it->alias, AliasMoveKind::kDelete, std::nullopt, actor, now);
      it = aliases.erase(it);
    }
    e.versions.erase(version);
    e.model.last_updated_timestamp = now;
    return removed;
  }

  Status SetModelVersionTag(std::string_view name, int64_t version, const core::Tag& tag) override {
    std::lock_guard lock(mu_);
    CAIRN_ASSIGN_OR_RETURN(ModelVersion * v, FindVersion(name, version));
    UpsertTag(&v->tags, tag);
    return Status::Ok();
  }

  Status DeleteModelVersionTag(std::string_view name, int64_t version,
                               std::string_view key) override {
    std::lock_guard lock(mu_);
    CAIRN_ASSIGN_OR_RETURN(ModelVersion * v, FindVersion(name, version));
    EraseTag(&v->tags, key);
    return Status::Ok();
  }

  Result<std::vector<ModelVersion>> SearchModelVersions(const RegistrySearchQuery& query) override {
    std::vector<ModelVersion> found;
    {
      std::lock_guard lock(mu_);
      for (const auto& [name, e] : models_) {
        if (query.visible && !query.visible(name)) continue;
        for (const auto& [number, v] : e.versions) {
          if (core::ModelVersionMatches(v, query.filter)) found.push_back(WithAliases(e, v));
        }
      }
    }
    core::SortModelVersions(&found, query.order);
    return Page(std::move(found), query);
  }

  Result<std::string> ModelOfStorage(std::string_view storage_location) override {
    std::lock_guard lock(mu_);
    for (const auto& [name, e] : models_) {
      for (const auto& [number, v] : e.versions) {
        if (v.storage_location == storage_location) return name;
      }
    }
    return NotFound("no model version is stored at " + std::string(storage_location));
  }

  Result<std::vector<ModelVersion>> LatestVersions(std::string_view name) override {
    std::lock_guard lock(mu_);
    CAIRN_ASSIGN_OR_RETURN(ModelEntry * e, Find(name));
    // Stages in the order their lowest version has them, as MLflow lists them.
    std::vector<core::ModelStage> stages;
    std::map<core::ModelStage, const ModelVersion*> latest;
    for (const auto& [number, v] : e->versions) {
      if (latest.count(v.current_stage) == 0) stages.push_back(v.current_stage);
      latest[v.current_stage] = &v;
    }
    std::vector<ModelVersion> out;
    for (core::ModelStage stage : stages) out.push_back(WithAliases(*e, *latest[stage]));
    return out;
  }

  Status SetAlias(std::string_view name, std::string_view alias, int64_t version,
                  std::string_view actor, int64_t now) override {
    std::lock_guard lock(mu_);
    CAIRN_RETURN_IF_ERROR(FindVersion(name, version).status());
    ModelEntry& e = models_.find(name)->second;
    PutAlias(&e, alias, version);
    Record(&e, alias, AliasMoveKind::kSet, version, actor, now);
    return Status::Ok();
  }

  Status DeleteAlias(std::string_view name, std::string_view alias, std::string_view actor,
                     int64_t now) override {
    std::lock_guard lock(mu_);
    CAIRN_ASSIGN_OR_RETURN(ModelEntry * e, Find(name));
    if (EraseAlias(e, alias)) Record(e, alias, AliasMoveKind::kDelete, std::nullopt, actor, now);
    return Status::Ok();
  }

  Result<ModelVersion> GetModelVersionByAlias(std::string_view name,
                                              std::string_view alias) override {
    std::lock_guard lock(mu_);
    CAIRN_ASSIGN_OR_RETURN(ModelEntry * e, Find(name));
    for (const core::ModelAlias& a : e->model.aliases) {
      if (a.alias == alias) return WithAliases(*e, e->versions.at(a.version));
    }
    return AliasNotFound(name, alias);
  }

  Result<std::vector<AliasMove>> AliasHistory(std::string_view name,
                                              std::string_view alias) override {
    std::lock_guard lock(mu_);
    CAIRN_ASSIGN_OR_RETURN(ModelEntry * e, Find(name));
    std::vector<AliasMove> out;
    for (const AliasMove& m : e->history) {
      if (alias.empty() || m.alias == alias) out.push_back(m);
    }
    return out;
  }

  Result<std::optional<int64_t>> RollbackAlias(std::string_view name, std::string_view alias,
                                               std::string_view actor, int64_t now) override {
    std::lock_guard lock(mu_);
    CAIRN_ASSIGN_OR_RETURN(ModelEntry * e, Find(name));
    std::vector<AliasMove> moves;
    for (const AliasMove& m : e->history) {
      if (m.alias == alias) moves.push_back(m);
    }
    std::optional<std::optional<int64_t>> target = core::AliasRollbackTarget(
        moves, [e](int64_t version) { return e->versions.count(version) != 0; });
    if (!target) return NothingToRollBack(name, alias);
    if (*target) {
      PutAlias(e, alias, **target);
    } else {
      EraseAlias(e, alias);
    }
    Record(e, alias, AliasMoveKind::kRollback, *target, actor, now);
    return *target;
  }

 private:
  Result<ModelEntry*> Find(std::string_view name) {
    auto it = models_.find(name);
    if (it == models_.end()) return RegisteredModelNotFound(name);
    return &it->second;
  }

  Result<ModelVersion*> FindVersion(std::string_view name, int64_t version) {
    auto it = models_.find(name);
    if (it == models_.end()) return ModelVersionNotFound(name, version);
    auto v = it->second.versions.find(version);
    if (v == it->second.versions.end()) return ModelVersionNotFound(name, version);
    return &v->second;
  }

  static ModelVersion WithAliases(const ModelEntry& e, const ModelVersion& v) {
    ModelVersion out = v;
    out.aliases.clear();
    for (const core::ModelAlias& a : e.model.aliases) {
      if (a.version == v.version) out.aliases.push_back(a.alias);
    }
    return out;
  }

  static void PutAlias(ModelEntry* e, std::string_view alias, int64_t version) {
    std::vector<core::ModelAlias>& aliases = e->model.aliases;
    auto it = std::find_if(aliases.begin(), aliases.end(),
                           [&](const core::ModelAlias& a) { return a.alias == alias; });
    if (it != aliases.end()) {
      it->version = version;
      return;
    }
    aliases.push_back({std::string(alias), version});
    std::sort(
        aliases.begin(), aliases.end(),
        [](const core::ModelAlias& a, const core::ModelAlias& b) { return a.alias < b.alias; });
  }

  static bool EraseAlias(ModelEntry* e, std::string_view alias) {
    std::vector<core::ModelAlias>& aliases = e->model.aliases;
    auto it = std::find_if(aliases.begin(), aliases.end(),
                           [&](const core::ModelAlias& a) { return a.alias == alias; });
    if (it == aliases.end()) return false;
    aliases.erase(it);
    return true;
  }

  void Record(ModelEntry* e, std::string_view alias, AliasMoveKind kind,
              std::optional<int64_t> version, std::string_view actor, int64_t now) {
    AliasMove m;
    m.id = ++last_move_id_;
    m.alias = std::string(alias);
    m.kind = kind;
    m.version = version;
    m.time = now;
    m.actor = std::string(actor);
    e->history.push_back(std::move(m));
  }

  template <typename T>
  static std::vector<T> Page(std::vector<T> all, const RegistrySearchQuery& query) {
    const size_t begin =
        std::min(all.size(), static_cast<size_t>(std::max<int64_t>(0, query.offset)));
    const size_t end =
        std::min(all.size(), begin + static_cast<size_t>(std::max<int64_t>(0, query.max_results)));
    return std::vector<T>(std::make_move_iterator(all.begin() + static_cast<ptrdiff_t>(begin)),
                          std::make_move_iterator(all.begin() + static_cast<ptrdiff_t>(end)));
  }

  std::mutex mu_;
  std::map<std::string, ModelEntry, std::less<>> models_;
  int64_t last_move_id_ = 0;
};

}  // namespace

std::unique_ptr<RegistryStore> NewMemoryRegistryStore() {
  return std::make_unique<MemoryRegistryStore>();
}

}  // namespace cairn::store
