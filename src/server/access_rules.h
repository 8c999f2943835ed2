// What every endpoint needs of its caller, as one table: the object a request acts on, where
// the request names it, and the permission the caller must hold on it. The edge looks every
// request up here before its handler runs; a route missing from the table is refused (and a
// unit test fails when one is). Server-internal.
#pragma once

#include <span>
#include <string_view>

#include "core/identity.h"

namespace cairn::server {

// Which part of the URL space a path is relative to.
enum class Api {
  kMlflow,     // /api/2.0/mlflow/ and /ajax-api/2.0/mlflow/
  kArtifacts,  // /api/2.0/mlflow-artifacts/ and /ajax-api/2.0/mlflow-artifacts/
  kCairn,      // /api/cairn/v1/
  // Calls MLflow serves outside its route tables, answered by the server itself: at the root
  // (get-artifact, model-versions/get-artifact) or under /ajax-api/2.0/mlflow/ (upload-artifact)
  kPlain,
};

enum class Target {
  kPublic,          // anyone, signed in or not (signing in, /health)
  kSignedIn,        // any caller; what it lists is filtered to what the caller may read
  kAdmin,           // administrators only
  kSelfOrAdmin,     // the account the `field` names is the caller's, or the caller is an admin
  kExperiment,      // the experiment whose id is in `field`
  kExperimentOr0,   // the same, or the Default experiment (0) when the request names none
  kExperimentName,  // the experiment whose name is in `field`
  kNewRun,          // the experiment a new run goes to: experiment_id, else experiment_name
  kRun,             // the run whose id is in `field` (MLflow's run_uuid as a fallback)
  kRuns,            // every run listed in `field`
  kRunInPath,       // the run whose id is the path's `*`
  kArtifactPath,    // the experiment an artifact path starts with (`field` for a listing),
                    // the registered model whose version's files it holds, or the dataset
  kModel,           // the registered model whose name is in `field`
  kDataset,         // the dataset whose name is in `field`
  kTaskInPath,      // the experiment of the task whose id is the path's `*`
  kAgent,           // agents: a service account (or an admin)
};

struct AccessRule {
  Api api;
  const char* method;
  // Relative to the API's prefix; `*` stands for one path segment, a final `**` for the rest.
  const char* path;
  Target target;
  core::Access access;  // kRead for calls that change nothing
  const char* field;    // where the request names its object, for the targets that need one
};

std::span<const AccessRule> AccessRules();

// Whether `path` matches a rule's or route's `pattern` ('*' one segment, a final "**" one or
// more); what the first '*' matched goes to `wildcard`.
bool PathMatches(std::string_view pattern, std::string_view path, std::string_view* wildcard);

// The rule of a request; nullptr when none matches. `wildcard` receives what `*` matched.
const AccessRule* FindAccessRule(Api api, std::string_view method, std::string_view path,
                                 std::string_view* wildcard = nullptr);

// Whether a rule's call changes anything (it is audited).
inline bool Changes(const AccessRule& rule) { return rule.access != core::Access::kRead; }

}  // namespace cairn::server
