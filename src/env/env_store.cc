#include "env/env_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <nlohmann/json.hpp>
#include <string_view>
#include <thread>
#include <vector>

#include "env/standards/pep440.h"
#include "env/standards/pep508.h"
#include "env/install/venv_layout.h"
#include "env/install/wheel_archive.h"
#include "env/index/wheel_cache.h"
#include "env/standards/wheel_tags.h"
#include "util/file.h"
#include "util/hash.h"
#include "util/parallel.h"

namespace cairn::env {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr size_t kIdLength = 16;
constexpr std::string_view kBuildPrefix = ".build-";

std::string NowIso() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string Megabytes(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(bytes) / 1e6);
  return buf;
}

std::string MachineName() {
  utsname u{};
  if (uname(&u) != 0) return "x86_64";
  return u.machine;
}

// "3.11.4" → {3, 11}; {0, 0} when it does not start with two numbers.
std::pair<int, int> MajorMinor(const std::string& version) {
  int major = 0, minor = 0;
  if (std::sscanf(version.c_str(), "%d.%d", &major, &minor) != 2) return {0, 0};
  return {major, minor};
}

// Removes builds that were killed halfway (older than an hour: a live build keeps writing).
void SweepStaleBuilds(const std::string& root) {
  std::error_code ec;
  const auto cutoff = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(kBuildPrefix)) continue;
    std::error_code time_ec;
    if (fs::last_write_time(entry.path(), time_ec) < cutoff && !time_ec) {
      fs::remove_all(entry.path(), time_ec);
    }
  }
}

// Progress lines for people, from the worker threads of a build one at a time.
class Reporter {
 public:
  explicit Reporter(const std::function<void(const std::string&)>& progress)
      : progress_(progress) {}
  void operator()(const std::string& line) {
    std::lock_guard<std::mutex> lock(mu_);
    if (progress_) progress_(line);
  }

 private:
  const std::function<void(const std::string&)>& progress_;
  std::mutex mu_;
};

// The interpreter the environment is made from: `python`, else pythonX.Y for the lock's X.Y.
// It must be the lock's X.Y: wheels and markers were chosen for it.
Result<VenvLayout> LayoutFor(const Lock& lock, const std::string& prefix, std::string python) {
  const auto [lock_major, lock_minor] = MajorMinor(lock.python);
  if (python.empty()) {
    python = lock_major > 0
                 ? "python" + std::to_string(lock_major) + "." + std::to_string(lock_minor)
                 : "python3";
  }
  Result<VenvLayout> layout = VenvLayoutFor(prefix, python);
  if (!layout.ok()) {
    return Status(layout.status().code(),
                  "the environment needs Python " +
                      (lock.python.empty() ? std::string("3") : lock.python) + ": " +
                      layout.status().message() + " (choose one with --python)");
  }
  if (lock_major > 0 &&
      (layout->python_major != lock_major || layout->python_minor != lock_minor)) {
    return FailedPrecondition("the lock is for Python " + lock.python + ", but " + python +
                              " is Python " + layout->python_version +
                              " (choose the interpreter with --python)");
  }
  return layout;
}

// A base environment, built before the environment whose lock names it.
struct BaseLayer {
  std::string site;                             // its site-packages; empty: no base
  std::map<std::string, std::string> versions;  // its packages: name → version
};

Result<BaseLayer> BuildBase(EnvStore& store, const std::string& base, const fs::path& lock_dir,
                            const VenvLayout& layout, const BuildOptions& options, Reporter& say) {
  fs::path base_lock = base;
  if (base_lock.is_relative()) base_lock = lock_dir / base_lock;
  say("building the base environment " + base_lock.string());
  CAIRN_ASSIGN_OR_RETURN(BuiltEnvironment built, store.Build(base_lock.string(), options));
  CAIRN_ASSIGN_OR_RETURN(Lock parsed, ReadLockFile(base_lock.string()));
  BaseLayer out;
  for (const LockedPackage& p : parsed.packages) out.versions[p.name] = p.version;
  VenvLayout base_layout = layout;
  base_layout.prefix = built.path;
  out.site = base_layout.purelib();
  return out;
}

// One package to install, followed through the phases of a build.
struct Job {
  const LockedPackage* package = nullptr;
  const LockedWheel* wheel = nullptr;
  std::string cached;    // the wheel file in the cache
  std::string unpacked;  // its unpacked tree
};

