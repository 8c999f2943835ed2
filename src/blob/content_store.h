// ContentStore: immutable blobs named by the lowercase hex SHA-256 of their bytes.
//
// Artifacts, dataset versions, step outputs and wheels are stored once however often they are
// referenced. Writers stream: bytes go in through a BlobWriter and the name is known only at
// Commit, so a blob of any size passes through bounded memory. Backends: memory, local
// directory (S3 later); all pass content_store_conformance_test.cc.
// Thread safety: every method may be called concurrently. A BlobWriter or BlobReader is used by
// one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace cairn::blob {

struct BlobInfo {
  std::string digest;  // lowercase hex SHA-256
  int64_t size = 0;
  int64_t modified_ms = 0;  // from ForEach: when it was last written (0 where not kept)
};

class BlobWriter {
 public:
  virtual ~BlobWriter() = default;  // discards the bytes unless Commit succeeded
  virtual Status Write(std::string_view bytes) = 0;
  // Makes the blob durable and visible under its digest. Writing the same bytes twice is not
  // an error: the second commit finds the blob present.
  virtual Result<BlobInfo> Commit() = 0;
};

class BlobReader {
 public:
  virtual ~BlobReader() = default;
  virtual int64_t size() const = 0;
  // Reads up to n bytes at offset; returns the count read, 0 at the end.
  virtual Result<size_t> ReadAt(int64_t offset, char* buf, size_t n) = 0;
};

class ContentStore {
 public:
  virtual ~ContentStore() = default;
  virtual Result<std::unique_ptr<BlobWriter>> NewWriter() = 0;
  // kNotFound when no blob has that digest; kInvalidArgument when digest is not a SHA-256 hex.
  virtual Result<std::unique_ptr<BlobReader>> Open(std::string_view digest) = 0;
  virtual Result<bool> Has(std::string_view digest) = 0;
  // For each of `digests`, whether the store holds it. A backend may look a batch up at once
  // (one transaction); this one asks Has for each.
  virtual Result<std::vector<bool>> HasMany(const std::vector<std::string>& digests);
  // Removes the blob; OK when it was not there.
  virtual Status Delete(std::string_view digest) = 0;
  // Removes each of the blobs, passing over those not there. A backend may remove a batch at
  // once (one transaction, several threads); this one removes them one at a time.
  virtual Status DeleteMany(const std::vector<std::string>& digests);
  // Calls `visit` with every blob (its digest and size), in no set order, until it returns an
  // error, which this returns. Blobs added or removed meanwhile may be seen or not.
  virtual Status ForEach(const std::function<Status(const BlobInfo&)>& visit) = 0;
};

// A reader over bytes held in memory.
std::unique_ptr<BlobReader> NewBytesReader(std::shared_ptr<const std::string> bytes);

Result<BlobInfo> PutBytes(ContentStore& store, std::string_view bytes);
Result<std::string> ReadAllBytes(ContentStore& store, std::string_view digest);
// The same from a blob already open (`digest` names it in errors).
Result<std::string> ReadAllBytes(BlobReader& reader, std::string_view digest);

// "memory:" or "file:///abs/dir" or a plain directory path.
Result<std::unique_ptr<ContentStore>> OpenContentStore(std::string_view uri);

}  // namespace cairn::blob
