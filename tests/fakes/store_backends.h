// The MetadataStore backends the typed conformance suites run against (MetadataStore and
// IdentityStore): a new backend adds a struct here and joins each suite's type list.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "store/memory/memory_store.h"
#include "store/metadata_store.h"
#include "store/sqlite/sqlite_store.h"

namespace cairn::fakes {

struct MemoryBackend {
  static std::unique_ptr<store::MetadataStore> Open(const std::string&) {
    return store::NewMemoryMetadataStore(store::StoreOptions{});
  }
  static constexpr bool kPersistent = false;
};

// A SQLite store in `dir`, opened again on the same files when `dir` is the same.
struct SqliteBackend {
  static std::unique_ptr<store::MetadataStore> Open(const std::string& dir) {
    auto store = store::OpenSqliteMetadataStore(dir + "/cairn.db", store::StoreOptions{});
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return std::move(store).value();
  }
  static constexpr bool kPersistent = true;
};

}  // namespace cairn::fakes
