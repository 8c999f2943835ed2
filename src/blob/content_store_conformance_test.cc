// The ContentStore contract, run against every backend.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "blob/content_store.h"
#include "blob/local/local_store.h"
#include "blob/memory/memory_store.h"
#include "util/hash.h"

namespace cairn::blob {
namespace {

struct MemoryBackend {
  static std::unique_ptr<ContentStore> Open(const std::string&) { return NewMemoryContentStore(); }
};

struct LocalBackend {
  static std::unique_ptr<ContentStore> Open(const std::string& dir) {
    return std::move(OpenLocalContentStore(dir).value());
  }
};

template <typename Backend>
class ContentStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("cairn-blob-" + RandomHex(8));
    store_ = Backend::Open(dir_.string());
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  std::filesystem::path dir_;
  std::unique_ptr<ContentStore> store_;
};

using Backends = ::testing::Types<MemoryBackend, LocalBackend>;
TYPED_TEST_SUITE(ContentStoreTest, Backends);

TYPED_TEST(ContentStoreTest, PutNamesBlobBySha256AndReadsItBack) {
  auto info = PutBytes(*this->store_, "hello");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->digest, "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
  EXPECT_EQ(info->size, 5);
  EXPECT_TRUE(*this->store_->Has(info->digest));
  EXPECT_EQ(*ReadAllBytes(*this->store_, info->digest), "hello");
}

TYPED_TEST(ContentStoreTest, ForEachVisitsEveryBlobOnceAndStopsOnAnError) {
  std::map<std::string, int64_t> put;
  for (const char* text : {"a", "bb", "ccc", "a"}) {
    auto info = PutBytes(*this->store_, text);
    ASSERT_TRUE(info.ok());
    put[info->digest] = info->size;
  }
  // A writer in flight is no blob yet.
  auto pending = this->store_->NewWriter();
  ASSERT_TRUE(pending.ok());
  ASSERT_TRUE((*pending)->Write("not committed").ok());
  std::map<std::string, int64_t> seen;
  ASSERT_TRUE(this->store_->ForEach([&](const BlobInfo& b) {
    EXPECT_EQ(seen.count(b.digest), 0u) << "twice: " << b.digest;
    seen[b.digest] = b.size;
    return Status::Ok();
  }).ok());
  EXPECT_EQ(seen, put);
  int visited = 0;
  Status stopped = this->store_->ForEach([&](const BlobInfo&) {
    ++visited;
    return Unavailable("enough");
  });
  EXPECT_EQ(stopped.code(), StatusCode::kUnavailable);
  EXPECT_EQ(visited, 1);
}

TYPED_TEST(ContentStoreTest, StreamedWritesEqualOneWrite) {
  auto w = this->store_->NewWriter();
  ASSERT_TRUE(w.ok());
  std::string all;
  for (int i = 0; i < 100; ++i) {
    // Small pieces and, every tenth, one of 300,000 bytes.
    std::string chunk(i % 10 == 9 ? 300000 : 1000 + i, static_cast<char>('a' + i % 26));
    all += chunk;
    ASSERT_TRUE((*w)->Write(chunk).ok());
  }
  auto info = (*w)->Commit();
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->digest, Sha256Hex(all));
  auto reader = this->store_->Open(info->digest);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->size(), static_cast<int64_t>(all.size()));
  char buf[10];
  ASSERT_EQ(*(*reader)->ReadAt(1000, buf, sizeof buf), sizeof buf);
  EXPECT_EQ(std::string(buf, sizeof buf), all.substr(1000, 10));
  EXPECT_EQ(*(*reader)->ReadAt(static_cast<int64_t>(all.size()), buf, sizeof buf), 0u);
}

// A blob past the size where a store may write differently (the local store writes the rest
// past the page cache), in pieces of odd sizes, with a tail shorter than a disk block: every
// byte reads back where it was written.
TYPED_TEST(ContentStoreTest, LargeBlobInOddPiecesReadsBackWhole) {
  std::string all(21 * 1000 * 1000 + 17, '\0');
  uint32_t x = 12345;
  for (char& c : all) {
    x = x * 1103515245 + 12345;
    c = static_cast<char>(x >> 24);
  }
  auto w = this->store_->NewWriter();
  ASSERT_TRUE(w.ok());
  const size_t sizes[] = {1, 4095, 1000003, 3, 65536, 2 * 1000 * 1000 + 1};
  for (size_t off = 0, i = 0; off < all.size(); ++i) {
    const size_t n = std::min(sizes[i % std::size(sizes)], all.size() - off);
    ASSERT_TRUE((*w)->Write(std::string_view(all).substr(off, n)).ok());
    off += n;
  }
  auto info = (*w)->Commit();
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->digest, Sha256Hex(all));
  EXPECT_EQ(info->size, static_cast<int64_t>(all.size()));
  auto read = ReadAllBytes(*this->store_, info->digest);
  ASSERT_TRUE(read.ok());
  EXPECT_TRUE(*read == all) << "the bytes read back differ";

  // Reads at offsets and of sizes that are not a disk block's multiple, and past the end.
  auto reader = this->store_->Open(info->digest);
  ASSERT_TRUE(reader.ok());
  std::string buf(3 << 20, '\0');
  const int64_t size = static_cast<int64_t>(all.size());
  for (int64_t offset :
       {int64_t{0}, int64_t{4097}, int64_t{8 << 20} - 3, size - 100000, size - 5}) {
    for (size_t n : {size_t{70000}, size_t{1} << 20, size_t{3} << 20}) {
      Result<size_t> got = (*reader)->ReadAt(offset, buf.data(), n);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      ASSERT_GT(*got, 0u);
      ASSERT_LE(*got, std::min<size_t>(n, static_cast<size_t>(size - offset)));
      EXPECT_TRUE(std::string_view(buf.data(), *got) ==
                  std::string_view(all).substr(static_cast<size_t>(offset), *got))
          << "at " << offset << ", " << n << " bytes";
    }
  }
  EXPECT_EQ(*(*reader)->ReadAt(size, buf.data(), 1 << 20), 0u);
}

