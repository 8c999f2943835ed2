#include "service/run_environment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "blob/memory/memory_store.h"
#include "fakes/fake_clock.h"
#include "store/memory/memory_store.h"

namespace cairn::service {
namespace {

using ::testing::HasSubstr;

// A snapshot as `cairn run` records it, reduced to what the comparison reads.
std::string Snapshot(const std::string& numpy_version) {
  return "lock-version = \"1.0\"\n"
         "created-by = \"cairn\"\n"
         "\n"
         "[[packages]]\n"
         "name = \"numpy\"\n"
         "version = \"" +
         numpy_version +
         "\"\n"
         "\n"
         "[[packages]]\n"
         "name = \"six\"\n"
         "version = \"1.16.0\"\n"
         "\n"
         "[tool.cairn]\n"
         "kind = \"environment-snapshot\"\n"
         "python-version = \"3.11.2\"\n";
}

std::string HostJson(const std::string& glibc) {
  return R"({"os": "linux", "machine": "x86_64", "glibc": ")" + glibc +
         R"(", "hostname": "gpu-a", "cpu_cores": 8})";
}

class RunEnvironmentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::string> id = tracking_.CreateExperiment("exp", "", {});
    ASSERT_TRUE(id.ok());
    experiment_ = *id;
  }

  // A run with the records given (empty: none), uploaded where `cairn run` puts them.
  std::string Run(const std::string& pylock, const std::string& host_json = "") {
    CreateRunRequest request;
    request.experiment_id = experiment_;
    Result<core::Run> run = tracking_.CreateRun(request);
    EXPECT_TRUE(run.ok()) << run.status().ToString();
    const std::string& id = run->info.run_id;
    const std::string root = experiment_ + "/" + id + "/artifacts/";
    EXPECT_EQ(run->info.artifact_uri, "mlflow-artifacts:/" + root.substr(0, root.size() - 1));
    if (!pylock.empty()) {
      EXPECT_TRUE(artifacts_.PutBytes(root + std::string(env::kRunPylockArtifact), pylock).ok());
    }
    if (!host_json.empty()) {
      EXPECT_TRUE(artifacts_.PutBytes(root + std::string(env::kRunHostArtifact), host_json).ok());
    }
    return id;
  }

  Result<EnvironmentComparison> Compare(const std::vector<std::string>& run_ids) {
    return CompareRunEnvironments(tracking_, artifacts_, run_ids);
  }

  std::unique_ptr<store::MetadataStore> store_ = store::NewMemoryMetadataStore({});
  std::unique_ptr<blob::ContentStore> blobs_ = blob::NewMemoryContentStore();
  fakes::FakeClock clock_{1'700'000'000'000};
  TrackingService tracking_{store_.get(), &clock_};
  ArtifactService artifacts_{store_.get(), blobs_.get()};
  std::string experiment_;
};

TEST_F(RunEnvironmentTest, ReadsTheRecordedSnapshot) {
  const std::string recorded = Run(Snapshot("1.26.0"));
  Result<std::optional<env::EnvDescription>> env =
      ReadRunEnvironment(tracking_, artifacts_, recorded);
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  ASSERT_TRUE(env->has_value());
  EXPECT_TRUE((*env)->snapshot);
  EXPECT_EQ((*env)->label, recorded);
  EXPECT_EQ((*env)->packages.at("numpy").version, "1.26.0");
  EXPECT_EQ((*env)->python_version(), "3.11.2");
  EXPECT_TRUE((*env)->host_facts.empty());  // no host.json

  Result<std::optional<env::EnvDescription>> none =
      ReadRunEnvironment(tracking_, artifacts_, Run(""));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  EXPECT_EQ(ReadRunEnvironment(tracking_, artifacts_, std::string(32, 'f')).status().code(),
            StatusCode::kNotFound);
}

TEST_F(RunEnvironmentTest, BaselineIsTheFirstRunWithARecord) {
  const std::string bare = Run("");
  const std::string first = Run(Snapshot("1.26.0"));
  const std::string same = Run(Snapshot("1.26.0"));
  const std::string newer = Run(Snapshot("2.0.1"));
  Result<EnvironmentComparison> c = Compare({bare, first, same, newer});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->runs.size(), 4u);
  EXPECT_EQ(c->runs[0].run_id, bare);
  EXPECT_FALSE(c->runs[0].recorded);
  EXPECT_EQ(c->runs[0].error, "");
  for (size_t i = 1; i < 4; ++i) {
    EXPECT_TRUE(c->runs[i].recorded) << i;
    EXPECT_EQ(c->runs[i].error, "") << i;
  }
  EXPECT_EQ(c->runs[3].run_id, newer);
  EXPECT_EQ(c->baseline, first);
  ASSERT_EQ(c->diffs.size(), 2u);
  EXPECT_EQ(c->diffs[0].run_id, same);
  EXPECT_TRUE(c->diffs[0].diff.empty());
  EXPECT_EQ(c->diffs[1].run_id, newer);
  ASSERT_EQ(c->diffs[1].diff.packages.size(), 1u);
  EXPECT_EQ(c->diffs[1].diff.packages[0].name, "numpy");
  EXPECT_EQ(c->diffs[1].diff.packages[0].from, "1.26.0");
  EXPECT_EQ(c->diffs[1].diff.packages[0].to, "2.0.1");
}

