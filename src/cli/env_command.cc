// `cairn env`: lock a project's environment, build it, switch between built versions, check
// and compare environments. The work is in the env layer (env/resolve/locker.h, env/env_store.h,
// env/env_gc.h, env/env_check.h, env/env_diff.h); this file is wiring.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/env_common.h"
#include "env/env_gc.h"
#include "env/env_store.h"
#include "env/index/wheel_cache.h"
#include "env/install/venv_layout.h"
#include "env/manifest.h"
#include "env/resolve/locker.h"
#include "report/run_report.h"
#include "util/file.h"

extern char** environ;

namespace cairn::cli {

namespace fs = std::filesystem;

int Fail(const Status& s) {
  std::fprintf(stderr, "error: %s\n", s.message().c_str());
  return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

std::pair<CLI::App*, std::shared_ptr<EnvFlags>> AddEnvCommand(
    CLI::App* group, Action* action, const std::string& name, const std::string& help,
    std::function<int(const EnvFlags&)> run) {
  auto added = AddSubcommand<EnvFlags>(group, action, name, help, std::move(run));
  added.first->add_option("--project", added.second->project,
                          "Project directory (default: the nearest with cairn.yaml, from here up)");
  return added;
}

std::string ProjectDir(const EnvFlags& flags) { return env::FindProjectDir(flags.project); }

std::string LockPathOf(const EnvFlags& flags) {
  if (!flags.lock.empty()) return flags.lock;
  return (fs::path(ProjectDir(flags)) / "pylock.toml").string();
}

// The active environment's prefix, or an error saying how to get one.
Result<std::string> ActiveOrExplain(const EnvFlags& flags) {
  const std::string project = ProjectDir(flags);
  std::optional<std::string> active = env::ProjectEnv(project).ActivePath();
  if (!active) {
    return FailedPrecondition("the project at " + project +
                              " has no active environment: `cairn env build` makes one");
  }
  return *active;
}

namespace {


// A progress line that rewrites itself on a terminal and is quiet elsewhere except for the
// last line of each kind.
class Progress {
 public:
  Progress() : tty_(isatty(STDERR_FILENO) != 0) {}
  ~Progress() { Done(); }
  void operator()(const std::string& line) {
    if (!tty_) return;
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    shown_ = true;
  }
  void Done() {
    if (shown_) std::fprintf(stderr, "\r\033[K");
    shown_ = false;
  }

 private:
  bool tty_;
  bool shown_ = false;
};

Result<env::LinkMode> ParseLinkMode(const std::string& text) {
  if (text == "auto") return env::LinkMode::kAuto;
  if (text == "reflink") return env::LinkMode::kReflink;
  if (text == "hardlink") return env::LinkMode::kHardlink;
  if (text == "copy") return env::LinkMode::kCopy;
  return InvalidArgument("--link takes auto, reflink, hardlink or copy, got '" + text + "'");
}

int Lock(const EnvFlags& flags) {
  const std::string project = ProjectDir(flags);
  Result<env::EnvironmentSpec> spec = env::ReadEnvironmentSpec(project);
  if (!spec.ok()) return Fail(spec.status());
  const std::string out = flags.output.empty() ? LockPathOf(flags) : flags.output;
  if (flags.check) {
    Result<env::Lock> lock = env::ReadLockFile(out);
    if (!lock.ok()) return Fail(lock.status());
    if (lock->inputs_hash != spec->InputsHash()) {
      std::printf("%s is stale: cairn.yaml's environment changed since it was locked; run "
                  "`cairn env lock`\n", out.c_str());
      return 1;
    }
    std::printf("%s is up to date with cairn.yaml\n", out.c_str());
    return 0;
  }
  env::LockOptions options;
  if (!flags.python.empty()) options.python = flags.python;
  std::error_code ec;
  options.lock_dir = fs::absolute(out, ec).parent_path().string();
  Progress progress;
  options.progress = [&progress](const std::string& line) { progress(line); };
  Result<env::Lock> lock = env::LockEnvironment(*spec, options);
  progress.Done();
  if (!lock.ok()) {
    std::fprintf(stderr, "error: cannot lock the environment: %s\n",
                 lock.status().message().c_str());
    return lock.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  const std::string text = env::FormatLock(*lock);
  Status written = WriteFileAtomic(out, text);
  if (!written.ok()) return Fail(written);
  std::printf("locked %zu packages for %s into %s (environment %s)\n", lock->packages.size(),
              lock->target.c_str(), out.c_str(), env::LockHash(text).substr(0, 16).c_str());
  return 0;
}

int Build(const EnvFlags& flags) {
  const std::string lock_path = LockPathOf(flags);
  env::BuildOptions options;
  options.python = flags.python;
  options.jobs = flags.jobs;
  Result<env::LinkMode> link = ParseLinkMode(flags.link);
  if (!link.ok()) return Fail(link.status());
  options.link = *link;
  Progress progress;
  options.progress = [&progress](const std::string& line) { progress(line); };
  env::EnvStore store(env::EnvStore::DefaultRoot());
  Result<env::BuiltEnvironment> built = store.Build(lock_path, options);
  progress.Done();
  if (!built.ok()) {
    std::fprintf(stderr, "error: cannot build %s: %s\n", lock_path.c_str(),
                 built.status().message().c_str());
    return 1;
  }
  if (built->already_built) {
    std::printf("environment %s is built already: %s\n", built->id.c_str(), built->path.c_str());
  } else {
    std::printf("built environment %s: %zu packages, %zu files, %zu wheels downloaded, in %.2f s\n"
                "  %s\n",
                built->id.c_str(), built->packages, built->files, built->downloaded,
                built->seconds, built->path.c_str());
  }
  if (flags.no_use) return 0;
  const std::string project = ProjectDir(flags);
  env::ProjectEnv pointers(project);
  if (pointers.ActivePath() != built->path) {
    Status used = pointers.Use(built->path);
    if (!used.ok()) return Fail(used);
    (void)store.RegisterProject(project);
    std::printf("active environment of %s: %s\n", project.c_str(), built->id.c_str());
  }
  return 0;
}

int Use(const EnvFlags& flags) {
  if (flags.args.size() != 1) {
    std::fprintf(stderr, "error: usage: cairn env use ID|LOCKFILE\n");
    return 2;
  }
  env::EnvStore store(env::EnvStore::DefaultRoot());
  std::string id = flags.args[0];
  std::error_code ec;
  if (fs::is_regular_file(id, ec)) {  // a lock file: its environment
    Result<std::string> text = ReadFile(id);
    if (!text.ok()) return Fail(text.status());
    id = env::LockHash(*text).substr(0, 16);
  }
  Result<env::StoredEnvironment> found = store.Find(id);
  if (!found.ok()) {
    return Fail(found.status().code() == StatusCode::kNotFound
                    ? NotFound(found.status().message() + "; build it with `cairn env build`")
                    : found.status());
  }
  const std::string project = ProjectDir(flags);
  Status used = env::ProjectEnv(project).Use(found->path);
  if (!used.ok()) return Fail(used);
  (void)store.RegisterProject(project);
  std::printf("active environment of %s: %s\n", project.c_str(), found->id.c_str());
  return 0;
}

int Rollback(const EnvFlags& flags) {
  const std::string project = ProjectDir(flags);
  Result<std::string> back = env::ProjectEnv(project).Rollback();
  if (!back.ok()) return Fail(back.status());
  std::printf("active environment of %s: %s\n", project.c_str(),
              fs::path(*back).filename().c_str());
  return 0;
}

int List(const EnvFlags& flags) {
  env::EnvStore store(env::EnvStore::DefaultRoot());
  Result<std::vector<env::StoredEnvironment>> all = store.List();
  if (!all.ok()) return Fail(all.status());
  const std::string project = ProjectDir(flags);
  env::ProjectEnv pointers(project);
  const std::optional<std::string> active = pointers.ActivePath();
  std::vector<std::string> history = pointers.History();
  auto used_here = [&history](const std::string& path) {
    return std::find(history.begin(), history.end(), path) != history.end();
  };
  size_t shown = 0;
  if (!flags.json) {
    std::printf("  %-16s  %-20s  %-8s  %8s  %s\n", "environment", "created", "python", "packages",
                "runs");
  }
  for (const env::StoredEnvironment& e : *all) {
    if (!flags.all && !used_here(e.path)) continue;
    ++shown;
    const bool is_active = active && *active == e.path;
    if (flags.json) {
      std::string runs;
      for (const std::string& r : e.runs) runs += (runs.empty() ? "\"" : ",\"") + r + "\"";
      std::printf("{\"id\":\"%s\",\"path\":\"%s\",\"lock_hash\":\"%s\",\"created\":\"%s\","
                  "\"python\":\"%s\",\"target\":\"%s\",\"packages\":%zu,\"active\":%s,"
                  "\"runs\":[%s]}\n",
                  e.id.c_str(), e.path.c_str(), e.lock_hash.c_str(), e.created.c_str(),
                  e.python.c_str(), e.target.c_str(), e.packages, is_active ? "true" : "false",
                  runs.c_str());
      continue;
    }
    std::string runs;
    for (size_t i = 0; i < e.runs.size() && i < 3; ++i) {
      runs += (i > 0 ? " " : "") + e.runs[e.runs.size() - 1 - i].substr(0, 8);
    }
    if (e.runs.size() > 3) runs += " (+" + std::to_string(e.runs.size() - 3) + ")";
    if (e.runs.empty()) runs = "-";
    std::printf("%s %-16s  %-20s  %-8s  %8zu  %s\n", is_active ? "*" : " ", e.id.c_str(),
                e.created.c_str(), e.python.c_str(), e.packages, runs.c_str());
  }
  if (!flags.json && shown == 0) {
    std::printf(flags.all ? "no environments in %s\n"
                          : "no environments used by this project (`--all` lists the whole "
                            "store, %s)\n",
                store.root().c_str());
  }
  return 0;
}

int Gc(const EnvFlags& flags) {
  env::EnvStore store(env::EnvStore::DefaultRoot());
  env::GcOptions options;
  options.keep = flags.keep;
  options.dry_run = flags.dry_run;
  options.wheel_cache = env::DefaultCacheRoot();
  Result<int64_t> age = ParseMaxAge(flags.max_age);
  if (!age.ok()) return Fail(age.status());
  options.wheel_max_age_ms = *age;
  options.on_remove = [&flags](const env::StoredEnvironment& e) {
    std::printf("%s %s (created %s)\n", flags.dry_run ? "would remove" : "removing", e.id.c_str(),
                e.created.c_str());
  };
  Result<env::GcReport> report = env::CollectGarbage(store, options);
  if (!report.ok()) return Fail(report.status());
  std::printf("%zu environment(s) %s, %zu kept; %zu cached wheel(s) %s, %s %s\n", report->removed,
              flags.dry_run ? "to remove" : "removed", report->kept, report->wheels_removed,
              flags.dry_run ? "to remove" : "removed",
              report::FormatSize(report->wheel_bytes_freed).c_str(),
              flags.dry_run ? "to free" : "freed");
  return 0;
}

// Runs `argv` in the environment (env::ActivationVariables). Replaces this process.
int ExecIn(const std::string& prefix, std::vector<std::string> argv) {
  for (const auto& [name, value] : env::ActivationVariables(prefix)) {
    setenv(name.c_str(), value.c_str(), 1);
  }
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  execvp(args[0], args.data());
  std::fprintf(stderr, "error: cannot run %s: %s\n", argv[0].c_str(), strerror(errno));
  return errno == ENOENT ? 127 : 126;
}

int Shell(const EnvFlags& flags) {
  Result<std::string> prefix = ActiveOrExplain(flags);
  if (!prefix.ok()) return Fail(prefix.status());
  const char* shell = std::getenv("SHELL");
  std::fprintf(stderr, "cairn: a shell in environment %s; `exit` leaves it\n",
               fs::path(*prefix).filename().c_str());
  return ExecIn(*prefix, {shell != nullptr && *shell != '\0' ? shell : "/bin/sh"});
}

int Exec(const EnvFlags& flags, const std::vector<std::string>& command) {
  if (command.empty()) {
    std::fprintf(stderr, "error: usage: cairn env exec -- COMMAND [ARGS]\n");
    return 2;
  }
  Result<std::string> prefix = ActiveOrExplain(flags);
  if (!prefix.ok()) return Fail(prefix.status());
  return ExecIn(*prefix, command);
}

}  // namespace

void RegisterEnv(CLI::App& app, Action* action, std::vector<std::string> after_dashes) {
  CLI::App* group = app.add_subcommand(
      "env",
      "Reproducible environments: lock the environment section of cairn.yaml into pylock.toml,\n"
      "build it into an immutable environment (in seconds from the wheel cache), switch\n"
      "between built versions, check an environment against its lock and the host, and compare\n"
      "environments. See docs/env.md.");
  group->require_subcommand(1);
  auto add = [&](const std::string& name, const std::string& help,
                 std::function<int(const EnvFlags&)> run) {
    return AddEnvCommand(group, action, name, help, std::move(run));
  };

  auto [lock, lock_flags] = add(
      "lock",
      "Resolve the environment section of cairn.yaml against its package sources and write\n"
      "pylock.toml: every package pinned to one wheel with its size and SHA-256. The same\n"
      "inputs give the same bytes. On a conflict, explains it as chains of requirements.",
      Lock);
  lock->add_option("-o,--output", lock_flags->output, "Where to write (default: pylock.toml in the project)");
  lock->add_option("--python", lock_flags->python,
                   "Interpreter whose version is used when cairn.yaml names none");
  lock->add_flag("--check", lock_flags->check,
                 "Only say whether the lock is up to date with cairn.yaml (exit 1 when stale)");

  auto [build, build_flags] = add(
      "build",
      "Build the environment a lock describes, never re-resolving: fetch each wheel into the\n"
      "wheel cache (size and SHA-256 verified), unpack it once, link it into a new environment\n"
      "in the store, and make it the project's active environment. A lock built before is\n"
      "reused as it is.",
      Build);
  build->add_option("--lock", build_flags->lock, "Lock file (default: pylock.toml in the project)");
  build->add_option("--python", build_flags->python,
                    "Base interpreter (default: pythonX.Y on PATH for the lock's X.Y)");
  build->add_option("--link", build_flags->link,
                    "How files come from the unpacked cache: auto (reflink, else hard link, else "
                    "copy), reflink, hardlink or copy")
      ->capture_default_str();
  build->add_option("-j,--jobs", build_flags->jobs, "Parallel downloads")->capture_default_str();
  build->add_flag("--no-use", build_flags->no_use, "Build only; keep the active environment");

  auto [use, use_flags] = add("use",
                              "Make a built environment the project's active one: an environment "
                              "id (or a unique prefix) or a lock file.",
                              Use);
  use->add_option("environment", use_flags->args, "Environment id or lock file")->required();

  add("rollback", "Switch back to the environment that was active before the current one.",
      Rollback);

  auto [ls, ls_flags] = add("ls",
                            "List the environments this project has used (* marks the active "
                            "one): id, creation time, Python, packages, and the runs that used "
                            "each (newest first).",
                            List);
  ls->add_flag("--all", ls_flags->all, "Every environment in the store");
  ls->add_flag("--json", ls_flags->json, "One JSON object per line");

  auto [gc, gc_flags] = add("gc",
                            "Remove environments no project uses: kept are each known project's "
                            "active environment and its last --keep ones. Then remove the cached "
                            "wheels no kept environment's lock names that were not used for "
                            "--max-age.",
                            Gc);
  gc->add_option("--keep", gc_flags->keep, "Recent environments kept per project")
      ->capture_default_str();
  gc->add_option("--max-age", gc_flags->max_age,
                 "Remove cached wheels no kept environment needs once unused this long: 30d "
                 "(default), 12h, ...; 0 keeps them all");
  gc->add_flag("--dry-run", gc_flags->dry_run, "Only say what would be removed");

  add("shell", "Start $SHELL with the active environment first on PATH (VIRTUAL_ENV set).",
      Shell);

  RegisterEnvInspect(group, action);

  auto [exec, exec_flags] = add("exec", "Run a command in the active environment: cairn env exec -- CMD [ARGS]", nullptr);
  exec->prefix_command();
  exec->allow_extras();
  exec->callback([flags = exec_flags, action, exec = exec, after_dashes] {
    std::vector<std::string> command = exec->remaining();
    command.insert(command.end(), after_dashes.begin(), after_dashes.end());
    *action = [flags, command] { return Exec(*flags, command); };
  });

}

}  // namespace cairn::cli
