// The media type of a file from its name, one table for the UI's files and for artifacts.
#pragma once

#include <string>
#include <string_view>

namespace cairn::server {

// The media type a file's extension (compared in any case) names, without parameters, or ""
// when the extension is not in the table.
std::string_view MediaTypeOf(std::string_view file_name);

// The Content-Type of one of the web UI's own files: the table's type, "; charset=utf-8" on
// text, application/octet-stream when unknown.
std::string UiContentType(std::string_view file_name);

// The Content-Type of an artifact, which is user data shown by this origin: HTML, scripts and
// style sheets come as text/plain, so that a browser never renders or runs them here; other
// text is text/plain (MLflow's "MLmodel" too), images and JSON keep their types, anything else
// is application/octet-stream.
std::string ArtifactContentType(std::string_view file_name);

}  // namespace cairn::server
