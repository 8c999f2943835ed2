#include "store/sqlite/registry_tables.h"

#include <utility>
#include <variant>

#include "store/store_util.h"

namespace cairn::store::sqlite {
namespace {

using core::AliasMove;
using core::AliasMoveKind;
using core::ModelVersion;
using core::RegisteredModel;

#define CAIRN_MODEL_COLUMNS \
  "m.id, m.name, m.creation_time, m.last_updated_time, m.user_id, m.description"
#define CAIRN_VERSION_COLUMNS                                                              \
  "v.model, m.name, v.version, v.creation_time, v.last_updated_time, v.user_id, v.stage, " \
  "v.description, v.source, v.run_id, v.run_link, v.status, v.status_message, "            \
  "v.storage_location"
#define CAIRN_VERSIONS_FROM " FROM model_versions v JOIN registered_models m ON m.id = v.model "

RegisteredModel ModelRow(const Stmt& s) {
  RegisteredModel m;
  m.name = s.Str(1);
  m.creation_timestamp = s.Int(2);
  m.last_updated_timestamp = s.Int(3);
  m.user_id = s.Str(4);
  m.description = s.Str(5);
  return m;
}

ModelVersion VersionRow(const Stmt& s) {
  ModelVersion v;
  v.name = s.Str(1);
  v.version = s.Int(2);
  v.creation_timestamp = s.Int(3);
  v.last_updated_timestamp = s.Int(4);
  v.user_id = s.Str(5);
  core::ParseModelStage(s.Text(6), &v.current_stage);
  v.description = s.Str(7);
  v.source = s.Str(8);
  v.run_id = s.Str(9);
  v.run_link = s.Str(10);
  for (core::ModelVersionStatus st :
       {core::ModelVersionStatus::kPendingRegistration,
        core::ModelVersionStatus::kFailedRegistration, core::ModelVersionStatus::kReady}) {
    if (s.Text(11) == core::ModelVersionStatusName(st)) v.status = st;
  }
  v.status_message = s.Str(12);
  v.storage_location = s.Str(13);
  return v;
}

Result<std::vector<core::Tag>> ReadTags(Stmt* s) {
  std::vector<core::Tag> tags;
  while (s->Step()) tags.push_back({s->Str(0), s->Str(1)});
  CAIRN_RETURN_IF_ERROR(s->status());
  return tags;
}

Result<int64_t> ModelId(Connection& c, std::string_view name) {
  CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT id FROM registered_models WHERE name = ?"));
  s->Bind(1, name);
  if (!s->Step()) {
    CAIRN_RETURN_IF_ERROR(s->status());
    return RegisteredModelNotFound(name);
  }
  return s->Int(0);
}

// The model's id when the version exists; ModelVersionNotFound otherwise (also when the model
// does not exist, as MLflow answers).
Result<int64_t> VersionModelId(Connection& c, std::string_view name, int64_t version) {
  CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT v.model" CAIRN_VERSIONS_FROM
                                             "WHERE m.name = ? AND v.version = ?"));
  s->Bind(1, name).Bind(2, version);
  if (!s->Step()) {
    CAIRN_RETURN_IF_ERROR(s->status());
    return ModelVersionNotFound(name, version);
  }
  return s->Int(0);
}

Status LoadModelExtras(Connection& c, int64_t id, RegisteredModel* m) {
  CAIRN_ASSIGN_OR_RETURN(Stmt * t, c.Prepare("SELECT key, value FROM registered_model_tags "
                                             "WHERE model = ? ORDER BY key"));
  t->Bind(1, id);
  CAIRN_ASSIGN_OR_RETURN(m->tags, ReadTags(t));
  CAIRN_ASSIGN_OR_RETURN(Stmt * a, c.Prepare("SELECT alias, version FROM model_aliases WHERE "
                                             "model = ? ORDER BY alias"));
  a->Bind(1, id);
  while (a->Step()) m->aliases.push_back({a->Str(0), a->Int(1)});
  return a->status();
}

