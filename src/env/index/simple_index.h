// The project pages of a "simple" package repository (what pip's --index-url names): PEP 503
// HTML or PEP 691 JSON, with PEP 592 yanking, PEP 658/714 core metadata and PEP 700 sizes.
// A page lists every file of one project; choosing among them is the resolver's business, so
// nothing here filters: sdists, wheels for other platforms and yanked files all come back.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "env/index/http_fetch.h"
#include "util/status.h"

namespace cairn::env {

struct IndexFile {
  std::string filename;         // as listed: JSON "filename", HTML the anchor text
  std::string url;              // absolute (resolved against the page), without the #fragment
  std::string sha256;           // lowercase hex; empty when the index gives none
  int64_t size = -1;            // PEP 700 "size"; -1 when not given
  std::string requires_python;  // e.g. ">=3.9", entities decoded; empty when not given
  bool yanked = false;          // PEP 592
  bool has_metadata = false;    // PEP 658/714: <url>.metadata exists
  std::string metadata_sha256;  // lowercase hex of that metadata file, when given
};

// Parses a project page fetched from `page_url` (the final URL, after redirects: relative
// links resolve against it, or against an HTML <base href>). A Content-Type naming JSON
// (application/vnd.pypi.simple.v1+json) selects PEP 691 JSON; anything else HTML, which is
// scanned tolerantly: <a> tags anywhere, attributes in any order, case and quoting. Errors:
// kInvalidArgument for JSON that is not a PEP 691 page; kFailedPrecondition for a page
// declaring an API major version other than 1.
Result<std::vector<IndexFile>> ParseProjectPage(std::string_view body,
                                                std::string_view content_type,
                                                const std::string& page_url);

// Fetches <index_url>/<normalized_project>/ (a '/' is added to index_url when missing),
// asking for JSON first, then HTML. A 404 is an empty list (the index has no such project).
// Other failures are errors naming the URL (credentials redacted): HttpGet's errors,
// kUnavailable for HTTP 5xx/429 after the retries, kFailedPrecondition for other statuses.
Result<std::vector<IndexFile>> FetchProjectPage(const std::string& index_url,
                                                const std::string& normalized_project,
                                                const FetchOptions& options = {});

// The PEP 658 metadata file of `file` (GET <url>.metadata), checked against metadata_sha256
// when given (a mismatch is kFailedPrecondition). kNotFound when the index has none.
Result<std::string> FetchCoreMetadata(const IndexFile& file, const FetchOptions& options = {});

}  // namespace cairn::env
