// The DatasetStore contract, run against the datasets of every MetadataStore backend.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <thread>

#include "fakes/store_backends.h"
#include "store/metadata_store.h"
#include "util/hash.h"

namespace cairn::store {
namespace {

using core::DataVersion;
using fakes::MemoryBackend;
using fakes::SqliteBackend;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

DataVersion Version(std::string name, std::string digest, int64_t time) {
  DataVersion v;
  v.name = std::move(name);
  v.digest = std::move(digest);
  v.message = "msg";
  v.creator = "alice";
  v.created_time = time;
  v.metadata = R"({"rows":3})";
  v.files = 2;
  v.bytes = 10;
  return v;
}

template <typename Backend>
class DatasetStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("cairn-data-" + RandomHex(8));
    std::filesystem::create_directories(dir_);
    store_ = Backend::Open(dir_.string());
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  DatasetStore& d() { return store_->datasets(); }

  std::filesystem::path dir_;
  std::unique_ptr<MetadataStore> store_;
};

using Backends = ::testing::Types<MemoryBackend, SqliteBackend>;
TYPED_TEST_SUITE(DatasetStoreTest, Backends);

TYPED_TEST(DatasetStoreTest, VersionsAreNumberedFromOneWithinEachDataset) {
  auto v1 = this->d().AddDataVersion(Version("mnist", "aa", 10), true);
  ASSERT_TRUE(v1.ok()) << v1.status().ToString();
  EXPECT_EQ(v1->version, 1);
  auto v2 = this->d().AddDataVersion(Version("mnist", "bb", 20), false);
  ASSERT_TRUE(v2.ok());
  EXPECT_EQ(v2->version, 2);
  auto other = this->d().AddDataVersion(Version("cifar", "aa", 30), false);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->version, 1);

  auto got = this->d().GetDataVersion("mnist", 1);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, *v1);
  auto latest = this->d().GetDataVersion("mnist", 0);
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(latest->version, 2);
  EXPECT_EQ(latest->digest, "bb");
  EXPECT_EQ(latest->metadata, R"({"rows":3})");
}

TYPED_TEST(DatasetStoreTest, ExpectNewRefusesAnExistingDataset) {
  ASSERT_TRUE(this->d().AddDataVersion(Version("mnist", "aa", 10), true).ok());
  auto again = this->d().AddDataVersion(Version("mnist", "bb", 20), true);
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists);
  auto versions = this->d().ListDataVersions("mnist");
  ASSERT_TRUE(versions.ok());
  EXPECT_EQ(versions->size(), 1u);
}

TYPED_TEST(DatasetStoreTest, UnknownDatasetsAndVersionsAreNotFound) {
  EXPECT_EQ(this->d().GetDataVersion("nope", 0).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(this->d().ListDataVersions("nope").status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(this->d().AddDataVersion(Version("mnist", "aa", 10), false).ok());
  auto missing = this->d().GetDataVersion("mnist", 7);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("no version 7"));
}

TYPED_TEST(DatasetStoreTest, ListsDatasetsByNameWithTheirLatestVersion) {
  ASSERT_TRUE(this->d().AddDataVersion(Version("mnist", "aa", 10), false).ok());
  ASSERT_TRUE(this->d().AddDataVersion(Version("mnist", "bb", 20), false).ok());
  ASSERT_TRUE(this->d().AddDataVersion(Version("cifar", "cc", 30), false).ok());
  auto list = this->d().ListDatasets();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].name, "cifar");
  EXPECT_EQ((*list)[1].name, "mnist");
  EXPECT_EQ((*list)[1].versions, 2);
  EXPECT_EQ((*list)[1].created_time, 10);
  EXPECT_EQ((*list)[1].latest.version, 2);
  EXPECT_EQ((*list)[1].latest.digest, "bb");

  auto versions = this->d().ListDataVersions("mnist");
  ASSERT_TRUE(versions.ok());
  ASSERT_EQ(versions->size(), 2u);
  EXPECT_EQ((*versions)[0].version, 2);  // newest first
  auto digests = this->d().DataVersionDigests();
  ASSERT_TRUE(digests.ok());
  EXPECT_EQ(std::set<std::string>(digests->begin(), digests->end()),
            (std::set<std::string>{"aa", "bb", "cc"}));
}