Status LoadVersionExtras(Connection& c, int64_t id, ModelVersion* v) {
  CAIRN_ASSIGN_OR_RETURN(Stmt * t, c.Prepare("SELECT key, value FROM model_version_tags WHERE "
                                             "model = ? AND version = ? ORDER BY key"));
  t->Bind(1, id).Bind(2, v->version);
  CAIRN_ASSIGN_OR_RETURN(v->tags, ReadTags(t));
  CAIRN_ASSIGN_OR_RETURN(Stmt * a, c.Prepare("SELECT alias FROM model_aliases WHERE model = ? "
                                             "AND version = ? ORDER BY alias"));
  a->Bind(1, id).Bind(2, v->version);
  while (a->Step()) v->aliases.push_back(a->Str(0));
  return a->status();
}

// The version as stored, with tags and aliases; `id` is its model's.
Result<ModelVersion> LoadVersion(Connection& c, int64_t id, int64_t version) {
  CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT " CAIRN_VERSION_COLUMNS CAIRN_VERSIONS_FROM
                                             "WHERE v.model = ? AND v.version = ?"));
  s->Bind(1, id).Bind(2, version);
  if (!s->Step()) {
    CAIRN_RETURN_IF_ERROR(s->status());
    return Internal("model version row vanished");
  }
  ModelVersion v = VersionRow(*s);
  CAIRN_RETURN_IF_ERROR(LoadVersionExtras(c, id, &v));
  return v;
}

Status RecordMove(Connection& c, int64_t id, std::string_view alias, AliasMoveKind kind,
                  std::optional<int64_t> version, std::string_view actor, int64_t now) {
  return ExecStmt(c,
                  "INSERT INTO alias_moves (model, alias, kind, version, time, actor) VALUES "
                  "(?, ?, ?, ?, ?, ?)",
                  id, alias, core::AliasMoveKindName(kind), version, now, actor);
}

// ---------------------------------------------------------------------------------------------
// Searches as SQL.

using Binding = std::variant<std::string, double, int64_t>;

struct SqlQuery {
  std::string text;
  std::vector<Binding> binds;
};

enum class Searched { kModels, kVersions };

struct Column {
  std::string_view name;  // "" for a key the search does not have
  bool numeric = false;
};

Column ColumnOf(Searched what, std::string_view key) {
  if (key == "name") return {"m.name"};
  if (what == Searched::kModels) {
    if (key == "creation_timestamp") return {"m.creation_time", true};
    if (key == "last_updated_timestamp") return {"m.last_updated_time", true};
    return {};
  }
  if (key == "version_number") return {"v.version", true};
  if (key == "run_id") return {"v.run_id"};
  if (key == "source_path") return {"v.source"};
  if (key == "creation_timestamp") return {"v.creation_time", true};
  if (key == "last_updated_timestamp") return {"v.last_updated_time", true};
  return {};
}

// The column compared by the clause, binding its literal(s): exactly what
// core::ModelVersionMatches and RegisteredModelMatches decide.
std::string Condition(Column column, const core::Clause& cl, SqlQuery* q) {
  using core::Comparator;
  const std::string col(column.name);
  auto bind_text = [&](const std::string& text) {
    q->binds.emplace_back(text);
    return std::string("?");
  };
  auto literal = [&]() {
    if (!column.numeric) return bind_text(cl.text);
    q->binds.emplace_back(cl.number);
    return std::string("?");
  };
  switch (cl.op) {
    case Comparator::kEq:
      return col + " = " + literal();
    case Comparator::kNe:
      return col + " != " + literal();
    case Comparator::kLt:
      return col + " < " + literal();
    case Comparator::kLe:
      return col + " <= " + literal();
    case Comparator::kGt:
      return col + " > " + literal();
    case Comparator::kGe:
      return col + " >= " + literal();
    case Comparator::kLike:
      return "cairn_like(" + col + ", " + bind_text(cl.text) + ", 0)";
    case Comparator::kILike:
      return "cairn_like(" + col + ", " + bind_text(cl.text) + ", 1)";
    case Comparator::kIn:
    case Comparator::kNotIn: {
      if (cl.list.empty()) return cl.op == Comparator::kIn ? "0" : "1";
      std::string out = col + (cl.op == Comparator::kIn ? " IN (" : " NOT IN (");
      for (size_t i = 0; i < cl.list.size(); ++i) out += (i ? ", " : "") + bind_text(cl.list[i]);
      return out + ")";
    }
  }
  return "0";
}

