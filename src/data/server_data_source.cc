#include "data/server_data_source.h"

#include "data/dataset_ops.h"

namespace cairn::data {

Result<pipeline::PlacedData> ServerDataSource::Place(const std::string& name, int64_t version,
                                                     const std::string& dir) {
  if (datasets_ == nullptr) {
    client::ClientOptions options;
    options.tracking_uri = tracking_uri_;
    CAIRN_ASSIGN_OR_RETURN(datasets_, DatasetClient::Open(options));
  }
  CAIRN_ASSIGN_OR_RETURN(GetResult got, GetVersion(*datasets_, name, version, dir, GetOptions()));
  return pipeline::PlacedData{got.version.version, got.version.digest};
}

}  // namespace cairn::data
