#include "env/resolve/locker.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "env/python_env.h"
#include "env/index/simple_index.h"
#include "env/install/wheel_archive.h"
#include "env/index/wheel_cache.h"
#include "util/hash.h"

namespace cairn::env {
namespace {

namespace fs = std::filesystem;

// A find-links directory: every wheel in it, by project.
struct FindLinks {
  std::string dir;
  std::map<std::string, std::vector<std::string>> files;  // project → wheel paths
};

Result<FindLinks> ScanFindLinks(const std::string& dir) {
  FindLinks out;
  out.dir = dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return NotFound("find-links directory " + dir + " does not exist");
  }
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.ends_with(".whl") || !entry.is_regular_file(ec)) continue;
    Result<WheelFileName> parsed = WheelFileName::Parse(name);
    if (!parsed.ok()) continue;  // not a wheel name: not ours to judge
    out.files[NormalizeName(parsed->name)].push_back(entry.path().string());
  }
  if (ec) return Unavailable("listing " + dir + ": " + ec.message());
  for (auto& [project, paths] : out.files) std::sort(paths.begin(), paths.end());
  return out;
}

std::string MarkerFor(const TargetPlatform& target) {
  return "sys_platform == \"linux\" and platform_machine == \"" + target.arch +
         "\" and python_version == \"" + std::to_string(target.python_major) + "." +
         std::to_string(target.python_minor) + "\"";
}

// The interpreter version to lock for: the spec's, made full (3.11 → 3.11.2) by the
// interpreter `python` when the two agree; the interpreter's when the spec names none.
Result<std::string> PythonVersionFor(const EnvironmentSpec& spec, const std::string& python) {
  std::string version = spec.python;
  if (Result<InterpreterInfo> info = ProbeInterpreter(python); info.ok()) {
    if (version.empty() || info->version == version || info->version.starts_with(version + ".")) {
      version = info->version;
    }
  } else if (version.empty()) {
    return Status(info.status().code(),
                  "no Python version in cairn.yaml and " + info.status().message());
  }
  return version;
}

// The platforms to lock for: the spec's, each for the interpreter's X.Y; else this host.
Result<std::vector<TargetPlatform>> TargetsFor(const EnvironmentSpec& spec, const Version& python,
                                               const std::string& python_version,
                                               const std::string& python_xy) {
  std::vector<TargetPlatform> targets;
  for (const std::string& p : spec.platforms) {
    CAIRN_ASSIGN_OR_RETURN(TargetPlatform t, TargetPlatform::FromString(p));
    if (t.python_major != python.release()[0] || t.python_minor != python.release()[1]) {
      return InvalidArgument("platform " + p + " is not for Python " + python_xy);
    }
    targets.push_back(t);
  }
  if (targets.empty()) {
    CAIRN_ASSIGN_OR_RETURN(TargetPlatform host, TargetPlatform::Host(python_version));
    targets.push_back(host);
  }
  return targets;
}

Result<std::vector<Requirement>> ParseRequirements(const EnvironmentSpec& spec) {
  std::vector<Requirement> requirements;
  for (const std::string& text : spec.requirements) {
    Result<Requirement> r = Requirement::Parse(text);
    if (!r.ok()) return r.status().WithContext("environment.requirements");
    requirements.push_back(std::move(r).value());
  }
  return requirements;
}

// What the lock says apart from its packages and targets: the inputs it came from.
Lock LockHeader(const EnvironmentSpec& spec, const std::string& python_xy,
                const std::string& lock_dir) {
  Lock lock;
  lock.python = python_xy;
  lock.requires_python = "==" + python_xy + ".*";
  lock.requirements = spec.requirements;
  for (const PackageSourceSpec& s : spec.sources) lock.sources.push_back(s.ToString());
  lock.inputs_hash = spec.InputsHash();
  lock.host = spec.host;
  if (!spec.base.empty()) {
    std::error_code ec;
    const fs::path base = spec.Resolve(spec.base);
    lock.base = lock_dir.empty() ? base.string() : fs::relative(base, lock_dir, ec).string();
  }
  return lock;
}

