#include "pipeline/stat_cache.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "util/file.h"
#include "util/hash.h"

namespace cairn::pipeline {

// File layout (host byte order; a file written on a host of the other order fails the marker
// check and is ignored): "CAIRNSTC", u32 version 1, u32 0x01020304, u64 count, then count
// records of {u64 dev, u64 ino, i64 size, i64 mtime ns, i64 ctime ns, 32-byte SHA-256}, then the
// SHA-256 of all the bytes before it, so that a torn or damaged file is recognised and ignored.

namespace {

constexpr char kMagic[8] = {'C', 'A', 'I', 'R', 'N', 'S', 'T', 'C'};
constexpr uint32_t kCacheVersion = 1;
constexpr uint32_t kByteOrderMark = 0x01020304;
constexpr size_t kHeaderBytes = 8 + 4 + 4 + 8;
constexpr size_t kRecordBytes = 8 * 5 + 32;
constexpr size_t kDigestBytes = 32;

template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof v);
}

template <typename T>
T Get(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

bool HexToBytes(std::string_view hex, unsigned char* out) {
  if (!IsSha256Hex(hex)) return false;
  auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (size_t i = 0; i < 32; ++i) {
    out[i] = static_cast<unsigned char>(nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]));
  }
  return true;
}

std::string RawSha256(std::string_view bytes) {
  std::string hex = Sha256Hex(bytes);
  std::string raw(32, '\0');
  HexToBytes(hex, reinterpret_cast<unsigned char*>(raw.data()));
  return raw;
}

}  // namespace

size_t StatCache::KeyHash::operator()(const Key& k) const {
  uint64_t h = (k.ino ^ (k.dev << 40 | k.dev >> 24)) * 0x9e3779b97f4a7c15ULL;
  return static_cast<size_t>(h ^ h >> 29);
}

Result<std::unique_ptr<StatCache>> StatCache::Open(std::string path, Clock* clock) {
  std::unique_ptr<StatCache> cache(new StatCache(std::move(path), clock ? clock : SystemClock()));
  Result<std::string> bytes = ReadFile(cache->path_);
  if (!bytes.ok()) {
    if (bytes.status().code() == StatusCode::kNotFound) return cache;
    return bytes.status().WithContext("opening stat cache");
  }
  cache->Load(*bytes);
  return cache;
}

void StatCache::Load(std::string_view bytes) {
  if (bytes.size() < kHeaderBytes + kDigestBytes) return;
  const char* p = bytes.data();
  if (std::memcmp(p, kMagic, 8) != 0 || Get<uint32_t>(p + 8) != kCacheVersion ||
      Get<uint32_t>(p + 12) != kByteOrderMark) {
    return;
  }
  uint64_t count = Get<uint64_t>(p + 16);
  if (count > (bytes.size() - kHeaderBytes - kDigestBytes) / kRecordBytes ||
      bytes.size() != kHeaderBytes + count * kRecordBytes + kDigestBytes) {
    return;
  }
  std::string_view body = bytes.substr(0, bytes.size() - kDigestBytes);
  if (RawSha256(body) != bytes.substr(body.size())) return;
  for (Shard& shard : shards_) shard.entries.reserve(count / kShards * 5 / 4);
  for (uint64_t i = 0; i < count; ++i) {
    const char* r = p + kHeaderBytes + i * kRecordBytes;
    Entry e;
    e.size = Get<int64_t>(r + 16);
    e.mtime_nanos = Get<int64_t>(r + 24);
    e.ctime_nanos = Get<int64_t>(r + 32);
    std::memcpy(e.sha256, r + 40, 32);
    e.used = false;
    Key key{Get<uint64_t>(r), Get<uint64_t>(r + 8)};
    ShardOf(key).entries[key] = e;
  }
}

size_t StatCache::size() const {
  size_t n = 0;
  for (Shard& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mu);
    n += shard.entries.size();
  }
  return n;
}

