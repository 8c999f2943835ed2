// The project pages of a PEP 503 (HTML) / PEP 691 (JSON) simple repository, with PEP 658/714
// core metadata and PEP 700 sizes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "env/http_fetch.h"
#include "util/status.h"

namespace cairn::env {

struct IndexFile {
  std::string filename;
  std::string url;     // absolute, without the #fragment
  std::string sha256;  // lowercase hex; empty when the index gives none
  int64_t size = -1;
  std::string requires_python;
  bool yanked = false;
  bool has_metadata = false;  // PEP 658: <url>.metadata exists
  std::string metadata_sha256;
};

// Parses a project page: JSON for application/vnd.pypi.simple.v1+json, else HTML.
Result<std::vector<IndexFile>> ParseProjectPage(std::string_view body,
                                                std::string_view content_type,
                                                const std::string& page_url);

// Fetches <index>/<project>/ preferring JSON. A 404 is an empty list (the index has no such
// project); other failures are errors naming the URL.
Result<std::vector<IndexFile>> FetchProjectPage(const std::string& index_url,
                                                const std::string& normalized_project,
                                                const FetchOptions& options = {});

// The PEP 658 metadata of a file, checked against metadata_sha256 when given.
Result<std::string> FetchCoreMetadata(const IndexFile& file, const FetchOptions& options = {});

}  // namespace cairn::env
