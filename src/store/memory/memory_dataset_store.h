// The DatasetStore of the memory store: datasets in a map, each with its versions.
#pragma once

#include <memory>

#include "store/dataset_store.h"

namespace cairn::store {

std::unique_ptr<DatasetStore> NewMemoryDatasetStore();

}  // namespace cairn::store
