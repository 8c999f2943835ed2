// An in-memory IdentityStore: the reference behaviour for the conformance suite, held by the
// memory MetadataStore.
#pragma once

#include <memory>

#include "store/identity_store.h"

namespace cairn::store {

std::unique_ptr<IdentityStore> NewMemoryIdentityStore();

}  // namespace cairn::store
