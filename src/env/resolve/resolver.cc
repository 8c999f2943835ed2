#include "env/resolve/resolver.h"

#include <algorithm>
#include <climits>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "env/standards/wheel_tags.h"

namespace cairn::env {
namespace {

// A node of the search is a project ("numpy") or a project with one extra ("numpy[gpu]").
std::string BaseOf(const std::string& node) { return node.substr(0, node.find('[')); }

bool IsExtraNode(const std::string& node) { return node.find('[') != std::string::npos; }

// A requirement in force on a node.
struct Constraint {
  SpecifierSet spec;
  std::optional<Version> exact;  // an extra pins its project to the same version
  std::string text;              // for people: "z==1", "x[gpu]"
  int level = 0;                 // the decision that brought it; 0 for the top level
  std::string origin_node;       // that decision's node; empty for the top level
  std::string origin;            // "x 1.0"; empty for the top level
};

struct Dependency {
  std::string node;
  Constraint constraint;
};

struct Decision {
  std::string node;
  std::vector<const Candidate*> candidates;  // newest first
  size_t next = 0;
  const Candidate* chosen = nullptr;
  std::vector<Dependency> dependencies;  // of the chosen candidate
  size_t undo_mark = 0;                  // constraints added by the choice start here
  std::set<int> conflict;                // decisions that ruled candidates out
  bool backjumped_into = false;
  std::vector<std::string> rejected;  // why candidates were ruled out, for the explanation
};

class Solver {
 public:
  Solver(const ResolveOptions& options, CandidateProvider& provider)
      : options_(options), provider_(provider) {}

  Result<std::vector<ResolvedPackage>> Run() {
    for (const Requirement& r : options_.requirements) {
      if (!r.url.empty()) {
        return InvalidArgument("cannot lock '" + r.ToString() +
                               "': direct URL requirements are not supported; put the wheel in "
                               "a find-links directory and require it by name");
      }
      if (r.marker && !r.marker->Evaluate(options_.markers)) continue;  // not for this target
      const std::string project = NormalizeName(r.name);
      requested_.insert(project);
      Constraint c{r.specifier, std::nullopt, r.ToString(), 0, "", ""};
      AddConstraint(project, c);
      for (const std::string& extra : r.extras) AddConstraint(project + "[" + extra + "]", c);
    }
    for (;;) {
      CAIRN_ASSIGN_OR_RETURN(std::string node, PickNext());
      if (node.empty()) break;
      CAIRN_ASSIGN_OR_RETURN(const std::vector<Candidate>* versions, Versions(BaseOf(node)));
      Decision d;
      d.node = node;
      for (const Candidate& c : *versions) d.candidates.push_back(&c);
      d.undo_mark = undo_.size();
      stack_.push_back(std::move(d));
      CAIRN_RETURN_IF_ERROR(Advance());
    }
    return Chosen();
  }

 private:
  void AddConstraint(const std::string& node, Constraint c) {
    constraints_[node].push_back(std::move(c));
    undo_.push_back(node);
  }

  void UndoTo(size_t mark) {
    while (undo_.size() > mark) {
      constraints_[undo_.back()].pop_back();
      undo_.pop_back();
    }
  }

