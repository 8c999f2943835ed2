// The server's dataset API (docs/api/cairn.md, "Datasets") as C++ calls, for `cairn data`,
// `cairn run --data` and pipelines' data inputs. Blobs move on connections of their own, so
// that several go at once: each transfer takes the TrackingClient of the thread doing it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "client/tracking_client.h"
#include "core/dataset.h"
#include "core/tree_manifest.h"
#include "util/status.h"

namespace cairn::data {

// How many digests one datasets/missing request carries.
inline constexpr size_t kDigestsPerRequest = 10'000;

struct CreatedVersion {
  core::DataVersion version;
  bool unchanged = false;  // the latest version had this content: nothing was added
};

// What two versions' manifests differ by, as the server lists it.
struct VersionDiff {
  core::DataVersion from;
  core::DataVersion to;
  core::ManifestDiff files;
};

class DatasetClient {
 public:
  // `client` answers the JSON calls; `connect` makes another connection to the same server for
  // each transfer thread. Both must outlive this.
  using Connector = std::function<Result<std::unique_ptr<client::TrackingClient>>()>;
  DatasetClient(client::TrackingClient* client, Connector connect)
      : client_(client), connect_(std::move(connect)) {}
  // A client of the server `options` names, owning its first connection and opening the
  // others alike.
  static Result<std::unique_ptr<DatasetClient>> Open(const client::ClientOptions& options);

  client::TrackingClient& client() { return *client_; }
  Result<std::unique_ptr<client::TrackingClient>> Connect() const { return connect_(); }

  Result<std::vector<core::DatasetEntry>> List();
  // Version `version` of dataset `name`, its latest for 0; kNotFound names what is missing.
  Result<core::DataVersion> Get(const std::string& name, int64_t version);
  Result<std::vector<core::DataVersion>> Versions(const std::string& name);
  // The version's manifest, checked against its digest, parsed.
  Result<std::vector<core::FileEntry>> Files(const core::DataVersion& v);
  Result<VersionDiff> Diff(const std::string& name, int64_t from, int64_t to);

  // Of `digests`, those the server wants sent before they are named in a version of `name`.
  Result<std::vector<std::string>> Missing(const std::string& name,
                                           const std::vector<std::string>& digests);
  // Sends the file at `local_path`, whose SHA-256 is `digest`, on `via`.
  Status SendBlob(client::TrackingClient& via, const std::string& digest,
                  const std::string& local_path);
  // Sends the file at `local_path` before its digest is known; returns the SHA-256 the server
  // computed of what arrived. Setting `cancel` stops it midway (kFailedPrecondition).
  Result<std::string> SendUnnamedBlob(client::TrackingClient& via, const std::string& local_path,
                                      const std::atomic<bool>* cancel);
  // Names the new version of `name` whose manifest (sent before) has SHA-256 `digest`;
  // `metadata` is a JSON object's text.
  // `run_id`, when not empty, names the run that made it.
  Result<CreatedVersion> CreateVersion(const std::string& name, const std::string& digest,
                                       const std::string& message, const std::string& metadata,
                                       const std::string& run_id = "");
  // Writes the version's file `path` into `local_path`, on `via`, and sets *sha256 to the hex
  // SHA-256 of the bytes written.
  Status FetchFile(client::TrackingClient& via, const core::DataVersion& v, const std::string& path,
                   const std::string& local_path, std::string* sha256);

 private:
  std::unique_ptr<client::TrackingClient> owned_;  // set by Open
  client::TrackingClient* client_;
  Connector connect_;
};

// Decodes a version as the API writes it; exposed for tests.
Result<core::DataVersion> ParseDataVersion(std::string_view json_text);

}  // namespace cairn::data
