// Dependency resolution for `cairn env lock`: from top-level PEP 508 requirements to one version
// of every package needed, for one target (interpreter and platform), choosing among the wheels
// the package sources offer.
//
// The search is depth-first with conflict-directed backjumping: each choice of a package
// version is a decision; when no version of some package fits the requirements in force, the
// resolver goes back to the latest decision that contributed one of those requirements (not
// merely the latest decision), so unrelated choices are not retried. Newer versions are tried
// first; the package with the fewest versions left is decided first. An extra (`pkg[gpu]`) is
// a package of its own that pins `pkg` to its version and adds the extra's dependencies.
//
// When nothing fits, the error explains the conflict as chains of requirements a person can act
// on ("z==1 required by x 1.0 required by x>=1 (top level)").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "env/standards/core_metadata.h"
#include "env/standards/pep440.h"
#include "env/standards/pep508.h"
#include "util/status.h"

namespace cairn::env {

// One wheel of one version of a project, as a package source lists it.
struct Candidate {
  std::string project;  // normalised name
  Version version;
  std::string filename;   // the wheel's file name
  std::string build_tag;  // the file name's build tag; of two wheels alike, the higher wins
  std::string url;       // where to download it, or
  std::string path;      // a local file
  std::string sha256;    // when the source says (indexes do); lowercase hex
  int64_t size = -1;
  std::string requires_python;  // from the index listing, before the metadata is read
  std::string index;            // the simple index it was listed on; empty for find-links
  bool yanked = false;
  // How well the wheel's tags fit the target: lower is better; -1 when it cannot be installed
  // there (such wheels are kept to explain why a version was not chosen).
  int rank = -1;
};

// Where the resolver gets candidates and metadata. Implementations cache: the resolver asks
// for the same project many times. Not called concurrently.
class CandidateProvider {
 public:
  virtual ~CandidateProvider() = default;
  // Every wheel of `project` (normalised name) the sources offer; empty when they have none.
  virtual Result<std::vector<Candidate>> Candidates(const std::string& project) = 0;
  // The core metadata of the candidate's wheel.
  virtual Result<CoreMetadata> Metadata(const Candidate& candidate) = 0;
};

struct ResolveOptions {
  std::vector<Requirement> requirements;
  MarkerEnvironment markers;  // the target's, for the requirements' markers
  Version python;             // the target interpreter, for Requires-Python
  // Pre-releases are chosen only when this is set, when a specifier names one (`>=2.0rc1`), or
  // when a project has nothing else that fits.
  bool prereleases = false;
  // Told about each package as it is first needed ("resolving numpy").
  std::function<void(const std::string& project)> progress;
};

struct ResolvedPackage {
  Candidate candidate;  // the chosen wheel
  CoreMetadata metadata;
  std::vector<std::string> dependencies;  // normalised names it depends on here, sorted
  bool requested = false;                 // named by a top-level requirement
};

// Resolves the requirements; the packages come sorted by name. kFailedPrecondition with an
// explanation when no set of versions satisfies them; kInvalidArgument for a requirement cairn
// cannot lock (a direct URL); the provider's errors as they are.
Result<std::vector<ResolvedPackage>> Resolve(const ResolveOptions& options,
                                             CandidateProvider& provider);

}  // namespace cairn::env