TEST_F(RunEnvironmentTest, RunsWithoutRecordsLeaveNoBaseline) {
  // An experiment whose artifact_location names another place still keeps its runs' records
  // here (the location is a label); these runs recorded none.
  Result<std::string> s3 = tracking_.CreateExperiment("s3", "s3://bucket/runs", {});
  ASSERT_TRUE(s3.ok());
  CreateRunRequest request;
  request.experiment_id = *s3;
  Result<core::Run> elsewhere = tracking_.CreateRun(request);
  ASSERT_TRUE(elsewhere.ok());
  EXPECT_EQ(elsewhere->info.artifact_uri,
            "mlflow-artifacts:/" + *s3 + "/" + elsewhere->info.run_id + "/artifacts");

  Result<EnvironmentComparison> c = Compare({Run(""), elsewhere->info.run_id});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->runs[0].recorded);
  EXPECT_FALSE(c->runs[1].recorded);
  EXPECT_EQ(c->runs[1].error, "");
  EXPECT_EQ(c->baseline, "");
  EXPECT_TRUE(c->diffs.empty());
}

TEST_F(RunEnvironmentTest, AnUnreadableRecordIsAnErrorOfItsRunAlone) {
  const std::string good = Run(Snapshot("1.26.0"));
  const std::string broken = Run("not = [toml\n");
  const std::string bad_host = Run(Snapshot("1.26.0"), "[1, 2]");
  const std::string other = Run(Snapshot("1.26.0"));
  EXPECT_EQ(ReadRunEnvironment(tracking_, artifacts_, broken).status().code(),
            StatusCode::kInvalidArgument);

  Result<EnvironmentComparison> c = Compare({broken, good, bad_host, other});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->runs[0].recorded);
  EXPECT_THAT(c->runs[0].error, HasSubstr("run " + broken));
  EXPECT_THAT(c->runs[0].error, HasSubstr(std::string(env::kRunPylockArtifact)));
  EXPECT_FALSE(c->runs[2].recorded);
  EXPECT_THAT(c->runs[2].error, HasSubstr(std::string(env::kRunHostArtifact)));
  // The broken runs neither become the baseline nor appear among the diffs.
  EXPECT_EQ(c->baseline, good);
  ASSERT_EQ(c->diffs.size(), 1u);
  EXPECT_EQ(c->diffs[0].run_id, other);
}

TEST_F(RunEnvironmentTest, AnOversizedRecordIsAnErrorOfItsRunAlone) {
  const std::string huge =
      Run(Snapshot("1.26.0") + "# " + std::string(kMaxEnvironmentRecordBytes, 'x') + "\n");
  const std::string good = Run(Snapshot("1.26.0"));
  EXPECT_EQ(ReadRunEnvironment(tracking_, artifacts_, huge).status().code(),
            StatusCode::kResourceExhausted);
  Result<EnvironmentComparison> c = Compare({huge, good});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->runs[0].recorded);
  EXPECT_THAT(c->runs[0].error, HasSubstr("over the limit of 16777216"));
  EXPECT_EQ(c->baseline, good);
}

TEST_F(RunEnvironmentTest, HostFactsAreComparedWhenBothRunsHaveThem) {
  const std::string a = Run(Snapshot("1.26.0"), HostJson("2.36"));
  const std::string b = Run(Snapshot("1.26.0"), HostJson("2.39"));
  const std::string no_host = Run(Snapshot("1.26.0"));
  Result<EnvironmentComparison> c = Compare({a, b, no_host});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->diffs.size(), 2u);
  const env::EnvDiff& with_host = c->diffs[0].diff;
  EXPECT_TRUE(with_host.host_facts_compared);
  ASSERT_EQ(with_host.host_facts.size(), 1u);
  EXPECT_EQ(with_host.host_facts[0].name, "glibc");
  EXPECT_EQ(with_host.host_facts[0].from, "2.36");
  EXPECT_EQ(with_host.host_facts[0].to, "2.39");
  EXPECT_FALSE(c->diffs[1].diff.host_facts_compared);
  EXPECT_TRUE(c->diffs[1].diff.empty());
}

TEST_F(RunEnvironmentTest, UnknownRunFailsTheWholeComparison) {
  Result<EnvironmentComparison> c = Compare({Run(Snapshot("1.26.0")), std::string(32, 'f')});
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
}

TEST_F(RunEnvironmentTest, ComparesTwoToTenRuns) {
  const std::string id = Run(Snapshot("1.26.0"));
  Result<EnvironmentComparison> one = Compare({id});
  EXPECT_EQ(one.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(one.status().message(), "Compare takes 2 to 10 runs; 1 given.");
  Result<EnvironmentComparison> eleven = Compare(std::vector<std::string>(11, id));
  EXPECT_EQ(eleven.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(eleven.status().message(), "Compare takes 2 to 10 runs; 11 given.");
  Result<EnvironmentComparison> ten = Compare(std::vector<std::string>(10, id));
  ASSERT_TRUE(ten.ok()) << ten.status().ToString();
  EXPECT_EQ(ten->runs.size(), 10u);
  EXPECT_EQ(ten->diffs.size(), 9u);
}

}  // namespace
}  // namespace cairn::service
