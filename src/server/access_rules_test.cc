#include "server/access_rules.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "server/cairn_api.h"
#include "server/routes.h"

namespace cairn::server {
namespace {

// A concrete path for a route pattern: each `*` becomes a segment.
std::string Concrete(std::string_view pattern) {
  std::string out;
  for (char c : pattern) out += c == '*' ? std::string("x1") : std::string(1, c);
  return out;
}

template <typename Table>
void ExpectEveryRouteHasARule(Api api, const Table& table, std::set<const AccessRule*>* used) {
  for (const auto& route : table) {
    const AccessRule* rule = FindAccessRule(api, route.method, Concrete(route.path));
    EXPECT_NE(rule, nullptr) << route.method << " " << route.path
                             << " has no access rule in access_rules.cc";
    if (rule != nullptr) used->insert(rule);
  }
}

TEST(AccessRulesTest, EveryRouteHasARuleAndEveryRuleARoute) {
  std::set<const AccessRule*> used;
  ExpectEveryRouteHasARule(Api::kMlflow, MlflowRoutes(), &used);
  ExpectEveryRouteHasARule(Api::kMlflow, MlflowAuthRoutes(), &used);
  ExpectEveryRouteHasARule(Api::kMlflow, RegistryRoutes(), &used);
  ExpectEveryRouteHasARule(Api::kMlflow, MlflowAsyncRoutes(), &used);
  ExpectEveryRouteHasARule(Api::kMlflow, MlflowStreamRoutes(), &used);
  ExpectEveryRouteHasARule(Api::kCairn, CairnRoutes(), &used);
  ExpectEveryRouteHasARule(Api::kCairn, CairnIdentityRoutes(), &used);
  ExpectEveryRouteHasARule(Api::kCairn, CairnRegistryRoutes(), &used);
  ExpectEveryRouteHasARule(Api::kCairn, CairnTaskRoutes(), &used);
  ExpectEveryRouteHasARule(Api::kCairn, CairnDatasetRoutes(), &used);
  // The artifact proxy, MLflow's plain routes and datasets' blob uploads are served by the
  // server itself, not from a route table.
  for (const AccessRule& rule : AccessRules()) {
    if (rule.api == Api::kArtifacts || rule.api == Api::kPlain) continue;
    if (rule.api == Api::kCairn && std::string_view(rule.path).starts_with("datasets/blobs")) {
      continue;
    }
    EXPECT_EQ(used.count(&rule), 1u)
        << rule.method << " " << rule.path << " is a rule without a route";
  }
}

TEST(AccessRulesTest, RulesThatNameAnObjectSayWhere) {
  for (const AccessRule& rule : AccessRules()) {
    const bool needs_field =
        rule.target == Target::kExperiment || rule.target == Target::kExperimentOr0 ||
        rule.target == Target::kExperimentName || rule.target == Target::kRun ||
        rule.target == Target::kRuns || rule.target == Target::kSelfOrAdmin ||
        rule.target == Target::kModel || rule.target == Target::kDataset;
    if (needs_field) {
      EXPECT_NE(rule.field, nullptr) << rule.method << " " << rule.path;
    }
  }
}

TEST(AccessRulesTest, PatternsMatchWholeSegments) {
  std::string_view wildcard;
  EXPECT_TRUE(PathMatches("runs/*/log", "runs/abc/log", &wildcard));
  EXPECT_EQ(wildcard, "abc");
  EXPECT_FALSE(PathMatches("runs/*/log", "runs//log", nullptr));
  EXPECT_FALSE(PathMatches("runs/*/log", "runs/a/b/log", nullptr));
  EXPECT_FALSE(PathMatches("runs", "runs/x", nullptr));
  EXPECT_TRUE(PathMatches("artifacts/**", "artifacts/1/r/artifacts/a.txt", nullptr));
  EXPECT_FALSE(PathMatches("artifacts/**", "artifacts/", nullptr));
  // The same path under another method or API is another rule, or none.
  EXPECT_EQ(FindAccessRule(Api::kMlflow, "GET", "runs/delete"), nullptr);
  EXPECT_EQ(FindAccessRule(Api::kCairn, "POST", "runs/get"), nullptr);
  const AccessRule* del = FindAccessRule(Api::kMlflow, "POST", "experiments/delete");
  ASSERT_NE(del, nullptr);
  EXPECT_EQ(del->access, core::Access::kDelete);
  EXPECT_TRUE(Changes(*del));
  EXPECT_FALSE(Changes(*FindAccessRule(Api::kMlflow, "POST", "runs/search")));
}

}  // namespace
}  // namespace cairn::server
