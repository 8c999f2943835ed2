#include "core/registry.h"

#include <algorithm>
#include <cctype>

#include "util/strings.h"

namespace cairn::core {

namespace {

constexpr size_t kMaxAliasLength = 255;

bool IsWordChar(unsigned char c) { return std::isalnum(c) || c == '_' || c >= 0x80; }

}  // namespace

Status ValidateModelAlias(std::string_view alias) {
  const std::string text(alias);
  if (text.empty()) return InvalidArgument("Registered model alias name cannot be empty.");
  if (!std::all_of(text.begin(), text.end(),
                   [](unsigned char c) { return IsWordChar(c) || c == '-'; })) {
    return InvalidArgument("Invalid alias name: '" + text +
                           "'. Names may only contain alphanumerics, underscores (_), and "
                           "dashes (-).");
  }
  if (text.size() > kMaxAliasLength) {
    return InvalidArgument("Registered model alias name '" + text.substr(0, 250) + "' had length " +
                           std::to_string(text.size()) + ", which exceeded length limit of 255");
  }
  if (AsciiLower(text) == "latest") {
    return InvalidArgument("'latest' alias name (case insensitive) is reserved.");
  }
  if (text.size() > 1 && (text[0] == 'v' || text[0] == 'V') &&
      std::all_of(text.begin() + 1, text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return InvalidArgument("Version alias name '" + text + "' is reserved.");
  }
  return Status::Ok();
}

std::string_view ModelStageName(ModelStage stage) {
  switch (stage) {
    case ModelStage::kNone:
      return "None";
    case ModelStage::kStaging:
      return "Staging";
    case ModelStage::kProduction:
      return "Production";
    case ModelStage::kArchived:
      return "Archived";
  }
  return "None";
}

bool ParseModelStage(std::string_view text, ModelStage* out) {
  for (ModelStage stage :
       {ModelStage::kNone, ModelStage::kStaging, ModelStage::kProduction, ModelStage::kArchived}) {
    if (AsciiLower(text) == AsciiLower(ModelStageName(stage))) {
      *out = stage;
      return true;
    }
  }
  return false;
}

std::string_view ModelVersionStatusName(ModelVersionStatus status) {
  switch (status) {
    case ModelVersionStatus::kPendingRegistration:
      return "PENDING_REGISTRATION";
    case ModelVersionStatus::kFailedRegistration:
      return "FAILED_REGISTRATION";
    case ModelVersionStatus::kReady:
      return "READY";
  }
  return "READY";
}

std::string_view AliasMoveKindName(AliasMoveKind kind) {
  switch (kind) {
    case AliasMoveKind::kSet:
      return "set";
    case AliasMoveKind::kDelete:
      return "delete";
    case AliasMoveKind::kRollback:
      return "rollback";
  }
  return "set";
}

bool ParseAliasMoveKind(std::string_view text, AliasMoveKind* out) {
  for (AliasMoveKind kind :
       {AliasMoveKind::kSet, AliasMoveKind::kDelete, AliasMoveKind::kRollback}) {
    if (text == AliasMoveKindName(kind)) {
      *out = kind;
      return true;
    }
  }
  return false;
}

std::optional<std::optional<int64_t>> AliasRollbackTarget(
    const std::vector<AliasMove>& moves, const std::function<bool(int64_t version)>& exists) {
  std::vector<std::optional<int64_t>> stack;
  for (const AliasMove& move : moves) {
    if (move.kind == AliasMoveKind::kRollback) {
      if (!stack.empty()) stack.pop_back();
    } else if (stack.empty() || stack.back() != move.version) {
      stack.push_back(move.version);
    }
  }
  if (stack.empty()) return std::nullopt;
  stack.pop_back();  // where the alias is now
  while (!stack.empty() && stack.back() && !exists(*stack.back())) stack.pop_back();
  if (stack.empty()) return std::nullopt;
  return stack.back();
}

}  // namespace cairn::core
