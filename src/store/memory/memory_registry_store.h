// The RegistryStore of the memory store: models in a map, each with its versions and the
// history of its aliases.
#pragma once

#include <memory>

#include "store/registry_store.h"

namespace cairn::store {

std::unique_ptr<RegistryStore> NewMemoryRegistryStore();

}  // namespace cairn::store
