#include "pipeline/approval.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "pipeline/builder.h"
#include "util/file.h"

namespace cairn::pipeline {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string DecisionPath(const std::string& run_dir, const std::string& step) {
  return run_dir + "/approvals/" + StepFileName(step) + ".json";
}

}  // namespace

std::optional<ApprovalDecision> ReadLocalDecision(const std::string& run_dir,
                                                  const std::string& step) {
  Result<std::string> text = ReadFile(DecisionPath(run_dir, step));
  if (!text.ok()) return std::nullopt;
  const json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  const std::string decision = j.value("decision", "");
  if (decision != "approved" && decision != "rejected") return std::nullopt;
  return ApprovalDecision{decision == "approved", j.value("by", ""), j.value("comment", ""),
                          j.value("time_ms", int64_t{0})};
}

Status WriteLocalDecision(const std::string& run_dir, const std::string& step,
                          const ApprovalDecision& decision) {
  if (std::optional<ApprovalDecision> before = ReadLocalDecision(run_dir, step)) {
    return AlreadyExists("step " + step + " was " + (before->approved ? "approved" : "rejected") +
                         " already" + (before->by.empty() ? "" : ", by " + before->by));
  }
  const std::string path = DecisionPath(run_dir, step);
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  const json j = {{"decision", decision.approved ? "approved" : "rejected"},
                  {"by", decision.by},
                  {"comment", decision.comment},
                  {"time_ms", decision.time_ms}};
  return WriteFileAtomic(path, j.dump(1) + "\n", Sync::kDurable);
}

}  // namespace cairn::pipeline
