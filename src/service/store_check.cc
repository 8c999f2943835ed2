#include "service/store_check.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>

#include "service/dataset_files.h"
#include "util/hash.h"

namespace cairn::service {
namespace {

constexpr size_t kReadChunk = 1 << 20;

using Key = std::array<unsigned char, 32>;

Key KeyOf(std::string_view hex) {
  Key k{};
  auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (size_t i = 0; i < k.size() && 2 * i + 1 < hex.size(); ++i) {
    k[i] = static_cast<unsigned char>(nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]));
  }
  return k;
}

// Calls `report` at most every 200 ms, and always when `last`.
class Pacer {
 public:
  explicit Pacer(const std::function<void(const StoreCheckProgress&)>& report) : report_(report) {}
  void Tick(const StoreCheckProgress& p, bool last = false) {
    if (!report_) return;
    const auto now = std::chrono::steady_clock::now();
    if (!last && now - shown_ < std::chrono::milliseconds(200)) return;
    shown_ = now;
    report_(p);
  }

 private:
  const std::function<void(const StoreCheckProgress&)>& report_;
  std::chrono::steady_clock::time_point shown_{};
};

// The SHA-256 of the blob's bytes as read back; "" and `why` when it cannot be read.
std::string HashOf(blob::ContentStore& blobs, const std::string& digest, int64_t* bytes,
                   std::string* why) {
  Result<std::unique_ptr<blob::BlobReader>> reader = blobs.Open(digest);
  if (!reader.ok()) {
    *why = reader.status().message();
    return "";
  }
  Sha256Hasher hasher;
  std::string buf(kReadChunk, '\0');
  int64_t at = 0;
  for (;;) {
    Result<size_t> n = (*reader)->ReadAt(at, buf.data(), buf.size());
    if (!n.ok()) {
      *why = n.status().message();
      return "";
    }
    if (*n == 0) break;
    hasher.Update(std::string_view(buf.data(), *n));
    at += static_cast<int64_t>(*n);
  }
  *bytes += at;
  return hasher.HexDigest();
}

}  // namespace

Result<StoreCheck> CheckStores(store::MetadataStore& metadata, blob::ContentStore& blobs,
                               const StoreCheckOptions& options) {
  StoreCheck out;
  Pacer pacer(options.progress);

  // Every blob, hashed; kept as (name, size) for the references.
  std::vector<std::pair<Key, int64_t>> known;
  StoreCheckProgress p{"blobs", 0, 0, 0};
  CAIRN_RETURN_IF_ERROR(blobs.ForEach([&](const blob::BlobInfo& b) {
    std::string why;
    const std::string hash = HashOf(blobs, b.digest, &out.bytes, &why);
    if (hash.empty()) {
      // Collected while the check ran: gone, which the references will show if it mattered.
      Result<bool> still_there = blobs.Has(b.digest);
      if (!still_there.ok() || *still_there) {
        out.corrupt.push_back({b.digest, "cannot be read: " + why});
      }
    } else if (hash != b.digest) {
      out.corrupt.push_back({b.digest, "its bytes hash to " + hash});
    } else {
      known.push_back({KeyOf(b.digest), b.size});
    }
    ++out.blobs;
    p.done = out.blobs;
    p.bytes = out.bytes;
    pacer.Tick(p);
    return Status::Ok();
  }));
  pacer.Tick(p, true);
  std::sort(known.begin(), known.end());
  std::vector<bool> referenced(known.size(), false);

  auto is_corrupt = [&](const std::string& digest) {
    return std::any_of(out.corrupt.begin(), out.corrupt.end(),
                       [&](const BlobProblem& c) { return c.digest == digest; });
  };
  // Every file of the artifact index, datasets' versions' files read from their manifests.
  p = {"references", 0, 0, 0};
  auto visit = [&](store::ArtifactFile& f) -> Status {
    p.done = ++out.references;
    pacer.Tick(p);
    if (!IsSha256Hex(f.digest)) {
      out.missing.push_back({f, "the index names no blob (" + f.digest + ")"});
      return Status::Ok();
    }
    const Key key = KeyOf(f.digest);
    auto it = std::lower_bound(known.begin(), known.end(), std::make_pair(key, INT64_MIN));
    if (it == known.end() || it->first != key) {
      out.missing.push_back({f, is_corrupt(f.digest) ? "its blob is corrupt" : "no such blob"});
      return Status::Ok();
    }
    referenced[static_cast<size_t>(it - known.begin())] = true;
    if (it->second != f.size) {
      out.missing.push_back({f, "the blob holds " + std::to_string(it->second) +
                                    " bytes, the index says " + std::to_string(f.size)});
    }
    return Status::Ok();
  };
  // A manifest that is missing or corrupt is reported as its row; one that holds no manifest
  // is reported here.
  auto unreadable = [&](const store::ArtifactFile& manifest, const Status& why) -> Status {
    if (why.code() == StatusCode::kInvalidArgument && !is_corrupt(manifest.digest)) {
      out.missing.push_back({manifest, "its files cannot be listed: " + why.message()});
    }
    return Status::Ok();
  };
  CAIRN_RETURN_IF_ERROR(ForEachIndexedFile(metadata, blobs, visit, unreadable));
  // The blobs datasets note are kept by a collection as those the index names are.
  CAIRN_RETURN_IF_ERROR(metadata.datasets().ForEachDataBlob([&](const std::string& digest) {
    const Key key = KeyOf(digest);
    auto it = std::lower_bound(known.begin(), known.end(), std::make_pair(key, INT64_MIN));
    if (it != known.end() && it->first == key) {
      referenced[static_cast<size_t>(it - known.begin())] = true;
    }
    return Status::Ok();
  }));
  pacer.Tick(p, true);
  for (size_t i = 0; i < known.size(); ++i) {
    if (referenced[i]) continue;
    ++out.unreferenced;
    out.unreferenced_bytes += known[i].second;
  }
  return out;
}

}  // namespace cairn::service
