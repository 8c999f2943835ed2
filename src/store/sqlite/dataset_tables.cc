#include "store/sqlite/dataset_tables.h"

#include <utility>

#include "store/store_util.h"

namespace cairn::store::sqlite {
namespace {

using core::DataVersion;

#define CAIRN_DATA_VERSION_COLUMNS                                                          \
  "name, version, digest, parent, message, creator, created_time, metadata, files, bytes, " \
  "run_id"

DataVersion DataVersionRow(const Stmt& s) {
  DataVersion v;
  v.name = s.Str(0);
  v.version = s.Int(1);
  v.digest = s.Str(2);
  v.parent = s.Int(3);
  v.message = s.Str(4);
  v.creator = s.Str(5);
  v.created_time = s.Int(6);
  v.metadata = s.Str(7);
  v.files = s.Int(8);
  v.bytes = s.Int(9);
  v.run_id = s.Str(10);
  return v;
}

Result<DataVersion> ReadDataVersion(Connection& c, std::string_view name, int64_t version) {
  Stmt* s = nullptr;
  if (version == 0) {
    CAIRN_ASSIGN_OR_RETURN(
        s, c.Prepare("SELECT " CAIRN_DATA_VERSION_COLUMNS " FROM data_versions WHERE name = ? "
                     "ORDER BY version DESC LIMIT 1"));
    s->Bind(1, name);
  } else {
    CAIRN_ASSIGN_OR_RETURN(s, c.Prepare("SELECT " CAIRN_DATA_VERSION_COLUMNS
                                        " FROM data_versions WHERE name = ? AND version = ?"));
    s->Bind(1, name).Bind(2, version);
  }
  if (!s->Step()) {
    CAIRN_RETURN_IF_ERROR(s->status());
    return version == 0 ? DatasetNotFound(name) : DataVersionNotFound(name, version);
  }
  return DataVersionRow(*s);
}

class SqliteDatasetStore : public DatasetStore {
 public:
  explicit SqliteDatasetStore(Database* db) : db_(db) {}

  Result<DataVersion> AddDataVersion(DataVersion v, bool expect_new) override {
    CAIRN_RETURN_IF_ERROR(db_->Write([&](Connection& c) -> Status {
      CAIRN_ASSIGN_OR_RETURN(Stmt * s,
                             c.Prepare("SELECT last_version FROM data_sets WHERE name = ?"));
      s->Bind(1, v.name);
      int64_t last = 0;
      const bool exists = s->Step();
      if (exists) last = s->Int(0);
      CAIRN_RETURN_IF_ERROR(s->status());
      if (exists && expect_new) return DatasetExists(v.name);
      v.version = last + 1;
      if (exists) {
        CAIRN_RETURN_IF_ERROR(
            ExecStmt(c, "UPDATE data_sets SET last_version = ? WHERE name = ?", v.version, v.name));
      } else {
        CAIRN_RETURN_IF_ERROR(ExecStmt(c,
                                       "INSERT INTO data_sets (name, created_time, last_version) "
                                       "VALUES (?, ?, ?)",
                                       v.name, v.created_time, v.version));
      }
      return ExecStmt(c,
                      "INSERT INTO data_versions (" CAIRN_DATA_VERSION_COLUMNS
                      ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                      v.name, v.version, v.digest, v.parent, v.message, v.creator, v.created_time,
                      v.metadata, v.files, v.bytes, v.run_id);
    }));
    return v;
  }

  Result<DataVersion> GetDataVersion(std::string_view name, int64_t version) override {
    return db_->Read<DataVersion>([&](Connection& c) { return ReadDataVersion(c, name, version); });
  }

  Result<std::vector<DataVersion>> ListDataVersions(std::string_view name) override {
    using Versions = std::vector<DataVersion>;
    return db_->Read<Versions>([&](Connection& c) -> Result<Versions> {
      CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT " CAIRN_DATA_VERSION_COLUMNS
                                                 " FROM data_versions WHERE name = ? "
                                                 "ORDER BY version DESC"));
      s->Bind(1, name);
      Versions out;
      while (s->Step()) out.push_back(DataVersionRow(*s));
      CAIRN_RETURN_IF_ERROR(s->status());
      if (out.empty()) return DatasetNotFound(name);
      return out;
    });
  }

  Result<std::vector<core::DatasetEntry>> ListDatasets() override {
    using Entries = std::vector<core::DatasetEntry>;
    return db_->Read<Entries>([&](Connection& c) -> Result<Entries> {
      CAIRN_ASSIGN_OR_RETURN(
          Stmt * s,
          c.Prepare("SELECT d.created_time, (SELECT COUNT(*) FROM data_versions n WHERE n.name = "
                    "d.name), v.name, v.version, v.digest, v.parent, v.message, v.creator, "
                    "v.created_time, v.metadata, v.files, v.bytes, v.run_id FROM data_sets d JOIN "
                    "data_versions v ON v.name = d.name AND v.version = (SELECT MAX(version) "
                    "FROM data_versions m WHERE m.name = d.name) ORDER BY d.name"));
      Entries out;
      while (s->Step()) {
        core::DatasetEntry e;
        e.created_time = s->Int(0);
        e.versions = s->Int(1);
        e.latest.name = s->Str(2);
        e.latest.version = s->Int(3);
        e.latest.digest = s->Str(4);
        e.latest.parent = s->Int(5);
        e.latest.message = s->Str(6);
        e.latest.creator = s->Str(7);
        e.latest.created_time = s->Int(8);
        e.latest.metadata = s->Str(9);
        e.latest.files = s->Int(10);
        e.latest.bytes = s->Int(11);
        e.latest.run_id = s->Str(12);
        e.name = e.latest.name;
        out.push_back(std::move(e));
      }
      CAIRN_RETURN_IF_ERROR(s->status());
      return out;
    });
  }

