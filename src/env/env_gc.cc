#include "env/env_gc.h"

namespace cairn::env {

std::set<std::string> EnvironmentsKept(const std::vector<ProjectPointers>& projects, int keep) {
  std::set<std::string> kept;
  for (const ProjectPointers& project : projects) {
    if (project.active) kept.insert(*project.active);
    std::set<std::string> recent;
    for (auto it = project.history.rbegin();
         it != project.history.rend() && static_cast<int>(recent.size()) < keep; ++it) {
      recent.insert(*it);
    }
    kept.insert(recent.begin(), recent.end());
  }
  return kept;
}

Result<GcReport> CollectGarbage(EnvStore& store, const GcOptions& options) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<StoredEnvironment> all, store.List());
  std::vector<ProjectPointers> projects;
  for (const std::string& dir : store.Projects()) {
    ProjectEnv pointers(dir);
    projects.push_back({pointers.ActivePath(), pointers.History()});
  }
  const std::set<std::string> kept = EnvironmentsKept(projects, options.keep);
  GcReport report;
  for (const StoredEnvironment& e : all) {
    if (kept.count(e.path) > 0) continue;
    if (options.on_remove) options.on_remove(e);
    if (!options.dry_run) CAIRN_RETURN_IF_ERROR(store.Remove(e.id));
    ++report.removed;
  }
  report.kept = all.size() - report.removed;
  return report;
}

}  // namespace cairn::env