  // The installable versions of a project, best wheel of each, newest first; loaded once.
  Result<const std::vector<Candidate>*> Versions(const std::string& project) {
    if (auto it = versions_.find(project); it != versions_.end()) return &it->second;
    if (options_.progress) options_.progress(project);
    CAIRN_ASSIGN_OR_RETURN(std::vector<Candidate> all, provider_.Candidates(project));
    std::map<Version, Candidate, std::greater<Version>> best;  // newest first
    std::vector<std::string>& notes = notes_[project];
    std::set<Version> installable;
    for (Candidate& c : all) {
      if (c.rank < 0) continue;
      installable.insert(c.version);
      if (c.yanked) continue;
      if (!c.requires_python.empty()) {
        Result<SpecifierSet> rp = SpecifierSet::Parse(c.requires_python);
        if (rp.ok() && !rp->Contains(options_.python, true)) {
          notes.push_back(c.version.ToString() + " needs Python " + c.requires_python);
          continue;
        }
      }
      auto [it, inserted] = best.emplace(c.version, c);
      if (!inserted && (c.rank < it->second.rank ||
                        (c.rank == it->second.rank &&
                         CompareBuildTags(c.build_tag, it->second.build_tag) > 0))) {
        it->second = std::move(c);
      }
    }
    std::set<Version> noted;
    for (const Candidate& c : all) {
      if (c.rank >= 0 || installable.count(c.version) > 0 || !noted.insert(c.version).second) {
        continue;
      }
      notes.push_back(c.version.ToString() + " has no wheel for this platform (" + c.filename +
                      (all.size() > 1 ? ", ..." : "") + ")");
    }
    for (const Candidate& c : all) {
      if (c.rank >= 0 && c.yanked && best.count(c.version) == 0 &&
          noted.insert(c.version).second) {
        notes.push_back(c.version.ToString() + " is yanked");
      }
    }
    std::vector<Candidate>& out = versions_[project];
    bool any_final = false;
    for (auto& [v, c] : best) {
      any_final = any_final || !v.is_prerelease();
      out.push_back(std::move(c));
    }
    prereleases_ok_[project] = options_.prereleases || !any_final;
    return &out;
  }

  bool Fits(const Constraint& c, const std::string& project, const Version& v) const {
    if (c.exact) return v.Compare(*c.exact) == 0;
    auto pre = prereleases_ok_.find(project);
    const bool pre_ok = pre != prereleases_ok_.end() && pre->second;
    return c.spec.Contains(v, pre_ok ? std::optional<bool>(true) : std::nullopt);
  }

  // The undecided node with the fewest versions that fit its requirements; "" when none is left.
  Result<std::string> PickNext() {
    std::string best;
    size_t best_count = SIZE_MAX;
    for (const auto& [node, constraints] : constraints_) {
      if (constraints.empty() || pinned_.count(node) > 0) continue;
      const std::string project = BaseOf(node);
      CAIRN_ASSIGN_OR_RETURN(const std::vector<Candidate>* versions, Versions(project));
      size_t count = 0;
      for (const Candidate& c : *versions) {
        bool fits = true;
        for (const Constraint& k : constraints) fits = fits && Fits(k, project, c.version);
        if (fits) ++count;
      }
      // Projects before their extras at equal counts: an extra follows its project's choice.
      if (count < best_count ||
          (count == best_count && IsExtraNode(best) && !IsExtraNode(node))) {
        best = node;
        best_count = count;
      }
    }
    return best;
  }

  Result<const CoreMetadata*> MetadataOf(const Candidate& c) {
    const std::string key = c.url.empty() ? c.path : c.url;
    if (auto it = metadata_.find(key); it != metadata_.end()) return it->second.get();
    CAIRN_ASSIGN_OR_RETURN(CoreMetadata m, provider_.Metadata(c));
    auto& slot = metadata_[key];
    slot = std::make_unique<CoreMetadata>(std::move(m));
    return slot.get();
  }

