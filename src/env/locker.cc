#include "env/locker.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "env/python_env.h"
#include "env/simple_index.h"
#include "env/wheel_archive.h"
#include "env/wheel_cache.h"
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
  // The interpreter version: the spec's, made full by the interpreter when they agree.
  std::string python_version = spec.python;
  if (Result<InterpreterInfo> info = ProbeInterpreter(options.python); info.ok()) {
    if (python_version.empty() || info->version == python_version ||
        info->version.starts_with(python_version + ".")) {
      python_version = info->version;
    }
  } else if (python_version.empty()) {
    return Status(info.status().code(), "no Python version in cairn.yaml and " +
                                            info.status().message());
  }
  CAIRN_ASSIGN_OR_RETURN(Version python, Version::Parse(python_version));
  if (python.release().size() < 2) {
    return InvalidArgument("environment.python must be X.Y or X.Y.Z, got '" + spec.python + "'");
  }
  const std::string python_xy =
      std::to_string(python.release()[0]) + "." + std::to_string(python.release()[1]);

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

  std::vector<Requirement> requirements;
  for (const std::string& text : spec.requirements) {
    Result<Requirement> r = Requirement::Parse(text);
    if (!r.ok()) return r.status().WithContext("environment.requirements");
    requirements.push_back(std::move(r).value());
  }

  const std::string cache_root = options.cache_root.empty() ? DefaultCacheRoot() : options.cache_root;
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
    lock.base = options.lock_dir.empty()
                    ? base.string()
                    : fs::relative(base, options.lock_dir, ec).string();
  }

  std::map<std::string, LockedPackage> merged;  // by name
  std::pair<int, int> glibc_floor{0, 0};
  std::vector<std::string> target_names;
  for (const TargetPlatform& target : targets) {
    target_names.push_back(target.ToString());
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
    for (const ResolvedPackage& r : resolved) {
      const Candidate& c = r.candidate;
      CAIRN_ASSIGN_OR_RETURN(auto digest, provider->Digest(c));
      LockedWheel wheel;
      wheel.name = c.filename;
      wheel.url = c.url.empty() ? "" : RedactUrl(c.url);
      if (!c.path.empty()) {
        std::error_code ec;
        wheel.path = options.lock_dir.empty()
                         ? c.path
                         : fs::relative(c.path, options.lock_dir, ec).string();
        if (ec || wheel.path.empty()) wheel.path = c.path;
      }
      wheel.sha256 = digest.first;
      wheel.size = digest.second;
      // The glibc the chosen wheel needs: the lowest floor among its tags this target takes.
      if (Result<WheelFileName> name = WheelFileName::Parse(c.filename); name.ok()) {
        std::optional<std::pair<int, int>> floor;
        for (const WheelTag& tag : name->tags) {
          std::optional<std::pair<int, int>> f = ManylinuxFloor(tag.platform);
          if (f && (!floor || *f < *floor)) floor = f;
        }
        if (floor && *floor > glibc_floor) glibc_floor = *floor;
      }
      auto [it, inserted] = merged.try_emplace(c.project);
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
                                  target_names.front() + " but to " + c.version.ToString() +
                                  " for " + target.ToString() +
                                  ": pin it in the requirements so every platform agrees");
      }
      if (std::none_of(p.wheels.begin(), p.wheels.end(),
                       [&](const LockedWheel& w) { return w.name == wheel.name; })) {
        p.wheels.push_back(std::move(wheel));
      }
    }
    if (targets.size() > 1 && merged.size() != resolved.size()) {
      return FailedPrecondition(
          "the platforms " + target_names.front() + " and " + target.ToString() +
          " need different sets of packages; lock each platform in a lock of its own");
    }
  }
  lock.target = target_names.front();
  for (size_t i = 1; i < target_names.size(); ++i) lock.target += " " + target_names[i];
  if (lock.host.glibc.empty() && glibc_floor.first > 0) {
    lock.host.glibc = std::to_string(glibc_floor.first) + "." + std::to_string(glibc_floor.second);
  }
  for (auto& [name, p] : merged) {
    std::sort(p.wheels.begin(), p.wheels.end(),
              [](const LockedWheel& a, const LockedWheel& b) { return a.name < b.name; });
    lock.packages.push_back(std::move(p));
  }
  return lock;
}

}  // namespace cairn::env
