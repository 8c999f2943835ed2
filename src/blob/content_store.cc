#include "blob/content_store.h"

#include <algorithm>
#include <cstring>

#include "blob/local/local_store.h"
#include "blob/memory/memory_store.h"

namespace cairn::blob {
namespace {

class BytesReader : public BlobReader {
 public:
  explicit BytesReader(std::shared_ptr<const std::string> bytes) : bytes_(std::move(bytes)) {}
  int64_t size() const override { return static_cast<int64_t>(bytes_->size()); }
  Result<size_t> ReadAt(int64_t offset, char* buf, size_t n) override {
    if (offset < 0 || static_cast<size_t>(offset) >= bytes_->size()) return size_t{0};
    const size_t count = std::min(n, bytes_->size() - static_cast<size_t>(offset));
    std::memcpy(buf, bytes_->data() + offset, count);
    return count;
  }

 private:
  std::shared_ptr<const std::string> bytes_;
};

}  // namespace

Result<std::vector<bool>> ContentStore::HasMany(const std::vector<std::string>& digests) {
  std::vector<bool> out;
  out.reserve(digests.size());
  for (const std::string& digest : digests) {
    CAIRN_ASSIGN_OR_RETURN(bool have, Has(digest));
    out.push_back(have);
  }
  return out;
}

Status ContentStore::DeleteMany(const std::vector<std::string>& digests) {
  for (const std::string& digest : digests) CAIRN_RETURN_IF_ERROR(Delete(digest));
  return Status::Ok();
}

std::unique_ptr<BlobReader> NewBytesReader(std::shared_ptr<const std::string> bytes) {
  return std::make_unique<BytesReader>(std::move(bytes));
}

Result<BlobInfo> PutBytes(ContentStore& store, std::string_view bytes) {
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<BlobWriter> w, store.NewWriter());
  CAIRN_RETURN_IF_ERROR(w->Write(bytes));
  return w->Commit();
}

Result<std::string> ReadAllBytes(ContentStore& store, std::string_view digest) {
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<BlobReader> r, store.Open(digest));
  return ReadAllBytes(*r, digest);
}

Result<std::string> ReadAllBytes(BlobReader& reader, std::string_view digest) {
  std::string out(static_cast<size_t>(reader.size()), '\0');
  size_t done = 0;
  while (done < out.size()) {
    CAIRN_ASSIGN_OR_RETURN(
        size_t n, reader.ReadAt(static_cast<int64_t>(done), out.data() + done, out.size() - done));
    if (n == 0) return Internal("blob " + std::string(digest) + " is shorter than its size");
    done += n;
  }
  return out;
}

Result<std::unique_ptr<ContentStore>> OpenContentStore(std::string_view uri) {
  if (uri == "memory:") return NewMemoryContentStore();
  constexpr std::string_view kFile = "file://";
  std::string_view path = uri.starts_with(kFile) ? uri.substr(kFile.size()) : uri;
  if (path.empty() || (uri.find("://") != std::string_view::npos && !uri.starts_with(kFile))) {
    return InvalidArgument("unsupported artifact store URI '" + std::string(uri) +
                           "': expected a directory, file:///DIR or memory:");
  }
  return OpenLocalContentStore(std::string(path));
}

}  // namespace cairn::blob