  // What choosing `c` for `node` at `level` requires; nullopt (with `why`) when the candidate
  // cannot be used whatever else is chosen.
  Result<std::optional<std::vector<Dependency>>> DependenciesOf(const std::string& node,
                                                                const Candidate& c, int level,
                                                                std::string* why) {
    CAIRN_ASSIGN_OR_RETURN(const CoreMetadata* m, MetadataOf(c));
    const std::string origin = c.project + " " + c.version.ToString();
    if (NormalizeName(m->name) != c.project) {
      *why = origin + ": its metadata names another project ('" + m->name + "')";
      return std::optional<std::vector<Dependency>>();
    }
    if (!m->requires_python.empty()) {
      Result<SpecifierSet> rp = SpecifierSet::Parse(m->requires_python);
      if (rp.ok() && !rp->Contains(options_.python, true)) {
        *why = origin + " needs Python " + m->requires_python;
        return std::optional<std::vector<Dependency>>();
      }
    }
    std::vector<Dependency> deps;
    std::set<std::string> extras;
    const bool extra_node = IsExtraNode(node);
    if (extra_node) {
      const size_t open = node.find('[');
      extras.insert(node.substr(open + 1, node.size() - open - 2));
      Constraint same{SpecifierSet(), c.version, c.project + "==" + c.version.ToString(), level,
                      node, origin};
      deps.push_back({c.project, std::move(same)});
    }
    for (const std::string& text : m->requires_dist) {
      Result<Requirement> r = Requirement::Parse(text);
      if (!r.ok()) {
        *why = origin + " has a dependency cairn cannot read: " + r.status().message();
        return std::optional<std::vector<Dependency>>();
      }
      if (r->marker) {
        const bool here = r->marker->Evaluate(options_.markers, extras);
        // An extra's own dependencies are those its marker turns on.
        if (!here || (extra_node && r->marker->Evaluate(options_.markers))) continue;
      } else if (extra_node) {
        continue;  // the project's own dependencies come with the project
      }
      if (!r->url.empty()) {
        *why = origin + " depends on a direct URL (" + r->ToString() + ")";
        return std::optional<std::vector<Dependency>>();
      }
      const std::string project = NormalizeName(r->name);
      Constraint k{r->specifier, std::nullopt, r->ToString(), level, node, origin};
      for (const std::string& extra : r->extras) deps.push_back({project + "[" + extra + "]", k});
      deps.push_back({project, std::move(k)});
    }
    return std::optional<std::vector<Dependency>>(std::move(deps));
  }

  // Chooses the next candidate of the newest decision that fits; when none is left, goes back
  // to the latest decision among those that ruled candidates out. Fails when that is the top
  // level.
  Status Advance() {
    for (;;) {
      Decision& d = stack_.back();
      const int level = static_cast<int>(stack_.size());
      const std::string project = BaseOf(d.node);
      while (d.next < d.candidates.size()) {
        const Candidate& c = *d.candidates[d.next++];
        const Constraint* failed = nullptr;
        for (const Constraint& k : constraints_[d.node]) {
          if (!Fits(k, project, c.version) && (failed == nullptr || k.level < failed->level)) {
            failed = &k;
          }
        }
        if (failed != nullptr) {
          d.conflict.insert(failed->level);
          Reject(d, c.version.ToString() + " does not fit " + failed->text);
          continue;
        }
        std::string why;
        CAIRN_ASSIGN_OR_RETURN(std::optional<std::vector<Dependency>> deps,
                               DependenciesOf(d.node, c, level, &why));
        if (!deps) {
          Reject(d, why);
          continue;
        }
        bool clash = false;
        for (const Dependency& dep : *deps) {
          auto pin = pinned_.find(dep.node);
          if (pin == pinned_.end()) continue;
          const Candidate* other = stack_[static_cast<size_t>(pin->second - 1)].chosen;
          if (Fits(dep.constraint, BaseOf(dep.node), other->version)) continue;
          d.conflict.insert(pin->second);
          Reject(d, c.project + " " + c.version.ToString() + " needs " + dep.constraint.text +
                        ", but " + dep.node + " " + other->version.ToString() + " is chosen (" +
                        Chain(dep.node) + ")");
          clash = true;
          break;
        }
        if (clash) continue;
        d.chosen = &c;
        d.dependencies = std::move(*deps);
        pinned_[d.node] = level;
        for (const Dependency& dep : d.dependencies) AddConstraint(dep.node, dep.constraint);
        return Status::Ok();
      }
      // Nothing fits here.
      if (!d.backjumped_into) explanation_ = Explain(d);
      const int target = d.conflict.empty() ? 0 : *d.conflict.rbegin();
      if (target == 0) return FailedPrecondition(explanation_);
      std::set<int> carry = std::move(d.conflict);
      carry.erase(target);
      while (static_cast<int>(stack_.size()) > target) {
        Decision& top = stack_.back();
        UndoTo(top.undo_mark);
        pinned_.erase(top.node);
        if (static_cast<int>(stack_.size()) == target) break;
        stack_.pop_back();
      }
      Decision& back = stack_.back();
      UndoTo(back.undo_mark);
      pinned_.erase(back.node);
      back.chosen = nullptr;
      back.dependencies.clear();
      back.conflict.insert(carry.begin(), carry.end());
      back.backjumped_into = true;
    }
  }

