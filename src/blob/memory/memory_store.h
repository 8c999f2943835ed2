// An in-memory ContentStore for tests.
#pragma once

#include <memory>

#include "blob/content_store.h"

namespace cairn::blob {

std::unique_ptr<ContentStore> NewMemoryContentStore();

}  // namespace cairn::blob
