#include "blob/memory/memory_store.h"

#include <map>
#include <mutex>

#include "util/hash.h"

namespace cairn::blob {
namespace {

using BlobMap = std::map<std::string, std::shared_ptr<const std::string>, std::less<>>;

struct Shared {
  std::mutex mu;
  BlobMap blobs;
};

class MemoryWriter : public BlobWriter {
 public:
  explicit MemoryWriter(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}
  Status Write(std::string_view bytes) override {
    buf_.append(bytes);
    hasher_.Update(bytes);
    return Status::Ok();
  }
  Result<BlobInfo> Commit() override {
    BlobInfo info{hasher_.HexDigest(), static_cast<int64_t>(buf_.size())};
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->blobs.try_emplace(info.digest, std::make_shared<const std::string>(std::move(buf_)));
    return info;
  }

 private:
  std::shared_ptr<Shared> shared_;
  std::string buf_;
  Sha256Hasher hasher_;
};

class MemoryContentStore : public ContentStore {
 public:
  Result<std::unique_ptr<BlobWriter>> NewWriter() override {
    return std::unique_ptr<BlobWriter>(std::make_unique<MemoryWriter>(shared_));
  }
  Result<std::unique_ptr<BlobReader>> Open(std::string_view digest) override {
    if (!IsSha256Hex(digest)) return InvalidArgument("not a SHA-256 digest: " + std::string(digest));
    std::lock_guard<std::mutex> lock(shared_->mu);
    auto it = shared_->blobs.find(digest);
    if (it == shared_->blobs.end()) return NotFound("no blob " + std::string(digest));
    return NewBytesReader(it->second);
  }
  Result<bool> Has(std::string_view digest) override {
    if (!IsSha256Hex(digest))
      return InvalidArgument("not a SHA-256 digest: " + std::string(digest));
    std::lock_guard<std::mutex> lock(shared_->mu);
    return shared_->blobs.count(digest) != 0;
  }
  Status Delete(std::string_view digest) override {
    if (!IsSha256Hex(digest))
      return InvalidArgument("not a SHA-256 digest: " + std::string(digest));
    std::lock_guard<std::mutex> lock(shared_->mu);
    auto it = shared_->blobs.find(digest);
    if (it != shared_->blobs.end()) shared_->blobs.erase(it);
    return Status::Ok();
  }
  Status ForEach(const std::function<Status(const BlobInfo&)>& visit) override {
    std::vector<BlobInfo> all;
    {
      std::lock_guard<std::mutex> lock(shared_->mu);
      for (const auto& [digest, data] : shared_->blobs) {
        all.push_back({digest, static_cast<int64_t>(data->size())});
      }
    }
    for (const BlobInfo& b : all) CAIRN_RETURN_IF_ERROR(visit(b));
    return Status::Ok();
  }

 private:
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
};

}  // namespace

std::unique_ptr<ContentStore> NewMemoryContentStore() {
  return std::make_unique<MemoryContentStore>();
}

}  // namespace cairn::blob