  Result<std::vector<DataVersion>> DataVersionsOfRun(std::string_view run_id) override {
    using Versions = std::vector<DataVersion>;
    return db_->Read<Versions>([&](Connection& c) -> Result<Versions> {
      Versions out;
      if (run_id.empty()) return out;
      CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT " CAIRN_DATA_VERSION_COLUMNS
                                                 " FROM data_versions WHERE run_id = ? "
                                                 "ORDER BY name, version"));
      s->Bind(1, run_id);
      while (s->Step()) out.push_back(DataVersionRow(*s));
      CAIRN_RETURN_IF_ERROR(s->status());
      return out;
    });
  }

  Result<std::vector<std::string>> DataVersionDigests() override {
    using Digests = std::vector<std::string>;
    return db_->Read<Digests>([&](Connection& c) -> Result<Digests> {
      CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT DISTINCT digest FROM data_versions"));
      Digests out;
      while (s->Step()) out.push_back(s->Str(0));
      CAIRN_RETURN_IF_ERROR(s->status());
      return out;
    });
  }

  Status RecordDataUploads(std::string_view username, const std::vector<std::string>& digests,
                           int64_t now) override {
    if (digests.empty()) return Status::Ok();
    return db_->Write([&](Connection& c) -> Status {
      for (const std::string& d : digests) {
        CAIRN_RETURN_IF_ERROR(ExecStmt(c,
                                       "INSERT INTO data_uploads (username, digest, time) VALUES "
                                       "(?, ?, ?) ON CONFLICT (username, digest) DO UPDATE SET "
                                       "time = excluded.time",
                                       username, d, now));
      }
      return Status::Ok();
    });
  }

  Result<std::vector<bool>> DataUploaded(std::string_view username,
                                         const std::vector<std::string>& digests) override {
    using Found = std::vector<bool>;
    return db_->Read<Found>([&](Connection& c) -> Result<Found> {
      CAIRN_ASSIGN_OR_RETURN(
          Stmt * s, c.Prepare("SELECT 1 FROM data_uploads WHERE username = ? AND digest = ?"));
      Found out;
      out.reserve(digests.size());
      for (const std::string& d : digests) {
        s->Reset();
        s->Bind(1, username).Bind(2, d);
        out.push_back(s->Step());
        CAIRN_RETURN_IF_ERROR(s->status());
      }
      return out;
    });
  }

  Status NoteDataBlobs(const std::vector<std::string>& digests) override {
    if (digests.empty()) return Status::Ok();
    return db_->Write([&](Connection& c) -> Status {
      for (const std::string& d : digests) {
        CAIRN_RETURN_IF_ERROR(
            ExecStmt(c, "INSERT OR IGNORE INTO data_blobs (digest) VALUES (?)", d));
      }
      return Status::Ok();
    });
  }

  Result<bool> DataBlobNoted(std::string_view digest) override {
    return db_->Read<bool>([&](Connection& c) -> Result<bool> {
      CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT 1 FROM data_blobs WHERE digest = ?"));
      s->Bind(1, digest);
      const bool found = s->Step();
      CAIRN_RETURN_IF_ERROR(s->status());
      return found;
    });
  }

  Result<std::vector<std::string>> ListDataBlobs(std::string_view after, int64_t limit) override {
    using Digests = std::vector<std::string>;
    return db_->Read<Digests>([&](Connection& c) -> Result<Digests> {
      CAIRN_ASSIGN_OR_RETURN(
          Stmt * s, c.Prepare("SELECT digest FROM data_blobs WHERE digest > ? ORDER BY digest "
                              "LIMIT ?"));
      s->Bind(1, after).Bind(2, limit);
      Digests out;
      while (s->Step()) out.push_back(s->Str(0));
      CAIRN_RETURN_IF_ERROR(s->status());
      return out;
    });
  }

  Result<bool> AnyUploaded(std::string_view digest) override {
    return db_->Read<bool>([&](Connection& c) -> Result<bool> {
      CAIRN_ASSIGN_OR_RETURN(Stmt * s,
                             c.Prepare("SELECT 1 FROM data_uploads WHERE digest = ? LIMIT 1"));
      s->Bind(1, digest);
      const bool found = s->Step();
      CAIRN_RETURN_IF_ERROR(s->status());
      return found;
    });
  }

  Result<int64_t> PruneDataUploads(int64_t before) override {
    int64_t pruned = 0;
    CAIRN_RETURN_IF_ERROR(db_->Write([&](Connection& c) -> Status {
      CAIRN_RETURN_IF_ERROR(ExecStmt(c, "DELETE FROM data_uploads WHERE time < ?", before));
      pruned = sqlite3_changes(c.raw());
      return Status::Ok();
    }));
    return pruned;
  }

 private:
  Database* db_;
};

}  // namespace

std::unique_ptr<DatasetStore> NewSqliteDatasetStore(Database* db) {
  return std::make_unique<SqliteDatasetStore>(db);
}

}  // namespace cairn::store::sqlite