TYPED_TEST(DatasetStoreTest, VersionsRememberTheRunThatMadeThem) {
  DataVersion v = Version("mnist", "aa", 10);
  v.run_id = "r1";
  ASSERT_TRUE(this->d().AddDataVersion(v, false).ok());
  ASSERT_TRUE(this->d().AddDataVersion(Version("mnist", "bb", 20), false).ok());
  v.name = "other";
  ASSERT_TRUE(this->d().AddDataVersion(v, false).ok());
  EXPECT_EQ(this->d().GetDataVersion("mnist", 1)->run_id, "r1");
  auto made = this->d().DataVersionsOfRun("r1");
  ASSERT_TRUE(made.ok());
  ASSERT_EQ(made->size(), 2u);
  EXPECT_EQ((*made)[0].name, "mnist");
  EXPECT_EQ((*made)[1].name, "other");
  EXPECT_TRUE(this->d().DataVersionsOfRun("")->empty());
  EXPECT_EQ(this->d().ListDatasets()->at(1).latest.run_id, "r1");
}

TYPED_TEST(DatasetStoreTest, ConcurrentAddsGetDistinctNumbers) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([this, t] {
      for (int i = 0; i < 10; ++i) {
        ASSERT_TRUE(this->d()
                        .AddDataVersion(Version("shared", std::to_string(t * 100 + i), i), false)
                        .ok());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  auto versions = this->d().ListDataVersions("shared");
  ASSERT_TRUE(versions.ok());
  std::set<int64_t> numbers;
  for (const DataVersion& v : *versions) numbers.insert(v.version);
  EXPECT_EQ(numbers.size(), 40u);
  EXPECT_EQ(*numbers.rbegin(), 40);
}

TYPED_TEST(DatasetStoreTest, TheLedgerIsPerAccountAndPrunedByAge) {
  ASSERT_TRUE(this->d().RecordDataUploads("alice", {"d1", "d2"}, 100).ok());
  ASSERT_TRUE(this->d().RecordDataUploads("bob", {"d3"}, 200).ok());
  auto alice = this->d().DataUploaded("alice", {"d1", "d3", "d2"});
  ASSERT_TRUE(alice.ok());
  EXPECT_THAT(*alice, ElementsAre(true, false, true));
  // Sending a blob again renews its record.
  ASSERT_TRUE(this->d().RecordDataUploads("alice", {"d2"}, 300).ok());
  auto pruned = this->d().PruneDataUploads(250);
  ASSERT_TRUE(pruned.ok());
  EXPECT_EQ(*pruned, 2);  // alice's d1 and bob's d3
  EXPECT_THAT(*this->d().DataUploaded("alice", {"d1", "d2"}), ElementsAre(false, true));
  EXPECT_THAT(*this->d().DataUploaded("bob", {"d3"}), ElementsAre(false));
}

TYPED_TEST(DatasetStoreTest, DataBlobsAreNotedOnceAndListedInPages) {
  std::vector<std::string> digests;
  for (char c : std::string("fedcba")) digests.push_back(std::string(64, c));
  ASSERT_TRUE(this->d().NoteDataBlobs({digests[0], digests[1], digests[2]}).ok());
  ASSERT_TRUE(this->d().NoteDataBlobs({digests[2], digests[3], digests[4], digests[5]}).ok());
  ASSERT_TRUE(this->d().NoteDataBlobs({}).ok());
  EXPECT_TRUE(*this->d().DataBlobNoted(digests[3]));
  EXPECT_FALSE(*this->d().DataBlobNoted(std::string(64, '0')));
  auto page = this->d().ListDataBlobs("", 4);
  ASSERT_TRUE(page.ok());
  EXPECT_THAT(*page, ElementsAre(std::string(64, 'a'), std::string(64, 'b'), std::string(64, 'c'),
                                 std::string(64, 'd')));
  EXPECT_THAT(*this->d().ListDataBlobs(page->back(), 4),
              ElementsAre(std::string(64, 'e'), std::string(64, 'f')));
  std::vector<std::string> all;
  ASSERT_TRUE(this->d()
                  .ForEachDataBlob([&](const std::string& d) {
                    all.push_back(d);
                    return Status::Ok();
                  })
                  .ok());
  EXPECT_EQ(all.size(), 6u);
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));
  // A noted blob is referenced: the collector keeps it.
  EXPECT_TRUE(*this->store_->BlobReferenced(digests[5]));
  EXPECT_FALSE(*this->store_->BlobReferenced(std::string(64, '0')));
}

}  // namespace
}  // namespace cairn::store
