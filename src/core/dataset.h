// Versioned datasets: a name and its immutable versions. A version is a manifest of files
// (path, size, mode, SHA-256; docs/formats/manifest.md) kept in the content store beside the
// files' bytes, so a file that several versions or datasets hold is stored once, and the
// manifest's own SHA-256 names the version's content: two versions with the same files have the
// same digest, and it is the digest the pipeline's tree hasher gives the same directory.
// Versions are numbered from 1 within their dataset and never change once made.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/model.h"
#include "util/status.h"

namespace cairn::core {

struct DataVersion {
  std::string name;
  int64_t version = 0;
  std::string digest;  // SHA-256 of the manifest
  int64_t parent = 0;  // the version this one was made from; 0: none
  std::string message;
  std::string creator;          // username; "" on a server without accounts
  int64_t created_time = 0;     // ms
  std::string metadata = "{}";  // a JSON object of the creator's choosing (schema, rows, URL)
  int64_t files = 0;
  int64_t bytes = 0;
  std::string run_id;  // the run that made it ("" when none was named)
  bool operator==(const DataVersion&) const = default;
};

// A dataset as listings show it: its name, when it began and its newest version.
struct DatasetEntry {
  std::string name;
  int64_t created_time = 0;
  int64_t versions = 0;
  DataVersion latest;
  bool operator==(const DatasetEntry&) const = default;
};

// 1 to 128 letters, digits and '._-', starting with a letter or a digit: a name that is also a
// safe path segment and needs no quoting on a command line. InvalidArgument otherwise.
Status ValidateDatasetName(std::string_view name);

// A reference to a version as commands take it: NAME, NAME@VERSION or NAME@latest, optionally
// followed by ":DIR" where `allow_dir` (`cairn run --data mnist@3:data/mnist`).
struct DataRef {
  std::string name;
  int64_t version = 0;  // 0: the latest
  std::string dir;      // "" when none was given
};
Result<DataRef> ParseDataRef(std::string_view text, bool allow_dir);
// "mnist@3", or "mnist" for the latest.
std::string DataRefText(std::string_view name, int64_t version);

// The MLflow dataset input that records a run's use of a version (runs/log-inputs): its name,
// a digest of MLflow's length (the first 32 hex digits of the version's), source type "cairn"
// with a source naming the version and its full digest, and a profile of its size. `context`
// becomes the input's mlflow.data.context tag when not empty.
inline constexpr std::string_view kDataSourceType = "cairn";
DatasetInput DataVersionInput(const DataVersion& v, std::string_view context);
// The digest DataVersionInput records for a version's digest.
std::string DataInputDigest(std::string_view version_digest);

}  // namespace cairn::core