// The wheel of `p` whose tags fit the host best; nullptr when none installs here.
const LockedWheel* BestWheel(const LockedPackage& p, const TagRanker& ranker) {
  const LockedWheel* chosen = nullptr;
  std::optional<int> best;
  for (const LockedWheel& w : p.wheels) {
    Result<WheelFileName> name = WheelFileName::Parse(w.name);
    if (!name.ok()) continue;
    std::optional<int> rank = ranker.Rank(*name);
    if (rank && (!best || *rank < *best)) {
      best = rank;
      chosen = &w;
    }
  }
  return chosen;
}

// What this host installs: the packages whose markers hold here, but not those the base has at
// the same version, each with its best wheel. FailedPrecondition naming every package that has
// no wheel for the host.
Result<std::vector<Job>> SelectWheels(const Lock& lock, const TargetPlatform& target,
                                      const std::string& python_version,
                                      const std::map<std::string, std::string>& base_versions) {
  const TagRanker ranker(target);
  const MarkerEnvironment markers = MarkerEnvironment::LinuxCPython(python_version, MachineName());
  std::vector<Job> jobs;
  std::vector<std::string> no_wheel;
  for (const LockedPackage& p : lock.packages) {
    if (!p.marker.empty()) {
      CAIRN_ASSIGN_OR_RETURN(Marker marker, Marker::Parse(p.marker));
      if (!marker.Evaluate(markers)) continue;
    }
    if (auto b = base_versions.find(p.name); b != base_versions.end() && b->second == p.version) {
      continue;
    }
    Job job;
    job.package = &p;
    job.wheel = BestWheel(p, ranker);
    if (job.wheel == nullptr) {
      no_wheel.push_back(p.name + " " + p.version);
      continue;
    }
    jobs.push_back(job);
  }
  if (!no_wheel.empty()) {
    std::string list;
    for (const std::string& n : no_wheel) list += (list.empty() ? "" : ", ") + n;
    return FailedPrecondition("the lock has no wheel for this host (" + target.ToString() +
                              ") for: " + list + "; lock it for this platform");
  }
  return jobs;
}

// Fetches every wheel into the cache, verifying size and hash, on `threads` threads. Returns how
// many were not in the cache before.
Result<size_t> FetchWheels(std::vector<Job>& jobs, WheelCache& cache, const fs::path& lock_dir,
                           int threads, Reporter& say) {
  uint64_t total_bytes = 0;
  for (const Job& j : jobs) {
    total_bytes += static_cast<uint64_t>(std::max<int64_t>(0, j.wheel->size));
  }
  std::atomic<size_t> fetched{0};
  std::atomic<uint64_t> fetched_bytes{0};
  std::atomic<size_t> downloaded{0};
  CAIRN_RETURN_IF_ERROR(ParallelFor(jobs.size(), threads, [&](size_t i) -> Status {
    Job& j = jobs[i];
    const LockedWheel& w = *j.wheel;
    const bool cached = cache.Find(w.sha256, w.size).has_value();
    std::string path = w.path;
    if (!path.empty() && fs::path(path).is_relative()) path = (lock_dir / path).string();
    Result<std::string> got =
        cache.Fetch(w.sha256, w.size, path.empty() ? w.url : "", path,
                    j.package->name + " " + j.package->version + " (" + w.name + ")");
    if (!got.ok()) return got.status();
    j.cached = *got;
    if (!cached) ++downloaded;
    const size_t n = ++fetched;
    fetched_bytes += static_cast<uint64_t>(std::max<int64_t>(0, w.size));
    say("fetching wheels " + std::to_string(n) + "/" + std::to_string(jobs.size()) + " (" +
        Megabytes(fetched_bytes) + " of " + Megabytes(total_bytes) + " MB)");
    return Status::Ok();
  }));
  return downloaded.load();
}

// Unpacks each wheel once into the unpacked cache: a tree unpacked before, by any build, is
// used as it is.
Status UnpackWheels(std::vector<Job>& jobs, const WheelCache& cache, Reporter& say) {
  std::atomic<size_t> unpacked{0};
  return ParallelFor(jobs.size(), CoreCount(), [&](size_t i) -> Status {
    Job& j = jobs[i];
    j.unpacked = cache.UnpackedDir(j.wheel->sha256);
    std::error_code exists_ec;
    if (!fs::is_directory(j.unpacked, exists_ec)) {
      CAIRN_RETURN_IF_ERROR(MakeDirs(fs::path(j.unpacked).parent_path()));
      Result<UnpackedWheel> u = UnpackWheel(j.cached, j.unpacked);
      if (!u.ok()) {
        return u.status().WithContext(j.package->name + " " + j.package->version);
      }
    }
    const size_t n = ++unpacked;
    say("unpacking wheels " + std::to_string(n) + "/" + std::to_string(jobs.size()));
    return Status::Ok();
  });
}

