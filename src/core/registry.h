// The model registry: registered models (a name with versions), model versions (files taken
// from a run, with a stage, tags and a description), aliases that name one version each, and
// the history of every alias move, from which a rollback finds the version an alias held
// before. Shaped like MLflow's model_registry.proto so that the REST layer maps them field by
// field.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "util/status.h"

namespace cairn::core {

// MLflow's stages; "None" is a version in no stage.
enum class ModelStage { kNone, kStaging, kProduction, kArchived };
std::string_view ModelStageName(ModelStage stage);  // "None", "Staging", ...
// Case-insensitive, as MLflow reads them.
bool ParseModelStage(std::string_view text, ModelStage* out);

// MLflow's rules for an alias: word characters and '-', at most 255 of them, and neither
// "latest" nor a version's own name ("v3"). InvalidArgument in MLflow's words otherwise.
Status ValidateModelAlias(std::string_view alias);

enum class ModelVersionStatus { kPendingRegistration, kFailedRegistration, kReady };
std::string_view ModelVersionStatusName(ModelVersionStatus status);  // "READY", ...

struct ModelAlias {
  std::string alias;
  int64_t version = 0;
  bool operator==(const ModelAlias&) const = default;
};

// A file of a version, copied from its run's artifacts: where its bytes are in the content
// store. `path` is relative to the version's root.
struct ModelFile {
  std::string path;
  std::string digest;
  int64_t size = 0;
  bool operator==(const ModelFile&) const = default;
};

struct ModelVersion {
  std::string name;
  int64_t version = 0;
  int64_t creation_timestamp = 0;
  int64_t last_updated_timestamp = 0;
  std::string user_id;
  ModelStage current_stage = ModelStage::kNone;
  std::string description;
  std::string source;  // as the client gave it
  std::string run_id;
  std::string run_link;
  ModelVersionStatus status = ModelVersionStatus::kReady;
  std::string status_message;
  std::vector<Tag> tags;
  std::vector<std::string> aliases;  // sorted
  // Where the version's files live: the server's artifact path its files were copied to
  // ("" when its source lies outside the server, where the files stay).
  std::string storage_location;
};

struct RegisteredModel {
  std::string name;
  int64_t creation_timestamp = 0;
  int64_t last_updated_timestamp = 0;
  std::string user_id;
  std::string description;
  std::vector<Tag> tags;
  std::vector<ModelAlias> aliases;  // by alias
  // The newest version in each stage that has one, by stage (filled by the registry service).
  std::vector<ModelVersion> latest_versions;
};

// One move of an alias: set to a version, or removed (version unset).
enum class AliasMoveKind { kSet, kDelete, kRollback };
std::string_view AliasMoveKindName(AliasMoveKind kind);  // "set", "delete", "rollback"
bool ParseAliasMoveKind(std::string_view text, AliasMoveKind* out);

struct AliasMove {
  int64_t id = 0;  // assigned by the store, increasing
  std::string alias;
  AliasMoveKind kind = AliasMoveKind::kSet;
  std::optional<int64_t> version;  // what the alias names after the move
  int64_t time = 0;
  std::string actor;
};

// Where a rollback of an alias goes, from its moves in order: each set (or delete) stacks the
// alias's new target over the one before, unless it is the same target again, and each
// rollback pops the top, so that repeated rollbacks walk back through what the alias held
// rather than swinging between two versions. Targets that `exists` denies (deleted versions)
// are passed over. nullopt when nothing lies below the current target.
std::optional<std::optional<int64_t>> AliasRollbackTarget(
    const std::vector<AliasMove>& moves, const std::function<bool(int64_t version)>& exists);

}  // namespace cairn::core
