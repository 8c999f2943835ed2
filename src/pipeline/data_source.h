// Datasets a pipeline step reads (`inputs: [{data: NAME@VERSION, path: DIR}]`,
// docs/formats/pipeline.md): the spec names them, and a DataSource puts each version in its
// directory before any step runs. A step's cache key takes the version's digest, so a new
// version re-runs exactly the steps that read it. The command line's DataSource fetches from
// the tracking server (data/dataset_ops.h); tests pass a fake.
#pragma once

#include <cstdint>
#include <string>

#include "util/status.h"

namespace cairn::pipeline {

// One dataset input of a step.
struct DataInput {
  std::string name;
  int64_t version = 0;  // 0: the latest
  std::string path;     // where the step finds it, relative to the pipeline's directory
  bool operator==(const DataInput&) const = default;
};

// What a DataSource put in place.
struct PlacedData {
  int64_t version = 0;  // the exact version (the latest, when 0 was asked for)
  std::string digest;   // its SHA-256: the manifest's, which names the directory's content
};

class DataSource {
 public:
  virtual ~DataSource() = default;
  // Makes `dir` (absolute) hold version `version` of dataset `name` (0: the latest).
  virtual Result<PlacedData> Place(const std::string& name, int64_t version,
                                   const std::string& dir) = 0;
};

}  // namespace cairn::pipeline