// Installs every unpacked wheel into the environment `layout` describes. Returns the number of
// files installed.
Result<size_t> InstallWheels(const std::vector<Job>& jobs, const VenvLayout& layout, LinkMode link,
                             Reporter& say) {
  std::atomic<size_t> installed{0};
  std::atomic<size_t> files{0};
  CAIRN_RETURN_IF_ERROR(ParallelFor(jobs.size(), CoreCount(), [&](size_t i) -> Status {
    const Job& j = jobs[i];
    InstallOptions install;
    install.link = link;
    install.requested = j.package->requested;
    Result<InstallReport> report = InstallWheel(j.unpacked, layout, install);
    if (!report.ok()) return report.status();
    files += report->files_linked + report->files_copied + report->files_written;
    const size_t n = ++installed;
    say("installing " + std::to_string(n) + "/" + std::to_string(jobs.size()) + " packages");
    return Status::Ok();
  }));
  return files.load();
}

// A build's own directory in the store, removed with what is in it unless kept.
struct StagingDir {
  std::string dir;
  bool keep = false;
  ~StagingDir() {
    std::error_code ec;
    if (!keep) fs::remove_all(dir, ec);
  }
};

// The environment's records: <building>/.cairn/lock.toml and info.json.
Status WriteRecords(const std::string& building, std::string_view lock_text, const json& info) {
  const fs::path meta = fs::path(building) / ".cairn";
  CAIRN_RETURN_IF_ERROR(MakeDirs(meta.string()));
  CAIRN_RETURN_IF_ERROR(WriteFileAtomic(meta / "lock.toml", lock_text));
  return WriteFileAtomic(meta / "info.json", info.dump(2) + "\n");
}

// Renames the finished build to its place in the store. False when another build of the same
// lock got there first (its environment stands).
Result<bool> Publish(const std::string& building, const std::string& path) {
  // Durable before it is published: one syncfs for the whole tree.
  if (int fd = open(building.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); fd >= 0) {
    syncfs(fd);
    close(fd);
  }
  if (rename(building.c_str(), path.c_str()) != 0) {
    if (errno == EEXIST || errno == ENOTEMPTY) return false;
    return ErrnoStatus("rename", building);
  }
  return true;
}

}  // namespace

EnvStore::EnvStore(std::string root) : root_(std::move(root)) {}

std::string EnvStore::DefaultRoot() {
  if (const char* s = std::getenv("CAIRN_ENV_STORE"); s != nullptr && *s != '\0') return s;
  if (const char* x = std::getenv("XDG_DATA_HOME"); x != nullptr && *x == '/') {
    return std::string(x) + "/cairn/envs";
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : "/tmp") + "/.local/share/cairn/envs";
}

std::string EnvStore::PathOf(const std::string& id) const {
  return (fs::path(root_) / id).string();
}

