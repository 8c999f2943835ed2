// The edge's identity checks: who sent a request (the Authorization header, MLflow's Basic and
// Bearer, or the web UI's session cookie), whether the route's rule (access_rules.h) lets them
// act on the object the request names, and the audit line of what they did. The answers to
// refusals are MLflow's: 401 with its text and `WWW-Authenticate: Basic realm="mlflow"`, 403
// PERMISSION_DENIED. Server-internal.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "server/access_rules.h"
#include "server/fields.h"
#include "server/http_message.h"
#include "service/access_service.h"

namespace cairn::server {

// Writes made with a session cookie carry the session's CSRF token in this header.
inline constexpr std::string_view kCsrfHeader = "X-Cairn-CSRF-Token";
// The web UI marks its requests, so that a 401 does not make the browser ask for a password.
inline constexpr std::string_view kUiHeader = "X-Cairn-UI";

struct Caller {
  core::Principal principal;
  service::Credentials::Kind via = service::Credentials::Kind::kNone;
  std::string session_id;  // when a session cookie signed the request in
  // The actor of audit entries: "alice", "ci/runner" for a token, "" when authentication is off.
  std::string Actor() const;
};

// What a request names, for the checks and the audit line.
struct CallSubject {
  const AccessRule* rule = nullptr;
  const Fields* fields = nullptr;  // the query (GET) or the JSON body; null for uploads
  std::string_view wildcard;       // what the rule's `*` matched
  std::string_view artifact_path;  // the proxy path of an artifact call
};

using Identified = std::variant<Caller, HttpResponse>;

// An audit line made before the call's outcome is known (for calls answered later, when the
// request itself is gone).
struct PendingAudit {
  core::AuditEntry entry;
  bool changes = false;
  bool logging = false;
};

class Gate {
 public:
  explicit Gate(service::AccessService* access) : access_(access) {}

  // Who sent the request, asking the store if need be; the answer to give when refused.
  Identified Identify(const HttpRequest& req);
  // The same from memory alone; nullopt when only the store can say.
  std::optional<Identified> IdentifyCached(const HttpRequest& req);

  // Whether the caller may make the call: OK, kPermissionDenied, or the error of a missing
  // run or experiment the call names.
  Status Authorize(const Caller& caller, const CallSubject& call);
  std::optional<Status> AuthorizeCached(const Caller& caller, const CallSubject& call);

  // The answer to a refusal of Identify or Authorize.
  HttpResponse Refusal(const Status& status, const HttpRequest& req) const;

  // Appends the call's audit line when it changed something or tried to (and for reads too
  // with --audit-reads). `outcome` is OK or what went wrong. Logging calls into a run are
  // written once per actor and run every ten minutes, and repeated refusals once a minute
  // (AccessService::AuditDue).
  void Audit(const Caller& caller, const HttpRequest& req, const CallSubject& call,
             const Status& outcome);
  PendingAudit Describe(const Caller& caller, const HttpRequest& req,
                        const CallSubject& call) const;
  void Record(PendingAudit audit, const Status& outcome);

  // How a request's object is named in the audit log: "experiment 3", "run 1f2e…".
  static std::string ObjectOf(const CallSubject& call);
  // The credentials a request carries.
  static service::Credentials CredentialsOf(const HttpRequest& req);

 private:
  // One implementation for both: with `may_block` false, nullopt where the store is needed.
  std::optional<Identified> Identify(const HttpRequest& req, bool may_block);
  std::optional<Status> Authorize(const Caller& caller, const CallSubject& call, bool may_block);
  std::optional<Status> Require(const Caller& caller, core::ResourceKind kind,
                                std::string_view id, core::Access access, bool may_block);
  std::optional<Status> RequireRun(const Caller& caller, std::string_view run_id,
                                   core::Access access, bool may_block);

  service::AccessService* access_;
};

}  // namespace cairn::server
