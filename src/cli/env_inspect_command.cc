// `cairn env check|diff|snapshot|import-conda`: inspecting and comparing environments. The work
// is in the env layer (env/env_check.h, env/env_diff.h, env/conda.h); this file is wiring.
#include <cstdio>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/env_common.h"
#include "report/run_report.h"
#include "client/tracking_client.h"
#include "env/conda.h"
#include "env/env_check.h"
#include "env/env_diff.h"
#include "env/env_store.h"
#include "env/host_facts.h"
#include "env/standards/pep508.h"
#include "env/project_env.h"
#include "env/python_env.h"
#include "util/file.h"

namespace cairn::cli {
namespace {

namespace fs = std::filesystem;

int Check(const EnvFlags& flags) {
  Result<std::string> prefix = ActiveOrExplain(flags);
  if (!prefix.ok()) return Fail(prefix.status());
  Result<env::Lock> lock = env::ReadLockFile(*prefix + "/.cairn/lock.toml");
  if (!lock.ok()) return Fail(lock.status());
  env::HostFacts host;
  if (!flags.host.empty()) {
    Result<std::string> text = ReadFile(flags.host);
    if (!text.ok()) return Fail(text.status());
    Result<env::HostFacts> parsed = env::ParseHostFactsJson(*text);
    if (!parsed.ok()) return Fail(parsed.status().WithContext(flags.host));
    host = *parsed;
  } else {
    host = env::CollectHostFacts(*env::RealHostProbe());
  }
  std::string site;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(*prefix + "/lib", ec)) {
    if (entry.path().filename().string().starts_with("python")) {
      site = (entry.path() / "site-packages").string();
    }
  }
  env::EnvCheckOptions options;
  options.verify_files = !flags.no_files;
  // Markers as the environment's interpreter sees them.
  Result<env::StoredEnvironment> stored = env::LoadStoredEnvironment(*prefix);
  env::MarkerEnvironment markers;
  if (stored.ok() && !stored->python.empty()) {
    markers = env::MarkerEnvironment::LinuxCPython(stored->python,
                                                   host.machine.empty() ? "x86_64" : host.machine);
    options.markers = &markers;
  }
  // A layered environment names its base's site-packages in a .pth file (env_store.h).
  env::Lock base_lock;
  if (Result<std::string> pth = ReadFile(fs::path(site) / "_cairn_base.pth"); pth.ok()) {
    std::string base_site = pth->substr(0, pth->find('\n'));
    const fs::path base_prefix = fs::path(base_site).parent_path().parent_path().parent_path();
    Result<env::Lock> parsed = env::ReadLockFile((base_prefix / ".cairn" / "lock.toml").string());
    if (parsed.ok()) {
      base_lock = *parsed;
      options.base_lock = &base_lock;
      options.base_site_packages = base_site;
    }
  }
  Result<env::EnvCheckReport> report = env::CheckEnvironment(*lock, site, host, options);
  if (!report.ok()) return Fail(report.status());
  std::fputs(
      (flags.json ? env::CheckReportJson(*report) + "\n" : env::FormatCheckReport(*report)).c_str(),
      stdout);
  return report->ok() ? 0 : 1;
}

// A lock file, an environment in the store (id or prefix), or a run (its recorded snapshot).
Result<env::EnvDescription> Describe(const std::string& what, const std::string& tracking_uri) {
  std::error_code ec;
  if (fs::is_regular_file(what, ec)) {
    CAIRN_ASSIGN_OR_RETURN(std::string text, ReadFile(what));
    return env::DescribeLockText(text, what);
  }
  if (fs::is_regular_file(fs::path(what) / ".cairn" / "lock.toml", ec)) {
    CAIRN_ASSIGN_OR_RETURN(std::string text, ReadFile(fs::path(what) / ".cairn" / "lock.toml"));
    return env::DescribeLockText(text, what);
  }
  env::EnvStore store(env::EnvStore::DefaultRoot());
  if (Result<env::StoredEnvironment> e = store.Find(what); e.ok()) {
    CAIRN_ASSIGN_OR_RETURN(std::string text, ReadFile(e->path + "/.cairn/lock.toml"));
    return env::DescribeLockText(text, "environment " + e->id);
  }
  // A run: the environment snapshot `cairn run` recorded, and the host it ran on.
  auto client = ConnectOrExplain(tracking_uri);
  if (client == nullptr) return InvalidArgument("bad tracking URI");
  CAIRN_ASSIGN_OR_RETURN(core::Run run, report::ResolveRun(*client, what));
  return report::FetchRunEnvironment(*client, run);
}

std::string tracking_uri_flag;

int Diff(const EnvFlags& flags) {
  if (flags.args.size() != 2) {
    std::fprintf(stderr, "error: usage: cairn env diff A B (lock files, environments or runs)\n");
    return 2;
  }
  Result<env::EnvDescription> a = Describe(flags.args[0], tracking_uri_flag);
  if (!a.ok()) return Fail(a.status().WithContext(flags.args[0]));
  Result<env::EnvDescription> b = Describe(flags.args[1], tracking_uri_flag);
  if (!b.ok()) return Fail(b.status().WithContext(flags.args[1]));
  env::EnvDiff diff = env::DiffEnvironments(*a, *b);
  if (flags.json) {
    std::printf("%s\n", env::EnvDiffJson(diff).c_str());
  } else {
    std::fputs(
        env::FormatEnvDiff(diff, flags.args[0], flags.args[1], report::DetectOutputStyle().color)
            .c_str(),
        stdout);
  }
  return diff.empty() ? 0 : 1;
}

int Snapshot(const EnvFlags& flags) {
  // nvidia-smi and the interpreter each take a moment: ask both at once.
  std::future<env::HostFacts> host =
      std::async(std::launch::async, [] { return env::CollectHostFacts(*env::RealHostProbe()); });
  Result<env::EnvSnapshot> snapshot =
      env::SnapshotPythonEnvironment(flags.python.empty() ? "python3" : flags.python);
  if (!snapshot.ok()) return Fail(snapshot.status());
  std::string text =
      snapshot->toml + "\n" + env::HostFactsToml(host.get(), "tool.cairn.host-facts");
  // A conda environment: its conda-meta records too.
  if (Result<std::vector<env::CondaPackage>> conda =
          env::ReadCondaMeta(snapshot->interpreter.prefix);
      conda.ok()) {
    text += env::CondaTomlTables(*conda);
  }
  if (flags.output.empty()) {
    std::fputs(text.c_str(), stdout);
    return 0;
  }
  Status s = WriteFileAtomic(flags.output, text);
  if (!s.ok()) return Fail(s);
  std::printf("wrote a snapshot of %zu packages to %s\n", snapshot->distributions.size(),
              flags.output.c_str());
  return 0;
}

int ImportConda(const EnvFlags& flags) {
  if (flags.args.size() != 1) {
    std::fprintf(stderr, "error: usage: cairn env import-conda EXPLICIT_FILE|CONDA_PREFIX\n");
    return 2;
  }
  const std::string& from = flags.args[0];
  std::error_code ec;
  Result<std::vector<env::CondaPackage>> packages =
      fs::is_directory(from, ec) ? env::ReadCondaMeta(from) : [&]() {
        Result<std::string> text = ReadFile(from);
        if (!text.ok()) return Result<std::vector<env::CondaPackage>>(text.status());
        return env::ParseCondaExplicit(*text, from);
      }();
  if (!packages.ok()) return Fail(packages.status());
  const std::string lock_path = LockPathOf(flags);
  Result<env::Lock> lock = env::ReadLockFile(lock_path);
  if (!lock.ok()) return Fail(lock.status());
  lock->conda = *packages;
  Status s = WriteFileAtomic(lock_path, env::FormatLock(*lock));
  if (!s.ok()) return Fail(s);
  std::printf("imported %zu conda packages into %s\n", packages->size(), lock_path.c_str());
  return 0;
}

}  // namespace

