// A ContentStore in a local directory. A blob of at most 64 KiB is a row of <root>/small.db
// (small_blobs.h); a larger one lives at <root>/<digest[0:2]>/<digest[2:]>, written to
// <root>/tmp, fsynced and renamed into place, so a blob path either holds the complete bytes or
// does not exist. Format: docs/formats/content-store.md.
#pragma once

#include <memory>
#include <string>

#include "blob/content_store.h"

namespace cairn::blob {

Result<std::unique_ptr<ContentStore>> OpenLocalContentStore(const std::string& root);

}  // namespace cairn::blob
