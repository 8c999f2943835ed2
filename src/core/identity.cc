#include "core/identity.h"

#include <algorithm>

namespace cairn::core {

std::string_view PermissionName(Permission p) {
  switch (p) {
    case Permission::kNoPermissions: return "NO_PERMISSIONS";
    case Permission::kRead: return "READ";
    case Permission::kEdit: return "EDIT";
    case Permission::kManage: return "MANAGE";
  }
  return "NO_PERMISSIONS";
}

bool ParsePermission(std::string_view text, Permission* out) {
  for (Permission p : {Permission::kNoPermissions, Permission::kRead, Permission::kEdit,
                       Permission::kManage}) {
    if (text == PermissionName(p)) {
      *out = p;
      return true;
    }
  }
  return false;
}

std::string_view AccessName(Access a) {
  switch (a) {
    case Access::kRead: return "read";
    case Access::kUpdate: return "update";
    case Access::kDelete: return "delete";
    case Access::kManage: return "manage";
  }
  return "read";
}

bool Allows(Permission p, Access a) {
  switch (a) {
    case Access::kRead: return p >= Permission::kRead;
    case Access::kUpdate: return p >= Permission::kEdit;
    case Access::kDelete:
    case Access::kManage: return p >= Permission::kManage;
  }
  return false;
}

std::string ScopesText(TokenScopes s) {
  if (s.admin) return "read,write,admin";
  if (s.write) return "read,write";
  if (s.read) return "read";
  return "";
}

bool ParseScopes(std::string_view text, TokenScopes* out) {
  TokenScopes s;
  while (true) {
    const size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item == "read") {
      s.read = true;
    } else if (item == "write") {
      s.read = s.write = true;
    } else if (item == "admin") {
      s.read = s.write = s.admin = true;
    } else {
      return false;  // an unknown word, or an empty one
    }
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  *out = s;
  return true;
}

std::string_view ResourceKindName(ResourceKind k) {
  switch (k) {
    case ResourceKind::kExperiment:
      return "experiment";
    case ResourceKind::kRegisteredModel:
      return "registered_model";
    case ResourceKind::kDataset:
      return "dataset";
  }
  return "";
}

bool ParseResourceKind(std::string_view text, ResourceKind* out) {
  if (text == "experiment") {
    *out = ResourceKind::kExperiment;
  } else if (text == "registered_model") {
    *out = ResourceKind::kRegisteredModel;
  } else if (text == "dataset") {
    *out = ResourceKind::kDataset;
  } else {
    return false;
  }
  return true;
}

std::string_view PrincipalKindName(PrincipalKind k) {
  return k == PrincipalKind::kUser ? "user" : "team";
}

bool ParsePrincipalKind(std::string_view text, PrincipalKind* out) {
  if (text == "user") {
    *out = PrincipalKind::kUser;
  } else if (text == "team") {
    *out = PrincipalKind::kTeam;
  } else {
    return false;
  }
  return true;
}

Permission EffectivePermission(const Principal& who, const std::vector<Grant>& grants,
                               Permission default_permission) {
  Permission level = default_permission;
  if (who.ActsAsAdmin()) {
    level = Permission::kManage;
  } else {
    std::optional<Permission> own;
    std::optional<Permission> team_best;
    for (const Grant& g : grants) {
      if (g.principal_kind == PrincipalKind::kUser) {
        if (g.principal == who.username) own = g.permission;
      } else if (std::find(who.teams.begin(), who.teams.end(), g.principal) != who.teams.end()) {
        team_best = std::max(team_best.value_or(Permission::kNoPermissions), g.permission);
      }
    }
    if (own) {
      level = *own;
    } else if (team_best) {
      level = *team_best;
    }
  }
  if (!who.scopes.read) return Permission::kNoPermissions;
  if (!who.scopes.write) return std::min(level, Permission::kRead);
  return level;
}

bool MayAccess(const Principal& who, const std::vector<Grant>& grants,
               Permission default_permission, Access access) {
  return Allows(EffectivePermission(who, grants, default_permission), access);
}

bool AuditObjectMatches(std::string_view object, std::string_view wanted) {
  if (wanted.empty() || object == wanted) return true;
  return (wanted.back() == ' ' || wanted.back() == '/') && object.starts_with(wanted);
}

std::string CanonicalExperimentId(std::string_view id) {
  if (id.empty() || id.size() > 18 ||
      !std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::string(id);
  }
  size_t first = id.find_first_not_of('0');
  return first == std::string_view::npos ? "0" : std::string(id.substr(first));
}

bool ValidAccountName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (!alnum(name.front())) return false;
  return std::all_of(name.begin(), name.end(), [&](char c) {
    return alnum(c) || c == '.' || c == '_' || c == '-' || c == '@';
  });
}

}  // namespace cairn::core