// The lock's entry for a chosen wheel; a local file is named relative to the lock's directory.
LockedWheel WheelEntry(const Candidate& c, const std::pair<std::string, int64_t>& digest,
                       const std::string& lock_dir) {
  LockedWheel wheel;
  wheel.name = c.filename;
  wheel.url = c.url.empty() ? "" : RedactUrl(c.url);
  if (!c.path.empty()) {
    std::error_code ec;
    wheel.path = lock_dir.empty() ? c.path : fs::relative(c.path, lock_dir, ec).string();
    if (ec || wheel.path.empty()) wheel.path = c.path;
  }
  wheel.sha256 = digest.first;
  wheel.size = digest.second;
  return wheel;
}

// The glibc a wheel needs: the lowest manylinux floor among its tags; nullopt for none.
std::optional<std::pair<int, int>> GlibcFloor(const std::string& filename) {
  Result<WheelFileName> name = WheelFileName::Parse(filename);
  if (!name.ok()) return std::nullopt;
  std::optional<std::pair<int, int>> floor;
  for (const WheelTag& tag : name->tags) {
    std::optional<std::pair<int, int>> f = ManylinuxFloor(tag.platform);
    if (f && (!floor || *f < *floor)) floor = f;
  }
  return floor;
}

// The packages resolved for each target, merged by name into one lock: a package has one
// version on every target and, per target, the wheel chosen there.
class TargetMerge {
 public:
  explicit TargetMerge(bool several_targets) : several_targets_(several_targets) {}

  // Adds the packages resolved for `target`. FailedPrecondition when they disagree with the
  // targets added before (another version of a package, or another set of packages).
  Status Add(const TargetPlatform& target, const std::vector<ResolvedPackage>& resolved,
             SourceProvider& provider, const std::string& lock_dir) {
    target_names_.push_back(target.ToString());
    for (const ResolvedPackage& r : resolved) {
      const Candidate& c = r.candidate;
      CAIRN_ASSIGN_OR_RETURN(auto digest, provider.Digest(c));
      LockedWheel wheel = WheelEntry(c, digest, lock_dir);
      if (std::optional<std::pair<int, int>> floor = GlibcFloor(c.filename);
          floor && *floor > glibc_floor_) {
        glibc_floor_ = *floor;
      }
      auto [it, inserted] = merged_.try_emplace(c.project);
      LockedPackage& p = it->second;
      if (inserted) {
        p.name = c.project;
        p.version = c.version.ToString();
        p.requires_python = r.metadata.requires_python;
        p.index = c.index;
        p.dependencies = r.dependencies;
        p.requested = r.requested;
      } else if (p.version != c.version.ToString()) {
        return FailedPrecondition("package " + c.project + " resolves to " + p.version + " for " +
                                  target_names_.front() + " but to " + c.version.ToString() +
                                  " for " + target.ToString() +
                                  ": pin it in the requirements so every platform agrees");
      }
      if (std::none_of(p.wheels.begin(), p.wheels.end(),
                       [&](const LockedWheel& w) { return w.name == wheel.name; })) {
        p.wheels.push_back(std::move(wheel));
      }
    }
    if (several_targets_ && merged_.size() != resolved.size()) {
      return FailedPrecondition(
          "the platforms " + target_names_.front() + " and " + target.ToString() +
          " need different sets of packages; lock each platform in a lock of its own");
    }
    return Status::Ok();
  }

  // Moves the merged packages (wheels sorted), the targets and the glibc floor into `lock`.
  void Finish(Lock& lock) {
    lock.target = target_names_.front();
    for (size_t i = 1; i < target_names_.size(); ++i) lock.target += " " + target_names_[i];
    if (lock.host.glibc.empty() && glibc_floor_.first > 0) {
      lock.host.glibc =
          std::to_string(glibc_floor_.first) + "." + std::to_string(glibc_floor_.second);
    }
    for (auto& [name, p] : merged_) {
      std::sort(p.wheels.begin(), p.wheels.end(),
                [](const LockedWheel& a, const LockedWheel& b) { return a.name < b.name; });
      lock.packages.push_back(std::move(p));
    }
  }

