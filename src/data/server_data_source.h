// The pipeline's DataSource on a tracking server: each dataset a step reads is put in its
// directory as `cairn data get` would (dataset_ops.h).
#pragma once

#include <memory>
#include <string>

#include "client/tracking_client.h"
#include "data/dataset_client.h"
#include "pipeline/data_source.h"

namespace cairn::data {

class ServerDataSource : public pipeline::DataSource {
 public:
  // Connects on the first Place.
  explicit ServerDataSource(std::string tracking_uri) : tracking_uri_(std::move(tracking_uri)) {}
  Result<pipeline::PlacedData> Place(const std::string& name, int64_t version,
                                     const std::string& dir) override;

 private:
  std::string tracking_uri_;
  std::unique_ptr<DatasetClient> datasets_;
};

}  // namespace cairn::data