Result<BuiltEnvironment> EnvStore::Build(const std::string& lock_path,
                                         const BuildOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  CAIRN_ASSIGN_OR_RETURN(std::string text, ReadFile(lock_path));
  CAIRN_ASSIGN_OR_RETURN(Lock lock, ParseLock(text, lock_path));
  BuiltEnvironment built;
  built.lock_hash = LockHash(text);
  built.id = built.lock_hash.substr(0, kIdLength);
  built.path = PathOf(built.id);
  std::error_code ec;
  if (fs::is_directory(fs::path(built.path) / ".cairn", ec)) {
    built.already_built = true;
    Result<StoredEnvironment> stored = Load(built.id);
    if (stored.ok()) built.packages = stored->packages;
    return built;
  }
  CAIRN_RETURN_IF_ERROR(MakeDirs(root_));
  SweepStaleBuilds(root_);
  const fs::path lock_dir = fs::absolute(lock_path, ec).parent_path();
  Reporter say(options.progress);

  CAIRN_ASSIGN_OR_RETURN(VenvLayout layout, LayoutFor(lock, built.path, options.python));
  CAIRN_ASSIGN_OR_RETURN(TargetPlatform target, TargetPlatform::Host(layout.python_version));
  BaseLayer base;
  if (!lock.base.empty()) {
    CAIRN_ASSIGN_OR_RETURN(base, BuildBase(*this, lock.base, lock_dir, layout, options, say));
  }
  CAIRN_ASSIGN_OR_RETURN(std::vector<Job> jobs,
                         SelectWheels(lock, target, layout.python_version, base.versions));
  WheelCache cache(options.cache_root.empty() ? DefaultCacheRoot() : options.cache_root);
  CAIRN_ASSIGN_OR_RETURN(size_t downloaded, FetchWheels(jobs, cache, lock_dir, options.jobs, say));
  CAIRN_RETURN_IF_ERROR(UnpackWheels(jobs, cache, say));

  // Build in a directory of its own, then rename it into place.
  StagingDir building{
      (fs::path(root_) / (std::string(kBuildPrefix) + built.id + "-" + RandomHex(6))).string()};
  layout.location = built.path;
  layout.prefix = building.dir;
  layout.prompt = "cairn-" + built.id.substr(0, 8);
  CAIRN_RETURN_IF_ERROR(CreateVenvLayout(layout));
  CAIRN_ASSIGN_OR_RETURN(size_t files, InstallWheels(jobs, layout, options.link, say));
  if (!base.site.empty()) {
    // Python reads .pth files in site-packages: the base's packages come after this
    // environment's own, which shadow them.
    CAIRN_RETURN_IF_ERROR(
        WriteFileAtomic(fs::path(layout.purelib()) / "_cairn_base.pth", base.site + "\n"));
  }
  const json info = {{"lock_hash", built.lock_hash},
                     {"created", NowIso()},
                     {"python", layout.python_version},
                     {"interpreter", layout.python},
                     {"target", target.ToString()},
                     {"packages", jobs.size()},
                     {"files", files},
                     {"base", lock.base}};
  CAIRN_RETURN_IF_ERROR(WriteRecords(building.dir, text, info));
  CAIRN_ASSIGN_OR_RETURN(bool published, Publish(building.dir, built.path));
  if (!published) {  // another build of the same lock won
    built.already_built = true;
    return built;
  }
  building.keep = true;
  built.packages = jobs.size();
  built.files = files;
  built.downloaded = downloaded;
  built.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return built;
}

Result<StoredEnvironment> EnvStore::Load(const std::string& id) const {
  return LoadStoredEnvironment(PathOf(id));
}

Result<StoredEnvironment> EnvStore::Find(const std::string& id_or_prefix) const {
  if (id_or_prefix.empty()) return InvalidArgument("no environment id given");
  CAIRN_ASSIGN_OR_RETURN(std::vector<StoredEnvironment> all, List());
  std::vector<const StoredEnvironment*> matches;
  for (const StoredEnvironment& e : all) {
    if (e.id == id_or_prefix) return e;
    if (e.id.starts_with(id_or_prefix)) matches.push_back(&e);
  }
  if (matches.size() == 1) return *matches[0];
  if (matches.empty()) return NotFound("no environment " + id_or_prefix + " in " + root_);
  return InvalidArgument("environment id " + id_or_prefix + " is ambiguous: " +
                         std::to_string(matches.size()) + " environments start with it");
}

Result<std::vector<StoredEnvironment>> EnvStore::List() const {
  std::vector<StoredEnvironment> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() != kIdLength || !entry.is_directory()) continue;
    Result<StoredEnvironment> e = Load(name);
    if (e.ok()) out.push_back(std::move(e).value());
  }
  std::sort(out.begin(), out.end(), [](const StoredEnvironment& a, const StoredEnvironment& b) {
    return a.created != b.created ? a.created > b.created : a.id < b.id;
  });
  return out;
}

Status EnvStore::Remove(const std::string& id) {
  // Moved aside first, so that the store never shows a half-removed environment.
  const std::string path = PathOf(id);
  const std::string doomed =
      (fs::path(root_) / (std::string(kBuildPrefix) + "removed-" + id + "-" + RandomHex(6))).string();
  if (rename(path.c_str(), doomed.c_str()) != 0) return ErrnoStatus("rename", path);
  std::error_code ec;
  fs::remove_all(doomed, ec);
  if (ec) return Internal("removing " + doomed + ": " + ec.message());
  return Status::Ok();
}

Status EnvStore::RecordRun(const std::string& id, const std::string& run_id) {
  return RecordEnvironmentRun(PathOf(id), run_id);
}

Status EnvStore::RegisterProject(const std::string& project_dir) {
  for (const std::string& p : Projects()) {
    if (p == project_dir) return Status::Ok();
  }
  CAIRN_RETURN_IF_ERROR(MakeDirs(root_));
  std::ofstream out(fs::path(root_) / "projects", std::ios::app);
  out << project_dir << "\n";
  if (!out) return Internal("cannot append to " + (fs::path(root_) / "projects").string());
  return Status::Ok();
}

std::vector<std::string> EnvStore::Projects() const {
  std::vector<std::string> out;
  std::ifstream in(fs::path(root_) / "projects");
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

}  // namespace cairn::env