TYPED_TEST(ContentStoreTest, SameBytesTwiceIsOneBlob) {
  auto a = PutBytes(*this->store_, "same");
  auto b = PutBytes(*this->store_, "same");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->digest, b->digest);
}

TYPED_TEST(ContentStoreTest, AbandonedWriterLeavesNothing) {
  {
    auto w = this->store_->NewWriter();
    ASSERT_TRUE((*w)->Write("never committed").ok());
  }
  EXPECT_FALSE(*this->store_->Has(Sha256Hex("never committed")));
}

TYPED_TEST(ContentStoreTest, MissingAndMalformedDigests) {
  EXPECT_EQ(this->store_->Open(std::string(64, 'a')).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(this->store_->Open("../../etc/passwd").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_FALSE(*this->store_->Has(std::string(64, 'a')));
}

TYPED_TEST(ContentStoreTest, DeleteRemovesAndIsIdempotent) {
  auto info = PutBytes(*this->store_, "gone soon");
  ASSERT_TRUE(this->store_->Delete(info->digest).ok());
  EXPECT_FALSE(*this->store_->Has(info->digest));
  EXPECT_TRUE(this->store_->Delete(info->digest).ok());
}

// Sizes either side of where a store may keep a blob differently (the local store keeps one of
// at most 64 KiB as a database row), written in pieces that cross that size.
TYPED_TEST(ContentStoreTest, BlobsEitherSideOfTheSmallSizeReadBack) {
  std::map<std::string, int64_t> put;
  for (size_t size :
       {size_t{0}, size_t{1}, size_t{65535}, size_t{65536}, size_t{65537}, size_t{200000}}) {
    std::string all(size, '\0');
    for (size_t i = 0; i < size; ++i) all[i] = static_cast<char>(i * 7 + size);
    auto w = this->store_->NewWriter();
    ASSERT_TRUE(w.ok());
    for (size_t off = 0; off < size; off += 30000) {
      ASSERT_TRUE((*w)->Write(std::string_view(all).substr(off, 30000)).ok());
    }
    auto info = (*w)->Commit();
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    EXPECT_EQ(info->digest, Sha256Hex(all));
    EXPECT_EQ(info->size, static_cast<int64_t>(size));
    EXPECT_TRUE(*this->store_->Has(info->digest));
    auto read = ReadAllBytes(*this->store_, info->digest);
    ASSERT_TRUE(read.ok()) << size;
    EXPECT_TRUE(*read == all) << size;
    put[info->digest] = info->size;
  }
  std::map<std::string, int64_t> seen;
  ASSERT_TRUE(this->store_
                  ->ForEach([&](const BlobInfo& b) {
                    seen[b.digest] = b.size;
                    return Status::Ok();
                  })
                  .ok());
  EXPECT_EQ(seen, put);
}

TYPED_TEST(ContentStoreTest, HasManyAnswersForEachInTurn) {
  auto small = PutBytes(*this->store_, "small one");
  auto large = PutBytes(*this->store_, std::string(100000, 'x'));
  ASSERT_TRUE(small.ok() && large.ok());
  const std::string absent(64, 'e');
  auto have = this->store_->HasMany({absent, large->digest, small->digest, absent});
  ASSERT_TRUE(have.ok()) << have.status().ToString();
  EXPECT_EQ(*have, (std::vector<bool>{false, true, true, false}));
  EXPECT_TRUE(this->store_->HasMany({})->empty());
  EXPECT_EQ(this->store_->HasMany({small->digest, "../x"}).status().code(),
            StatusCode::kInvalidArgument);
}

TYPED_TEST(ContentStoreTest, DeleteManyRemovesThoseThereAndPassesOverTheRest) {
  const std::string large(100000, 'x');
  auto a = PutBytes(*this->store_, "small one");
  auto b = PutBytes(*this->store_, large);
  auto kept = PutBytes(*this->store_, "kept");
  ASSERT_TRUE(a.ok() && b.ok() && kept.ok());
  ASSERT_TRUE(this->store_->DeleteMany({a->digest, std::string(64, 'e'), b->digest}).ok());
  EXPECT_FALSE(*this->store_->Has(a->digest));
  EXPECT_FALSE(*this->store_->Has(b->digest));
  EXPECT_EQ(*ReadAllBytes(*this->store_, kept->digest), "kept");
  EXPECT_TRUE(this->store_->DeleteMany({}).ok());
  EXPECT_EQ(this->store_->DeleteMany({"../x"}).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace cairn::blob