std::string WhereClause(Searched what, const std::vector<core::Clause>& filter, SqlQuery* q) {
  std::string where;
  for (const core::Clause& cl : filter) {
    std::string cond;
    if (cl.type == core::EntityType::kTag) {
      q->binds.emplace_back(cl.key);
      cond = what == Searched::kModels
                 ? "EXISTS (SELECT 1 FROM registered_model_tags t WHERE t.model = m.id AND "
                   "t.key = ? AND "
                 : "EXISTS (SELECT 1 FROM model_version_tags t WHERE t.model = v.model AND "
                   "t.version = v.version AND t.key = ? AND ";
      cond += Condition({"t.value"}, cl, q) + ")";
    } else {
      const Column col = ColumnOf(what, cl.key);
      cond = col.name.empty() ? "0" : Condition(col, cl, q);
    }
    where += where.empty() ? " WHERE " : " AND ";
    where += cond;
  }
  return where;
}

std::string OrderClause(Searched what, const std::vector<core::OrderKey>& keys) {
  std::string order;
  for (const core::OrderKey& k : keys) {
    const Column col = ColumnOf(what, k.key);
    if (col.name.empty()) continue;
    order += order.empty() ? " ORDER BY " : ", ";
    order += std::string(col.name) + (k.ascending ? " ASC" : " DESC");
  }
  return order;
}

Result<std::unique_ptr<Stmt>> PrepareSearch(Connection& c, SqlQuery q,
                                            const RegistrySearchQuery& query) {
  // With a visibility predicate the page is cut here, after it; without, SQL pages.
  if (!query.visible) {
    q.text += " LIMIT ? OFFSET ?";
    q.binds.emplace_back(query.max_results);
    q.binds.emplace_back(query.offset);
  }
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<Stmt> s, c.PrepareOnce(q.text));
  for (size_t i = 0; i < q.binds.size(); ++i) {
    std::visit([&](const auto& value) { s->Bind(static_cast<int>(i + 1), value); }, q.binds[i]);
  }
  return s;
}

// Steps the search's rows, handing those on the page to `take`.
template <typename Take>
Status StepPage(Stmt* s, const RegistrySearchQuery& query, int name_column, Take take) {
  int64_t skipped = 0;
  int64_t taken = 0;
  while (taken < query.max_results && s->Step()) {
    if (query.visible) {
      if (!query.visible(s->Text(name_column))) continue;
      if (skipped < query.offset) {
        ++skipped;
        continue;
      }
    }
    CAIRN_RETURN_IF_ERROR(take(*s));
    ++taken;
  }
  return s->status();
}

class SqliteRegistryStore : public RegistryStore {
 public:
  explicit SqliteRegistryStore(Database* db) : db_(db) {}

  Status CreateRegisteredModel(const RegisteredModel& model) override {
    return db_->Write([&](Connection& c) -> Status {
      CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT 1 FROM registered_models WHERE name = ?"));
      s->Bind(1, model.name);
      if (s->Step()) return RegisteredModelTaken(model.name);
      CAIRN_RETURN_IF_ERROR(s->status());
      CAIRN_RETURN_IF_ERROR(ExecStmt(c,
                                     "INSERT INTO registered_models (name, creation_time, "
                                     "last_updated_time, user_id, description, last_version) "
                                     "VALUES (?, ?, ?, ?, ?, 0)",
                                     model.name, model.creation_timestamp,
                                     model.last_updated_timestamp, model.user_id,
                                     model.description));
      const int64_t id = sqlite3_last_insert_rowid(c.raw());
      for (const core::Tag& t : model.tags) {
        CAIRN_RETURN_IF_ERROR(PutModelTag(c, id, t));
      }
      return Status::Ok();
    });
  }

