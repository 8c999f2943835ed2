// The credentials cairn's clients send, found as MLflow's clients find theirs plus cairn's own:
// $CAIRN_TOKEN; MLFLOW_TRACKING_USERNAME with MLFLOW_TRACKING_PASSWORD (HTTP Basic, which
// MLflow's client prefers to a token); $MLFLOW_TRACKING_TOKEN; else the credentials file,
// $XDG_CONFIG_HOME/cairn/credentials (~/.config/cairn/credentials). The file holds INI
// sections named by tracking URI, with [default] for any other:
//
//   [http://gpu-server:5000]
//   token = cairn_...
//
//   [default]
//   username = alice
//   password = ...
//
// A credentials file that its group or others may read is refused: it holds secrets.
#pragma once

#include <optional>
#include <string>

#include "util/status.h"

namespace cairn::client {

// The credentials file's path ("" when neither $XDG_CONFIG_HOME nor $HOME is set).
std::string CredentialsFilePath();

// The Authorization header value for requests to `tracking_uri` ("Bearer ...", "Basic ..."),
// or nullopt when nothing supplies credentials. kPermissionDenied for a credentials file others
// may read, kInvalidArgument for one that cannot be read as INI.
Result<std::optional<std::string>> ResolveAuthorization(const std::string& tracking_uri);

// The token the credentials file holds in `tracking_uri`'s own section, if any.
std::optional<std::string> SavedToken(const std::string& tracking_uri);

// Writes (creating or replacing) the token of `tracking_uri`'s section in the credentials file,
// keeping the other sections, with mode 0600 (its directory 0700).
Status SaveToken(const std::string& tracking_uri, const std::string& token);

}  // namespace cairn::client