bool StatCache::IsRacy(const struct stat& st, int64_t stat_time_nanos) {
  bool coarse = st.st_mtim.tv_nsec == 0 && st.st_ctim.tv_nsec == 0;
  int64_t window = coarse ? kCoarseRacyWindowNanos : kFineRacyWindowNanos;
  return std::max(TimespecNanos(st.st_mtim), TimespecNanos(st.st_ctim)) > stat_time_nanos - window;
}

std::optional<std::string> StatCache::Lookup(const struct stat& st) {
  // Entries are recorded only when not racy, so a matching one is sound; the check here guards
  // against a clock that went backwards since.
  if (IsRacy(st, NowNanos(clock_))) return std::nullopt;
  Key key{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
  Shard& shard = ShardOf(key);
  std::lock_guard<std::mutex> lock(shard.mu);
  auto it = shard.entries.find(key);
  if (it == shard.entries.end()) return std::nullopt;
  Entry& e = it->second;
  if (e.size != st.st_size || e.mtime_nanos != TimespecNanos(st.st_mtim) ||
      e.ctime_nanos != TimespecNanos(st.st_ctim)) {
    return std::nullopt;
  }
  e.used = true;
  return HexEncode(std::string_view(reinterpret_cast<const char*>(e.sha256), 32));
}

void StatCache::Update(const struct stat& st, std::string sha256, int64_t stat_time_nanos) {
  if (IsRacy(st, stat_time_nanos)) return;
  Entry e{st.st_size, TimespecNanos(st.st_mtim), TimespecNanos(st.st_ctim), {}, true};
  if (!HexToBytes(sha256, e.sha256)) return;
  Key key{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
  Shard& shard = ShardOf(key);
  std::lock_guard<std::mutex> lock(shard.mu);
  shard.entries[key] = e;
  dirty_ = true;
}

Status StatCache::Save() {
  std::lock_guard<std::mutex> save_lock(save_mu_);
  if (!dirty_.exchange(false)) return Status::Ok();
  std::string out;
  {
    std::unique_lock<std::mutex> locks[kShards];
    size_t total = 0;
    for (size_t i = 0; i < kShards; ++i) {
      locks[i] = std::unique_lock<std::mutex>(shards_[i].mu);
      total += shards_[i].entries.size();
    }
    if (total > max_entries_) {
      total = 0;
      for (Shard& shard : shards_) {
        std::erase_if(shard.entries, [](const auto& kv) { return !kv.second.used; });
        total += shard.entries.size();
      }
    }
    out.reserve(kHeaderBytes + total * kRecordBytes + kDigestBytes);
    out.append(kMagic, 8);
    Put<uint32_t>(&out, kCacheVersion);
    Put<uint32_t>(&out, kByteOrderMark);
    Put<uint64_t>(&out, total);
    // In inode order: Load() then allocates the entries in that order, and a walk, which meets
    // a directory's files roughly in inode order, finds them near each other in memory.
    std::vector<const std::pair<const Key, Entry>*> sorted;
    sorted.reserve(total);
    for (const Shard& shard : shards_) {
      for (const auto& kv : shard.entries) sorted.push_back(&kv);
    }
    std::sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) {
      return std::tie(a->first.dev, a->first.ino) < std::tie(b->first.dev, b->first.ino);
    });
    for (const auto* kv : sorted) {
      const auto& [key, e] = *kv;
      Put<uint64_t>(&out, key.dev);
      Put<uint64_t>(&out, key.ino);
      Put<int64_t>(&out, e.size);
      Put<int64_t>(&out, e.mtime_nanos);
      Put<int64_t>(&out, e.ctime_nanos);
      out.append(reinterpret_cast<const char*>(e.sha256), 32);
    }
  }
  out += RawSha256(out);
  std::filesystem::path parent = std::filesystem::path(path_).parent_path();
  Status s = parent.empty() ? Status::Ok() : MakeDirs(parent);
  if (s.ok()) s = WriteFileAtomic(path_, out).WithContext("saving stat cache");
  if (!s.ok()) dirty_ = true;  // still unsaved
  return s;
}

}  // namespace cairn::pipeline
