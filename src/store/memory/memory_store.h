// An in-memory MetadataStore: the reference behaviour for the conformance suite, and a fast
// store for tests. Nothing survives the process.
#pragma once

#include <memory>

#include "store/metadata_store.h"

namespace cairn::store {

std::unique_ptr<MetadataStore> NewMemoryMetadataStore(const StoreOptions& options);

}  // namespace cairn::store
