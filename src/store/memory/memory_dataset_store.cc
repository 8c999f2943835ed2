#include "store/memory/memory_dataset_store.h"

#include <map>
#include <mutex>
#include <set>
#include <utility>

#include "store/store_util.h"

namespace cairn::store {
namespace {

using core::DataVersion;

class MemoryDatasetStore : public DatasetStore {
 public:
  Result<DataVersion> AddDataVersion(DataVersion v, bool expect_new) override {
    std::lock_guard lock(mu_);
    auto it = sets_.find(v.name);
    if (it != sets_.end() && expect_new) return DatasetExists(v.name);
    if (it == sets_.end()) {
      it = sets_.emplace(v.name, Set{}).first;
      it->second.created_time = v.created_time;
    }
    Set& set = it->second;
    v.version = ++set.last_version;
    set.versions[v.version] = v;
    return v;
  }

  Result<DataVersion> GetDataVersion(std::string_view name, int64_t version) override {
    std::lock_guard lock(mu_);
    auto it = sets_.find(name);
    if (it == sets_.end() || it->second.versions.empty()) return DatasetNotFound(name);
    const auto& versions = it->second.versions;
    if (version == 0) return versions.rbegin()->second;
    auto v = versions.find(version);
    if (v == versions.end()) return DataVersionNotFound(name, version);
    return v->second;
  }

  Result<std::vector<DataVersion>> ListDataVersions(std::string_view name) override {
    std::lock_guard lock(mu_);
    auto it = sets_.find(name);
    if (it == sets_.end() || it->second.versions.empty()) return DatasetNotFound(name);
    std::vector<DataVersion> out;
    for (auto v = it->second.versions.rbegin(); v != it->second.versions.rend(); ++v) {
      out.push_back(v->second);
    }
    return out;
  }

  Result<std::vector<core::DatasetEntry>> ListDatasets() override {
    std::lock_guard lock(mu_);
    std::vector<core::DatasetEntry> out;
    for (const auto& [name, set] : sets_) {
      if (set.versions.empty()) continue;
      out.push_back(core::DatasetEntry{name, set.created_time,
                                       static_cast<int64_t>(set.versions.size()),
                                       set.versions.rbegin()->second});
    }
    return out;
  }

  Result<std::vector<DataVersion>> DataVersionsOfRun(std::string_view run_id) override {
    std::lock_guard lock(mu_);
    std::vector<DataVersion> out;
    for (const auto& [name, set] : sets_) {
      for (const auto& [n, v] : set.versions) {
        if (!run_id.empty() && v.run_id == run_id) out.push_back(v);
      }
    }
    return out;
  }

  Result<std::vector<std::string>> DataVersionDigests() override {
    std::lock_guard lock(mu_);
    std::set<std::string> digests;
    for (const auto& [name, set] : sets_) {
      for (const auto& [n, v] : set.versions) digests.insert(v.digest);
    }
    return std::vector<std::string>(digests.begin(), digests.end());
  }

  Status RecordDataUploads(std::string_view username, const std::vector<std::string>& digests,
                           int64_t now) override {
    std::lock_guard lock(mu_);
    for (const std::string& d : digests) uploads_[{std::string(username), d}] = now;
    return Status::Ok();
  }

  Result<std::vector<bool>> DataUploaded(std::string_view username,
                                         const std::vector<std::string>& digests) override {
    std::lock_guard lock(mu_);
    std::vector<bool> out;
    out.reserve(digests.size());
    for (const std::string& d : digests) {
      out.push_back(uploads_.count({std::string(username), d}) != 0);
    }
    return out;
  }

  Status NoteDataBlobs(const std::vector<std::string>& digests) override {
    std::lock_guard lock(mu_);
    blobs_.insert(digests.begin(), digests.end());
    return Status::Ok();
  }

  Result<bool> DataBlobNoted(std::string_view digest) override {
    std::lock_guard lock(mu_);
    return blobs_.count(digest) != 0;
  }

  Result<std::vector<std::string>> ListDataBlobs(std::string_view after, int64_t limit) override {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    for (auto it = blobs_.upper_bound(after);
         it != blobs_.end() && static_cast<int64_t>(out.size()) < limit; ++it) {
      out.push_back(*it);
    }
    return out;
  }

  Result<bool> AnyUploaded(std::string_view digest) override {
    std::lock_guard lock(mu_);
    for (const auto& [key, time] : uploads_) {
      if (key.second == digest) return true;
    }
    return false;
  }

  Result<int64_t> PruneDataUploads(int64_t before) override {
    std::lock_guard lock(mu_);
    int64_t pruned = 0;
    for (auto it = uploads_.begin(); it != uploads_.end();) {
      if (it->second < before) {
        it = uploads_.erase(it);
        ++pruned;
      } else {
        ++it;
      }
    }
    return pruned;
  }

 private:
  struct Set {
    int64_t created_time = 0;
    int64_t last_version = 0;
    std::map<int64_t, DataVersion> versions;
  };
  std::mutex mu_;
  std::map<std::string, Set, std::less<>> sets_;
  std::map<std::pair<std::string, std::string>, int64_t> uploads_;  // (user, digest) -> time
  std::set<std::string, std::less<>> blobs_;                        // noted dataset blobs
};

}  // namespace

std::unique_ptr<DatasetStore> NewMemoryDatasetStore() {
  return std::make_unique<MemoryDatasetStore>();
}

}  // namespace cairn::store
