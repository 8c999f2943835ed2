// What only the SQLite store has: its schema migrations.
#include "store/sqlite/sqlite_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/search.h"
#include "store/sqlite/schema.h"
#include "util/hash.h"

namespace cairn::store {
namespace {

class SqliteMigrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("cairn-migrate-" + RandomHex(8));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "cairn.db").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Runs SQL on the database file directly, as an older cairn would have.
  void Exec(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
    std::string message = err != nullptr ? err : "";
    sqlite3_free(err);
    sqlite3_close(db);
    ASSERT_EQ(rc, SQLITE_OK) << message;
  }

  int64_t Version() {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(db, "SELECT MAX(version) FROM schema_version", -1, &s, nullptr);
    int64_t v = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
    sqlite3_finalize(s);
    sqlite3_close(db);
    return v;
  }

  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(SqliteMigrationTest, VersionOneDatabaseIsUpgradedWithItsRuns) {
  Exec(std::string("CREATE TABLE schema_version (version INTEGER NOT NULL);") +
       sqlite::Migrations()[0] +
       "INSERT INTO schema_version VALUES (1);"
       "INSERT INTO experiments VALUES (0, 'Default', 'a/0', 'active', 1, 1);"
       "INSERT INTO runs (id, run_uuid, experiment_id, name, user_id, status, start_time, "
       "artifact_uri, lifecycle_stage) VALUES (1, 'aaaa', 0, 'old', 'u', 'FINISHED', 5, 'a/0/aaaa', "
       "'active'), (2, 'bbbb', 0, 'gone', 'u', 'FINISHED', 6, 'a/0/bbbb', 'deleted');"
       "INSERT INTO params VALUES (1, 'opt', 'adam'), (2, 'opt', 'adam');");

  auto store = OpenSqliteMetadataStore(path_, StoreOptions{});
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  RunSearchQuery q;
  q.experiment_ids = {"0"};
  q.filter = core::ParseRunFilter("params.opt = 'adam'").value();
  q.order = core::ParseRunOrderBy({"attributes.start_time DESC"}).value();
  auto runs = (*store)->SearchRuns(q);
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].info.run_id, "aaaa");
  EXPECT_EQ((*runs)[0].info.run_name, "old");
  EXPECT_EQ((*runs)[0].info.status, core::RunStatus::kFinished);
  store->reset();
  EXPECT_EQ(Version(), static_cast<int64_t>(sqlite::Migrations().size()));
}

TEST_F(SqliteMigrationTest, DatasetFilesLeaveTheIndexAndTheirBlobsStayNoted) {
  // A schema 8 database: a version's files were rows beside its manifest.
  std::string sql = "CREATE TABLE schema_version (version INTEGER NOT NULL);";
  for (size_t v = 0; v < 8; ++v) sql += sqlite::Migrations()[v];
  const std::string m(64, 'm'), a(64, 'a'), b(64, 'b'), r(64, 'r');
  auto row = [](const std::string& path, const std::string& digest, int size) {
    return "('" + path + "', '" + digest + "', " + std::to_string(size) + ")";
  };
  sql += "INSERT INTO schema_version VALUES (8);";
  sql += "INSERT INTO artifacts (path, digest, size) VALUES " +
         row("datasets/d/" + m + ".json", m, 300) + ", " + row("datasets/d/" + m + "/x.csv", a, 1) +
         ", " + row("datasets/d/" + m + "/sub/y.json", b, 2) + ", " +
         row("datasets/d/other/f", r, 3) + ", " + row("0/run/artifacts/datasets/d/e/f", r, 3) + ";";
  sql += "INSERT INTO data_versions VALUES ('d', 1, '" + m + "', 0, '', 'u', 1, '{}', 2, 3, '');";
  sql += "INSERT INTO data_blobs VALUES ('" + a + "');";
  Exec(sql);

  auto store = OpenSqliteMetadataStore(path_, StoreOptions{});
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  std::vector<std::string> paths;
  ASSERT_TRUE((*store)
                  ->ForEachArtifactFile([&](ArtifactFile& f) {
                    paths.push_back(f.path);
                    return Status::Ok();
                  })
                  .ok());
  // Only the version's files leave; a row that is no version's file stays.
  EXPECT_EQ(paths, (std::vector<std::string>{"0/run/artifacts/datasets/d/e/f",
                                             "datasets/d/" + m + ".json", "datasets/d/other/f"}));
  EXPECT_TRUE(*(*store)->datasets().DataBlobNoted(a));
  EXPECT_TRUE(*(*store)->datasets().DataBlobNoted(b));
  EXPECT_FALSE(*(*store)->datasets().DataBlobNoted(r));
  EXPECT_TRUE(*(*store)->BlobReferenced(b));
  store->reset();
  EXPECT_EQ(Version(), static_cast<int64_t>(sqlite::Migrations().size()));
}

TEST_F(SqliteMigrationTest, NewerDatabaseIsRefused) {
  Exec("CREATE TABLE schema_version (version INTEGER NOT NULL);"
       "INSERT INTO schema_version VALUES (9999);");
  auto store = OpenSqliteMetadataStore(path_, StoreOptions{});
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("newer than this cairn"), std::string::npos)
      << store.status().ToString();
}

}  // namespace
}  // namespace cairn::store