 private:
  bool several_targets_;
  std::map<std::string, LockedPackage> merged_;  // by name
  std::pair<int, int> glibc_floor_{0, 0};
  std::vector<std::string> target_names_;
};

}  // namespace

struct SourceProvider::Impl {
  std::vector<PackageSourceSpec> sources;
  std::vector<FindLinks> find_links;  // parallel to sources (empty for indexes)
  TagRanker ranker;
  WheelCache cache;
  std::map<std::string, std::vector<Candidate>> listed;   // project → candidates
  std::map<std::string, IndexFile> index_files;           // url → its index entry
  std::map<std::string, std::pair<std::string, int64_t>> digests;  // url or path → sha, size

  Impl(const TargetPlatform& target, const std::string& cache_root)
      : ranker(target), cache(cache_root) {}
};

SourceProvider::SourceProvider(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SourceProvider::~SourceProvider() = default;

Result<std::unique_ptr<SourceProvider>> SourceProvider::Create(const EnvironmentSpec& spec,
                                                               const TargetPlatform& target,
                                                               const std::string& cache_root) {
  auto impl = std::make_unique<Impl>(target, cache_root);
  for (const PackageSourceSpec& s : spec.sources) {
    impl->sources.push_back(s);
    if (s.kind == PackageSourceSpec::Kind::kFindLinks) {
      CAIRN_ASSIGN_OR_RETURN(FindLinks f, ScanFindLinks(spec.Resolve(s.location)));
      impl->find_links.push_back(std::move(f));
    } else {
      impl->find_links.push_back({});
    }
  }
  return std::unique_ptr<SourceProvider>(new SourceProvider(std::move(impl)));
}

Result<std::vector<Candidate>> SourceProvider::Candidates(const std::string& project) {
  if (auto it = impl_->listed.find(project); it != impl_->listed.end()) return it->second;
  std::vector<Candidate> out;
  auto add = [&](Candidate c, const std::string& filename) -> bool {
    Result<WheelFileName> name = WheelFileName::Parse(filename);
    if (!name.ok() || NormalizeName(name->name) != project) return false;
    Result<Version> version = Version::Parse(name->version);
    if (!version.ok()) return false;  // not PEP 440: pip skips such files too
    c.project = project;
    c.version = *version;
    c.filename = filename;
    c.build_tag = name->build_tag;
    std::optional<int> rank = impl_->ranker.Rank(*name);
    c.rank = rank ? *rank : -1;
    out.push_back(std::move(c));
    return true;
  };
  for (size_t i = 0; i < impl_->sources.size(); ++i) {
    const PackageSourceSpec& s = impl_->sources[i];
    if (s.kind == PackageSourceSpec::Kind::kFindLinks) {
      auto files = impl_->find_links[i].files.find(project);
      if (files == impl_->find_links[i].files.end()) continue;
      for (const std::string& path : files->second) {
        Candidate c;
        c.path = path;
        struct stat st{};
        if (stat(path.c_str(), &st) == 0) c.size = st.st_size;
        add(std::move(c), fs::path(path).filename().string());
      }
      continue;
    }
    CAIRN_ASSIGN_OR_RETURN(std::vector<IndexFile> files, FetchProjectPage(s.location, project));
    for (IndexFile& f : files) {
      if (!f.filename.ends_with(".whl")) continue;  // sdists cannot be installed without building
      Candidate c;
      c.url = f.url;
      c.sha256 = f.sha256;
      c.size = f.size;
      c.requires_python = f.requires_python;
      c.yanked = f.yanked;
      c.index = RedactUrl(s.location);
      const std::string filename = f.filename;
      if (add(std::move(c), filename)) impl_->index_files[f.url] = std::move(f);
    }
  }
  impl_->listed[project] = out;
  return out;
}

Result<CoreMetadata> SourceProvider::Metadata(const Candidate& c) {
  std::string text;
  if (!c.path.empty()) {
    CAIRN_ASSIGN_OR_RETURN(text, ReadWheelMetadata(c.path));
  } else {
    auto entry = impl_->index_files.find(c.url);
    if (entry != impl_->index_files.end() && entry->second.has_metadata) {
      CAIRN_ASSIGN_OR_RETURN(text, FetchCoreMetadata(entry->second));
    } else {
      // No PEP 658 metadata: the wheel itself, into the cache (where a build will find it).
      CAIRN_ASSIGN_OR_RETURN(auto digest, Digest(c));
      std::optional<std::string> cached = impl_->cache.Find(digest.first, digest.second);
      if (!cached) return Internal("wheel " + c.filename + " vanished from the cache");
      CAIRN_ASSIGN_OR_RETURN(text, ReadWheelMetadata(*cached));
    }
  }
  return ParseCoreMetadata(text);
}

Result<std::pair<std::string, int64_t>> SourceProvider::Digest(const Candidate& c) {
  const std::string key = c.url.empty() ? c.path : c.url;
  if (auto it = impl_->digests.find(key); it != impl_->digests.end()) return it->second;
  std::pair<std::string, int64_t> digest;
  if (!c.path.empty() || c.sha256.empty()) {
    std::string local = c.path;
    if (local.empty()) {
      // An index that lists no hash: download, then hash what arrived.
      const std::string tmp = impl_->cache.root() + "/tmp-" + RandomHex(8) + ".whl";
      CAIRN_ASSIGN_OR_RETURN(Downloaded d, HttpDownload(c.url, tmp));
      (void)d;
      local = tmp;
      auto added = impl_->cache.AddLocal(local);
      std::error_code ec;
      fs::remove(tmp, ec);
      if (!added.ok()) return added.status();
      digest = {std::get<0>(*added), std::get<1>(*added)};
    } else {
      CAIRN_ASSIGN_OR_RETURN(auto added, impl_->cache.AddLocal(local));
      digest = {std::get<0>(added), std::get<1>(added)};
    }
  } else {
    // The index's hash (and PEP 700 size) are what the lock pins; the build verifies them.
    digest = {c.sha256, c.size};
  }
  impl_->digests[key] = digest;
  return digest;
}

Result<Lock> LockEnvironment(const EnvironmentSpec& spec, const LockOptions& options) {
  auto say = [&options](const std::string& line) {
    if (options.progress) options.progress(line);
  };
  if (spec.requirements.empty()) {
    return InvalidArgument("the environment has no requirements to lock");
  }
  if (spec.sources.empty()) {
    return InvalidArgument("the environment names no package sources (find-links or index)");
  }
  CAIRN_ASSIGN_OR_RETURN(std::string python_version, PythonVersionFor(spec, options.python));
  CAIRN_ASSIGN_OR_RETURN(Version python, Version::Parse(python_version));
  if (python.release().size() < 2) {
    return InvalidArgument("environment.python must be X.Y or X.Y.Z, got '" + spec.python + "'");
  }
  const std::string python_xy =
      std::to_string(python.release()[0]) + "." + std::to_string(python.release()[1]);
  CAIRN_ASSIGN_OR_RETURN(std::vector<TargetPlatform> targets,
                         TargetsFor(spec, python, python_version, python_xy));
  CAIRN_ASSIGN_OR_RETURN(std::vector<Requirement> requirements, ParseRequirements(spec));

  const std::string cache_root =
      options.cache_root.empty() ? DefaultCacheRoot() : options.cache_root;
  Lock lock = LockHeader(spec, python_xy, options.lock_dir);
  TargetMerge merge(targets.size() > 1);
  for (const TargetPlatform& target : targets) {
    lock.environments.push_back(MarkerFor(target));
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<SourceProvider> provider,
                           SourceProvider::Create(spec, target, cache_root));
    ResolveOptions resolve;
    resolve.requirements = requirements;
    resolve.markers = MarkerEnvironment::LinuxCPython(python_version, target.arch);
    resolve.python = python;
    resolve.prereleases = spec.prereleases;
    resolve.progress = [&](const std::string& project) {
      say("resolving " + project + (targets.size() > 1 ? " for " + target.ToString() : ""));
    };
    CAIRN_ASSIGN_OR_RETURN(std::vector<ResolvedPackage> resolved, Resolve(resolve, *provider));
    CAIRN_RETURN_IF_ERROR(merge.Add(target, resolved, *provider, options.lock_dir));
  }
  merge.Finish(lock);
  return lock;
}

}  // namespace cairn::env