  void Reject(Decision& d, std::string why) {
    if (d.rejected.size() < 8) d.rejected.push_back(std::move(why));
  }

  // How `node` came to be needed: its earliest requirement, back to the top level.
  std::string Chain(const std::string& node) const {
    std::string out;
    std::string at = node;
    for (int hops = 0; hops < 50; ++hops) {
      auto it = constraints_.find(at);
      if (it == constraints_.end() || it->second.empty()) break;
      const Constraint* first = &it->second.front();
      for (const Constraint& k : it->second) {
        if (k.level < first->level) first = &k;
      }
      if (!out.empty()) out += ", ";
      if (first->level == 0) {
        out += "required by " + first->text + " (top level)";
        break;
      }
      out += "required by " + first->origin;
      at = first->origin_node;
    }
    return out;
  }

  std::string Explain(const Decision& d) const {
    std::string out = "no version of " + d.node + " fits all of these requirements:";
    for (const Constraint& k : constraints_.at(d.node)) {
      out += "\n  " + k.text + ": ";
      if (k.level == 0) {
        out += "a top-level requirement";
      } else {
        out += "required by " + k.origin;
        const std::string above = Chain(k.origin_node);
        if (!above.empty()) out += ", " + above;
      }
    }
    auto notes = notes_.find(BaseOf(d.node));
    const size_t candidates = d.candidates.size();
    if (candidates == 0) {
      out += "\nno wheel of " + BaseOf(d.node) + " in the sources can be installed here";
    } else {
      out += "\nversions tried:";
      for (const std::string& r : d.rejected) out += "\n  " + r;
    }
    if (notes != notes_.end()) {
      for (size_t i = 0; i < notes->second.size() && i < 8; ++i) {
        out += "\n  " + notes->second[i];
      }
    }
    return out;
  }

  std::vector<ResolvedPackage> Chosen() {
    std::map<std::string, ResolvedPackage> out;
    for (const Decision& d : stack_) {
      const std::string project = BaseOf(d.node);
      ResolvedPackage& p = out[project];
      if (!IsExtraNode(d.node)) {
        p.candidate = *d.chosen;
        const auto& m = metadata_.at(d.chosen->url.empty() ? d.chosen->path : d.chosen->url);
        p.metadata = *m;
      }
      p.requested = p.requested || requested_.count(project) > 0;
      for (const Dependency& dep : d.dependencies) {
        const std::string name = BaseOf(dep.node);
        if (name != project) p.dependencies.push_back(name);
      }
    }
    std::vector<ResolvedPackage> sorted;
    for (auto& [name, p] : out) {
      std::sort(p.dependencies.begin(), p.dependencies.end());
      p.dependencies.erase(std::unique(p.dependencies.begin(), p.dependencies.end()),
                           p.dependencies.end());
      sorted.push_back(std::move(p));
    }
    return sorted;
  }

  const ResolveOptions& options_;
  CandidateProvider& provider_;
  std::map<std::string, std::vector<Constraint>> constraints_;
  std::vector<std::string> undo_;  // the node of each constraint added, in order
  std::vector<Decision> stack_;    // decision N is stack_[N - 1]
  std::map<std::string, int> pinned_;  // node → its decision
  std::map<std::string, std::vector<Candidate>> versions_;
  std::map<std::string, bool> prereleases_ok_;
  std::map<std::string, std::vector<std::string>> notes_;  // versions left out, and why
  std::map<std::string, std::unique_ptr<CoreMetadata>> metadata_;
  std::set<std::string> requested_;
  std::string explanation_;
};

}  // namespace

Result<std::vector<ResolvedPackage>> Resolve(const ResolveOptions& options,
                                             CandidateProvider& provider) {
  Solver solver(options, provider);
  return solver.Run();
}

}  // namespace cairn::env