void RegisterEnvInspect(CLI::App* group, Action* action) {
  auto add = [&](const std::string& name, const std::string& help,
                 std::function<int(const EnvFlags&)> run) {
    return AddEnvCommand(group, action, name, help, std::move(run));
  };
  auto [check, check_flags] =
      add("check",
          "Compare the active environment with its lock (missing, extra and other versions of\n"
          "packages; installed files changed since install, by their RECORD hashes) and the host\n"
          "with the lock's host requirements (driver for the CUDA major, driver range, compute\n"
          "capability, glibc). Exits 1 on a violation.",
          Check);
  check->add_flag("--json", check_flags->json, "The report as one JSON object");
  check->add_option("--host", check_flags->host,
                    "Check against the host facts in this host.json (a run's, or another "
                    "machine's) instead of this host");
  check->add_flag("--no-files", check_flags->no_files, "Do not verify installed files");

  auto [diff, diff_flags] =
      add("diff",
          "Compare two environments: each a lock file, an environment (id or path) or a run (its\n"
          "recorded snapshot). Lists packages added, removed and changed, interpreter and host\n"
          "requirement changes and, between snapshots or runs, the hosts' differences (OS, glibc,\n"
          "CPU, GPUs, driver, CUDA). The output is that of `cairn runs diff-env`. Exits 0 when\n"
          "they are the same, 1 when they differ.",
          Diff);
  diff->add_option("environments", diff_flags->args, "A B")->expected(2)->required();
  diff->add_flag("--json", diff_flags->json, "The differences as one JSON object");
  AddTrackingUriOption(diff, &tracking_uri_flag);

  auto [snapshot, snapshot_flags] =
      add("snapshot",
          "Freeze an existing environment as it is, without rebuilding anything: its installed\n"
          "distributions (.dist-info), interpreter, the host's facts (OS, glibc, CPU, GPUs,\n"
          "driver, CUDA) and, for conda environments, conda-meta, in lock shape (not\n"
          "installable: installed wheels keep no hash of their file).",
          Snapshot);
  snapshot->add_option("--python", snapshot_flags->python, "Interpreter (default: python3)");
  snapshot->add_option("-o,--output", snapshot_flags->output, "Write to a file instead of stdout");

  auto [conda, conda_flags] = add(
      "import-conda",
      "Import conda packages into the lock's [tool.cairn] table, from a `conda list --explicit`\n"
      "file or a conda environment's prefix (conda-meta), so they are checked and diffed.",
      ImportConda);
  conda->add_option("source", conda_flags->args, "Explicit spec file or conda prefix")->required();
  conda->add_option("--lock", conda_flags->lock, "Lock file (default: pylock.toml in the project)");
}

}  // namespace cairn::cli