  Result<RegisteredModel> GetRegisteredModel(std::string_view name) override {
    return db_->Read<RegisteredModel>([&](Connection& c) -> Result<RegisteredModel> {
      CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT " CAIRN_MODEL_COLUMNS
                                                 " FROM registered_models m WHERE m.name = ?"));
      s->Bind(1, name);
      if (!s->Step()) {
        CAIRN_RETURN_IF_ERROR(s->status());
        return RegisteredModelNotFound(name);
      }
      RegisteredModel m = ModelRow(*s);
      CAIRN_RETURN_IF_ERROR(LoadModelExtras(c, s->Int(0), &m));
      return m;
    });
  }

  Status RenameRegisteredModel(std::string_view name, std::string_view new_name,
                               int64_t now) override {
    return db_->Write([&](Connection& c) -> Status {
      CAIRN_ASSIGN_OR_RETURN(int64_t id, ModelId(c, name));
      if (name == new_name) return Status::Ok();
      Result<int64_t> taken = ModelId(c, new_name);
      if (taken.ok()) return RegisteredModelTaken(new_name);
      CAIRN_RETURN_IF_ERROR(
          ExecStmt(c, "UPDATE model_versions SET last_updated_time = ? WHERE model = ?", now, id));
      return ExecStmt(c,
                      "UPDATE registered_models SET name = ?, last_updated_time = ? WHERE id = ?",
                      new_name, now, id);
    });
  }

  Status UpdateRegisteredModel(std::string_view name, std::string_view description,
                               int64_t now) override {
    return db_->Write([&](Connection& c) -> Status {
      CAIRN_ASSIGN_OR_RETURN(int64_t id, ModelId(c, name));
      return ExecStmt(c,
                      "UPDATE registered_models SET description = ?, last_updated_time = ? "
                      "WHERE id = ?",
                      description, now, id);
    });
  }

  Result<std::vector<ModelVersion>> DeleteRegisteredModel(std::string_view name) override {
    std::vector<ModelVersion> removed;
    CAIRN_RETURN_IF_ERROR(db_->Write([&](Connection& c) -> Status {
      removed.clear();
      CAIRN_ASSIGN_OR_RETURN(int64_t id, ModelId(c, name));
      CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT " CAIRN_VERSION_COLUMNS CAIRN_VERSIONS_FROM
                                                 "WHERE v.model = ? "
                                                 "ORDER BY v.version"));
      s->Bind(1, id);
      while (s->Step()) removed.push_back(VersionRow(*s));
      CAIRN_RETURN_IF_ERROR(s->status());
      for (ModelVersion& v : removed) CAIRN_RETURN_IF_ERROR(LoadVersionExtras(c, id, &v));
      for (const char* sql :
           {"DELETE FROM model_version_tags WHERE model = ?",
            "DELETE FROM model_versions WHERE model = ?",
            "DELETE FROM model_aliases WHERE model = ?", "DELETE FROM alias_moves WHERE model = ?",
            "DELETE FROM registered_model_tags WHERE model = ?",
            "DELETE FROM registered_models WHERE id = ?"}) {
        CAIRN_RETURN_IF_ERROR(ExecStmt(c, sql, id));
      }
      return Status::Ok();
    }));
    return removed;
  }

  Status SetRegisteredModelTag(std::string_view name, const core::Tag& tag) override {
    return db_->Write([&](Connection& c) -> Status {
      CAIRN_ASSIGN_OR_RETURN(int64_t id, ModelId(c, name));
      return PutModelTag(c, id, tag);
    });
  }

  Status DeleteRegisteredModelTag(std::string_view name, std::string_view key) override {
    return db_->Write([&](Connection& c) -> Status {
      CAIRN_ASSIGN_OR_RETURN(int64_t id, ModelId(c, name));
      return ExecStmt(c, "DELETE FROM registered_model_tags WHERE model = ? AND key = ?", id, key);
    });
  }

  Result<std::vector<RegisteredModel>> SearchRegisteredModels(
      const RegistrySearchQuery& query) override {
    using List = std::vector<RegisteredModel>;
    return db_->Read<List>([&](Connection& c) -> Result<List> {
      SqlQuery q;
      q.text = "SELECT " CAIRN_MODEL_COLUMNS " FROM registered_models m";
      q.text += WhereClause(Searched::kModels, query.filter, &q);
      q.text += OrderClause(Searched::kModels, core::RegisteredModelOrder(query.order));
      CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<Stmt> s, PrepareSearch(c, std::move(q), query));
      List out;
      std::vector<int64_t> ids;
      CAIRN_RETURN_IF_ERROR(StepPage(s.get(), query, 1, [&](const Stmt& row) {
        out.push_back(ModelRow(row));
        ids.push_back(row.Int(0));
        return Status::Ok();
      }));
      for (size_t i = 0; i < out.size(); ++i) {
        CAIRN_RETURN_IF_ERROR(LoadModelExtras(c, ids[i], &out[i]));
      }
      return out;
    });
  }

  Result<ModelVersion> CreateModelVersion(const ModelVersion& version) override {
    ModelVersion stored = version;
    CAIRN_RETURN_IF_ERROR(db_->Write([&](Connection& c) -> Status {
      CAIRN_ASSIGN_OR_RETURN(int64_t id, ModelId(c, version.name));
      CAIRN_RETURN_IF_ERROR(ExecStmt(c,
                                     "UPDATE registered_models SET last_version = last_version "
                                     "+ 1, last_updated_time = ? WHERE id = ?",
                                     version.creation_timestamp, id));
      CAIRN_ASSIGN_OR_RETURN(Stmt * n, c.Prepare("SELECT last_version FROM registered_models "
                                                 "WHERE id = ?"));
      n->Bind(1, id);
      if (!n->Step()) return n->status().ok() ? Internal("model row vanished") : n->status();
      stored.version = n->Int(0);
      stored.aliases.clear();
      CAIRN_RETURN_IF_ERROR(
          ExecStmt(c,
                   "INSERT INTO model_versions (model, version, creation_time, last_updated_time, "
                   "user_id, stage, description, source, run_id, run_link, status, status_message, "
                   "storage_location) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   id, stored.version, stored.creation_timestamp, stored.last_updated_timestamp,
                   stored.user_id, core::ModelStageName(stored.current_stage), stored.description,
                   stored.source, stored.run_id, stored.run_link,
                   core::ModelVersionStatusName(stored.status), stored.status_message,
                   stored.storage_location));
      for (const core::Tag& t : stored.tags) {
        CAIRN_RETURN_IF_ERROR(PutVersionTag(c, id, stored.version, t));
      }
      return Status::Ok();
    }));
    return stored;
  }

  Result<ModelVersion> GetModelVersion(std::string_view name, int64_t version) override {
    return db_->Read<ModelVersion>([&](Connection& c) -> Result<ModelVersion> {
      CAIRN_ASSIGN_OR_RETURN(int64_t id, VersionModelId(c, name, version));
      return LoadVersion(c, id, version);
    });
  }

  Status UpdateModelVersion(std::string_view name, int64_t version,
                            std::optional<std::string> description,
                            std::optional<core::ModelVersionStatus> status,
                            std::optional<std::string> status_message, int64_t now) override {
    return db_->Write([&](Connection& c) -> Status {
      CAIRN_ASSIGN_OR_RETURN(int64_t id, VersionModelId(c, name, version));
      if (description) {
        CAIRN_RETURN_IF_ERROR(ExecStmt(c,
                                       "UPDATE model_versions SET description = ? WHERE model "
                                       "= ? AND version = ?",
                                       *description, id, version));
      }
      if (status) {
        CAIRN_RETURN_IF_ERROR(ExecStmt(c,
                                       "UPDATE model_versions SET status = ? WHERE model = ? "
                                       "AND version = ?",
                                       core::ModelVersionStatusName(*status), id, version));
      }
      if (status_message) {
        CAIRN_RETURN_IF_ERROR(ExecStmt(c,
                                       "UPDATE model_versions SET status_message = ? WHERE "
                                       "model = ? AND version = ?",
                                       *status_message, id, version));
      }
      return Touch(c, id, version, now);
    });
  }

  Status TransitionModelVersionStage(std::string_view name, int64_t version, core::ModelStage stage,
                                     bool archive_existing, int64_t now) override {
    return db_->Write([&](Connection& c) -> Status {
      CAIRN_ASSIGN_OR_RETURN(int64_t id, VersionModelId(c, name, version));
      if (archive_existing) {
        CAIRN_RETURN_IF_ERROR(ExecStmt(c,
                                       "UPDATE model_versions SET stage = 'Archived', "
                                       "last_updated_time = ? WHERE model = ? AND stage = ? "
                                       "AND version != ?",
                                       now, id, core::ModelStageName(stage), version));
      }
      CAIRN_RETURN_IF_ERROR(ExecStmt(c,
                                     "UPDATE model_versions SET stage = ? WHERE model = ? AND "
                                     "version = ?",
                                     core::ModelStageName(stage), id, version));
      CAIRN_RETURN_IF_ERROR(TouchModel(c, id, now));
      return Touch(c, id, version, now);
    });
  }

  Result<ModelVersion> DeleteModelVersion(std::string_view name, int64_t version,
                                          std::string_view actor, int64_t now) override {
    ModelVersion removed;
    CAIRN_RETURN_IF_ERROR(db_->Write([&](Connection& c) -> Status {
      CAIRN_ASSIGN_OR_RETURN(int64_t id, VersionModelId(c, name, version));
      CAIRN_ASSIGN_OR_RETURN(removed, LoadVersion(c, id, version));
      for (const std::string& alias : removed.aliases) {
        CAIRN_RETURN_IF_ERROR(
            RecordMove(c, id, alias, AliasMoveKind::kDelete, std::nullopt, actor, now));
      }
      for (const char* sql : {"DELETE FROM model_aliases WHERE model = ? AND version = ?",
                              "DELETE FROM model_version_tags WHERE model = ? AND version = ?",
                              "DELETE FROM model_versions WHERE model = ? AND version = ?"}) {
        CAIRN_RETURN_IF_ERROR(ExecStmt(c, sql, id, version));
      }
      return TouchModel(c, id, now);
    }));
    return removed;
  }

  Status SetModelVersionTag(std::string_view name, int64_t version, const core::Tag& tag) override {
    return db_->Write([&](Connection& c) -> Status {
      CAIRN_ASSIGN_OR_RETURN(int64_t id, VersionModelId(c, name, version));
      return PutVersionTag(c, id, version, tag);
    });
  }

  Status DeleteModelVersionTag(std::string_view name, int64_t version,
                               std::string_view key) override {
    return db_->Write([&](Connection& c) -> Status {
      CAIRN_ASSIGN_OR_RETURN(int64_t id, VersionModelId(c, name, version));
      return ExecStmt(c,
                      "DELETE FROM model_version_tags WHERE model = ? AND version = ? AND key = ?",
                      id, version, key);
    });
  }

  Result<std::vector<ModelVersion>> SearchModelVersions(const RegistrySearchQuery& query) override {
    using List = std::vector<ModelVersion>;
    return db_->Read<List>([&](Connection& c) -> Result<List> {
      SqlQuery q;
      q.text = "SELECT " CAIRN_VERSION_COLUMNS CAIRN_VERSIONS_FROM;
      q.text += WhereClause(Searched::kVersions, query.filter, &q);
      q.text += OrderClause(Searched::kVersions, core::ModelVersionOrder(query.order));
      CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<Stmt> s, PrepareSearch(c, std::move(q), query));
      List out;
      std::vector<int64_t> ids;
      CAIRN_RETURN_IF_ERROR(StepPage(s.get(), query, 1, [&](const Stmt& row) {
        out.push_back(VersionRow(row));
        ids.push_back(row.Int(0));
        return Status::Ok();
      }));
      for (size_t i = 0; i < out.size(); ++i) {
        CAIRN_RETURN_IF_ERROR(LoadVersionExtras(c, ids[i], &out[i]));
      }
      return out;
    });
  }

  Result<std::string> ModelOfStorage(std::string_view storage_location) override {
    return db_->Read<std::string>([&](Connection& c) -> Result<std::string> {
      CAIRN_ASSIGN_OR_RETURN(
          Stmt * s, c.Prepare("SELECT m.name" CAIRN_VERSIONS_FROM "WHERE v.storage_location = ?"));
      s->Bind(1, storage_location);
      if (!s->Step()) {
        CAIRN_RETURN_IF_ERROR(s->status());
        return NotFound("no model version is stored at " + std::string(storage_location));
      }
      return s->Str(0);
    });
  }

  Result<std::vector<ModelVersion>> LatestVersions(std::string_view name) override {
    using List = std::vector<ModelVersion>;
    return db_->Read<List>([&](Connection& c) -> Result<List> {
      CAIRN_ASSIGN_OR_RETURN(int64_t id, ModelId(c, name));
      // Stages in the order their lowest version has them, as MLflow lists them.
      CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT stage, MAX(version) FROM "
                                                 "model_versions WHERE model = ? GROUP BY "
                                                 "stage ORDER BY MIN(version)"));
      s->Bind(1, id);
      std::vector<std::pair<core::ModelStage, int64_t>> latest;
      while (s->Step()) {
        core::ModelStage stage = core::ModelStage::kNone;
        core::ParseModelStage(s->Text(0), &stage);
        latest.emplace_back(stage, s->Int(1));
      }
      CAIRN_RETURN_IF_ERROR(s->status());
      List out;
      for (const auto& [stage, version] : latest) {
        CAIRN_ASSIGN_OR_RETURN(ModelVersion v, LoadVersion(c, id, version));
        out.push_back(std::move(v));
      }
      return out;
    });
  }

  Status SetAlias(std::string_view name, std::string_view alias, int64_t version,
                  std::string_view actor, int64_t now) override {
    return db_->Write([&](Connection& c) -> Status {
      CAIRN_ASSIGN_OR_RETURN(int64_t id, VersionModelId(c, name, version));
      CAIRN_RETURN_IF_ERROR(ExecStmt(c,
                                     "INSERT OR REPLACE INTO model_aliases (model, alias, "
                                     "version) VALUES (?, ?, ?)",
                                     id, alias, version));
      return RecordMove(c, id, alias, AliasMoveKind::kSet, version, actor, now);
    });
  }

  Status DeleteAlias(std::string_view name, std::string_view alias, std::string_view actor,
                     int64_t now) override {
    return db_->Write([&](Connection& c) -> Status {
      CAIRN_ASSIGN_OR_RETURN(int64_t id, ModelId(c, name));
      CAIRN_RETURN_IF_ERROR(
          ExecStmt(c, "DELETE FROM model_aliases WHERE model = ? AND alias = ?", id, alias));
      if (sqlite3_changes(c.raw()) == 0) return Status::Ok();
      return RecordMove(c, id, alias, AliasMoveKind::kDelete, std::nullopt, actor, now);
    });
  }

  Result<ModelVersion> GetModelVersionByAlias(std::string_view name,
                                              std::string_view alias) override {
    return db_->Read<ModelVersion>([&](Connection& c) -> Result<ModelVersion> {
      CAIRN_ASSIGN_OR_RETURN(int64_t id, ModelId(c, name));
      CAIRN_ASSIGN_OR_RETURN(int64_t version, AliasVersion(c, id, name, alias));
      return LoadVersion(c, id, version);
    });
  }

  Result<std::vector<AliasMove>> AliasHistory(std::string_view name,
                                              std::string_view alias) override {
    using List = std::vector<AliasMove>;
    return db_->Read<List>([&](Connection& c) -> Result<List> {
      CAIRN_ASSIGN_OR_RETURN(int64_t id, ModelId(c, name));
      return Moves(c, id, alias);
    });
  }

  Result<std::optional<int64_t>> RollbackAlias(std::string_view name, std::string_view alias,
                                               std::string_view actor, int64_t now) override {
    std::optional<int64_t> target;
    CAIRN_RETURN_IF_ERROR(db_->Write([&](Connection& c) -> Status {
      CAIRN_ASSIGN_OR_RETURN(int64_t id, ModelId(c, name));
      CAIRN_ASSIGN_OR_RETURN(std::vector<AliasMove> moves, Moves(c, id, alias));
      Status lookup;
      std::optional<std::optional<int64_t>> found =
          core::AliasRollbackTarget(moves, [&](int64_t version) {
            Result<Stmt*> s = c.Prepare("SELECT 1 FROM model_versions WHERE model = ? AND "
                                        "version = ?");
            if (!s.ok()) {
              lookup = s.status();
              return false;
            }
            (*s)->Bind(1, id).Bind(2, version);
            const bool there = (*s)->Step();
            if (!(*s)->status().ok()) lookup = (*s)->status();
            (*s)->Reset();
            return there;
          });
      CAIRN_RETURN_IF_ERROR(lookup);
      if (!found) return NothingToRollBack(name, alias);
      target = *found;
      if (target) {
        CAIRN_RETURN_IF_ERROR(ExecStmt(c,
                                       "INSERT OR REPLACE INTO model_aliases (model, alias, "
                                       "version) VALUES (?, ?, ?)",
                                       id, alias, *target));
      } else {
        CAIRN_RETURN_IF_ERROR(
            ExecStmt(c, "DELETE FROM model_aliases WHERE model = ? AND alias = ?", id, alias));
      }
      return RecordMove(c, id, alias, AliasMoveKind::kRollback, target, actor, now);
    }));
    return target;
  }

 private:
  static Status PutModelTag(Connection& c, int64_t id, const core::Tag& t) {
    return ExecStmt(c,
                    "INSERT OR REPLACE INTO registered_model_tags (model, key, value) VALUES "
                    "(?, ?, ?)",
                    id, t.key, t.value);
  }

  static Status PutVersionTag(Connection& c, int64_t id, int64_t version, const core::Tag& t) {
    return ExecStmt(c,
                    "INSERT OR REPLACE INTO model_version_tags (model, version, key, value) "
                    "VALUES (?, ?, ?, ?)",
                    id, version, t.key, t.value);
  }

  static Status Touch(Connection& c, int64_t id, int64_t version, int64_t now) {
    return ExecStmt(c,
                    "UPDATE model_versions SET last_updated_time = ? WHERE model = ? AND "
                    "version = ?",
                    now, id, version);
  }

  static Status TouchModel(Connection& c, int64_t id, int64_t now) {
    return ExecStmt(c, "UPDATE registered_models SET last_updated_time = ? WHERE id = ?", now, id);
  }

  static Result<int64_t> AliasVersion(Connection& c, int64_t id, std::string_view name,
                                      std::string_view alias) {
    CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT version FROM model_aliases WHERE model "
                                               "= ? AND alias = ?"));
    s->Bind(1, id).Bind(2, alias);
    if (!s->Step()) {
      CAIRN_RETURN_IF_ERROR(s->status());
      return AliasNotFound(name, alias);
    }
    return s->Int(0);
  }

  static Result<std::vector<AliasMove>> Moves(Connection& c, int64_t id, std::string_view alias) {
    CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT id, alias, kind, version, time, actor "
                                               "FROM alias_moves WHERE model = ?1 AND (?2 = '' "
                                               "OR alias = ?2) ORDER BY id"));
    s->Bind(1, id).Bind(2, alias);
    std::vector<AliasMove> out;
    while (s->Step()) {
      AliasMove m;
      m.id = s->Int(0);
      m.alias = s->Str(1);
      core::ParseAliasMoveKind(s->Text(2), &m.kind);
      if (!s->IsNull(3)) m.version = s->Int(3);
      m.time = s->Int(4);
      m.actor = s->Str(5);
      out.push_back(std::move(m));
    }
    CAIRN_RETURN_IF_ERROR(s->status());
    return out;
  }

  Database* db_;
};

#undef CAIRN_MODEL_COLUMNS
#undef CAIRN_VERSION_COLUMNS
#undef CAIRN_VERSIONS_FROM

}  // namespace

std::unique_ptr<RegistryStore> NewSqliteRegistryStore(Database* db) {
  return std::make_unique<SqliteRegistryStore>(db);
}

}  // namespace cairn::store::sqlite
