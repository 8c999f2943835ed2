#include "server/gate.h"

#include <openssl/crypto.h>

#include <algorithm>

#include "server/credentials.h"
#include "server/http_errors.h"
#include "service/artifact_service.h"

namespace cairn::server {
namespace {

using core::Access;
using core::ResourceKind;
using service::Credentials;

constexpr std::string_view kPermissionDenied = "Permission denied";

bool IsWrite(std::string_view method) {
  return method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE";
}

// The experiment an artifact path belongs to: its first segment when that is a number
// ("3/<run>/artifacts/..."); empty otherwise.
std::string_view ExperimentOfArtifactPath(std::string_view path) {
  const size_t slash = path.find('/');
  std::string_view first = path.substr(0, slash);
  if (first.empty() || first.size() > 18) return {};
  for (char c : first) {
    if (c < '0' || c > '9') return {};
  }
  return first;
}

// A logging call: audited once per run and actor every few minutes, not once per request.
bool IsLoggingCall(const AccessRule& rule) {
  const std::string_view path = rule.path;
  return path.starts_with("runs/log-") || path == "runs/set-tag" || path == "runs/*/log" ||
         path.starts_with("datasets/blobs");
}

std::string FieldValue(const Fields* fields, const char* name) {
  if (fields == nullptr || name == nullptr) return {};
  Result<std::optional<std::string>> v = fields->Str(name);
  return v.ok() && v->has_value() ? **v : std::string();
}

Status Denied() { return PermissionDenied(std::string(kPermissionDenied)); }

}  // namespace

std::string Caller::Actor() const {
  if (principal.token_name.empty()) return principal.username;
  return principal.username + "/" + principal.token_name;
}

Credentials Gate::CredentialsOf(const HttpRequest& req) {
  return ParseCredentials(req.headers.Get("Authorization"), req.headers.Get("Cookie"));
}

Identified Gate::Identify(const HttpRequest& req) { return *Identify(req, true); }

std::optional<Identified> Gate::IdentifyCached(const HttpRequest& req) {
  return Identify(req, false);
}

std::optional<Identified> Gate::Identify(const HttpRequest& req, bool may_block) {
  Caller caller;
  if (!access_->enabled()) {
    caller.principal = service::AccessService::Anonymous();
    return Identified(std::move(caller));
  }
  const Credentials credentials = CredentialsOf(req);
  caller.via = credentials.kind;
  if (credentials.kind == Credentials::Kind::kNone) {
    return Identified(Refusal(Unauthenticated("no credentials"), req));
  }
  if (may_block) {
    Result<core::Principal> who = access_->Authenticate(credentials, req.remote_address);
    if (!who.ok()) return Identified(Refusal(who.status(), req));
    caller.principal = std::move(who).value();
  } else {
    std::optional<core::Principal> who = access_->AuthenticateCached(credentials);
    if (!who) return std::nullopt;
    caller.principal = std::move(*who);
  }
  if (credentials.kind == Credentials::Kind::kSession) {
    caller.session_id = credentials.secret;
    // A write in a browser session must show that the page itself made it.
    if (IsWrite(req.method)) {
      std::optional<service::Session> session = access_->FindSession(credentials.secret);
      const std::string_view sent = req.headers.Get(kCsrfHeader);
      if (!session || sent.size() != session->csrf_token.size() ||
          CRYPTO_memcmp(sent.data(), session->csrf_token.data(), sent.size()) != 0) {
        return Identified(JsonError(403, "PERMISSION_DENIED",
                                    "The request lacks this session's CSRF token: reload the "
                                    "page and try again."));
      }
    }
  }
  return Identified(std::move(caller));
}

HttpResponse Gate::Refusal(const Status& status, const HttpRequest& req) const {
  if (status.code() == StatusCode::kResourceExhausted) {
    HttpResponse r = JsonError(429, "REQUEST_LIMIT_EXCEEDED", status.message());
    const int64_t wait = access_->ThrottledFor(req.remote_address, CredentialsOf(req).username);
    r.SetHeader("Retry-After", std::to_string(std::max<int64_t>(1, (wait + 999) / 1000)));
    return r;
  }
  HttpResponse r = ErrorResponse(status);
  // The web UI shows its own sign-in page: no browser password dialog for its requests.
  if (r.status == 401 && req.headers.Find(kUiHeader) != nullptr) r.headers.clear();
  return r;
}

std::optional<Status> Gate::Require(const Caller& caller, ResourceKind kind, std::string_view id,
                                    Access access, bool may_block) {
  std::optional<core::Permission> level;
  if (may_block) {
    Result<core::Permission> p = access_->PermissionOn(caller.principal, kind, id);
    if (!p.ok()) return p.status();
    level = *p;
  } else {
    level = access_->PermissionOnCached(caller.principal, kind, id);
    if (!level) return std::nullopt;
  }
  return core::Allows(*level, access) ? Status::Ok() : Denied();
}

std::optional<Status> Gate::RequireRun(const Caller& caller, std::string_view run_id, Access access,
                                       bool may_block) {
  std::optional<std::string> experiment;
  if (may_block) {
    Result<std::string> e = access_->ExperimentOfRun(run_id);
    if (!e.ok()) return e.status();
    experiment = *e;
  } else {
    experiment = access_->ExperimentOfRunCached(run_id);
    if (!experiment) return std::nullopt;
  }
  return Require(caller, ResourceKind::kExperiment, *experiment, access, may_block);
}

Status Gate::Authorize(const Caller& caller, const CallSubject& call) {
  return *Authorize(caller, call, true);
}

std::optional<Status> Gate::AuthorizeCached(const Caller& caller, const CallSubject& call) {
  return Authorize(caller, call, false);
}

std::optional<Status> Gate::Authorize(const Caller& caller, const CallSubject& call,
                                      bool may_block) {
  const AccessRule& rule = *call.rule;
  const core::Principal& who = caller.principal;
  if (rule.target == Target::kPublic) return Status::Ok();
  if (who.ActsAsAdmin()) return Status::Ok();
  // A read-only token changes nothing, whatever it is granted.
  if (rule.access != Access::kRead && !who.scopes.write) return Denied();
  const std::string field = FieldValue(call.fields, rule.field);
  switch (rule.target) {
    case Target::kPublic:
    case Target::kSignedIn:
      return Status::Ok();
    case Target::kAdmin:
      return Denied();
    case Target::kSelfOrAdmin:
      // A token changes no password: a leaked token must not become the account.
      if (rule.access != Access::kRead && !who.token_id.empty()) return Denied();
      return field == who.username ? Status::Ok() : Denied();
    case Target::kExperiment:
      if (field.empty()) return Status::Ok();  // the handler says what is missing
      return Require(caller, ResourceKind::kExperiment, field, rule.access, may_block);
    case Target::kExperimentOr0:
      return Require(caller, ResourceKind::kExperiment, field.empty() ? "0" : field, rule.access,
                     may_block);
    case Target::kExperimentName: {
      if (field.empty()) return Status::Ok();
      if (!may_block) return std::nullopt;
      Result<std::string> id = access_->ExperimentIdOfName(field);
      if (!id.ok()) return id.status();
      return Require(caller, ResourceKind::kExperiment, *id, rule.access, may_block);
    }
    case Target::kNewRun: {
      std::string experiment = FieldValue(call.fields, "experiment_id");
      const std::string name = FieldValue(call.fields, "experiment_name");
      if (experiment.empty() && !name.empty()) {
        if (!may_block) return std::nullopt;
        Result<std::string> id = access_->ExperimentIdOfName(name);
        if (!id.ok() && id.status().code() == StatusCode::kNotFound) return Status::Ok();
        if (!id.ok()) return id.status();
        experiment = *id;
      }
      if (experiment.empty()) experiment = "0";
      return Require(caller, ResourceKind::kExperiment, experiment, rule.access, may_block);
    }
    case Target::kRun: {
      std::string run_id = field;
      if (run_id.empty()) run_id = FieldValue(call.fields, "run_uuid");
      if (run_id.empty()) return Status::Ok();
      return RequireRun(caller, run_id, rule.access, may_block);
    }
    case Target::kRuns: {
      if (call.fields == nullptr) return Status::Ok();
      Result<std::vector<std::string>> ids = call.fields->StrList(rule.field);
      if (!ids.ok()) return Status::Ok();  // the handler reports the malformed field
      for (const std::string& id : *ids) {
        std::optional<Status> s = RequireRun(caller, id, rule.access, may_block);
        if (!s || !s->ok()) return s;
      }
      return Status::Ok();
    }
    case Target::kRunInPath:
      return RequireRun(caller, call.wildcard, rule.access, may_block);
    case Target::kModel:
      if (field.empty()) return Status::Ok();  // the handler says what is missing
      return Require(caller, ResourceKind::kRegisteredModel, field, rule.access, may_block);
    case Target::kDataset:
      if (field.empty()) return Status::Ok();  // the handler says what is missing
      return Require(caller, ResourceKind::kDataset, field, rule.access, may_block);
    case Target::kTaskInPath: {
      if (!may_block) return std::nullopt;
      Result<std::string> run = access_->RunOfTask(call.wildcard);
      if (!run.ok()) return run.status();
      return RequireRun(caller, *run, rule.access, may_block);
    }
    case Target::kAgent:
      return who.is_service ? Status::Ok() : Denied();
    case Target::kArtifactPath: {
      const std::string_view path =
          rule.field != nullptr ? std::string_view(field) : call.artifact_path;
      if (path == service::kRegistryArtifactRoot) {
        // The list of every version's storage: for admins only.
        return Denied();
      }
      if (path.starts_with(std::string(service::kRegistryArtifactRoot) + "/")) {
        // A model version's files: read with the model's permission (the artifact service
        // refuses every change).
        if (!may_block) return std::nullopt;
        Result<std::string> model = access_->ModelOfArtifactPath(path);
        if (!model.ok()) return Denied();
        return Require(caller, ResourceKind::kRegisteredModel, *model, rule.access, may_block);
      }
      if (path == service::kDatasetArtifactRoot) return Denied();
      if (path.starts_with(std::string(service::kDatasetArtifactRoot) + "/")) {
        // A dataset's files: read with the dataset's permission (only the dataset service
        // writes them).
        std::string_view name = path.substr(service::kDatasetArtifactRoot.size() + 1);
        name = name.substr(0, name.find('/'));
        return Require(caller, ResourceKind::kDataset, name, rule.access, may_block);
      }
      const std::string_view experiment = ExperimentOfArtifactPath(path);
      if (experiment.empty()) {
        // Not under an experiment: the server's default applies, as MLflow does.
        return core::Allows(access_->options().default_permission, rule.access) ? Status::Ok()
                                                                                : Denied();
      }
      return Require(caller, ResourceKind::kExperiment, experiment, rule.access, may_block);
    }
  }
  return Denied();
}

std::string Gate::ObjectOf(const CallSubject& call) {
  const AccessRule& rule = *call.rule;
  const std::string field = FieldValue(call.fields, rule.field);
  switch (rule.target) {
    case Target::kExperiment:
    case Target::kExperimentName:
      return "experiment " + field;
    case Target::kExperimentOr0:
      return "experiment " + (field.empty() ? std::string("0") : field);
    case Target::kRun:
      return "run " + (field.empty() ? FieldValue(call.fields, "run_uuid") : field);
    case Target::kRunInPath:
      return "run " + std::string(call.wildcard);
    case Target::kRuns:
      return "runs";
    case Target::kModel:
      return "registered_model " + field;
    case Target::kDataset:
      return "dataset " + field;
    case Target::kTaskInPath:
      return "task " + std::string(call.wildcard);
    case Target::kArtifactPath:
      return "artifact " +
             std::string(rule.field != nullptr ? std::string_view(field) : call.artifact_path);
    case Target::kNewRun: {
      const std::string id = FieldValue(call.fields, "run_id");
      return "run " + id;
    }
    default:
      break;
  }
  // Accounts, teams, tokens, new experiments: the kind from the path, the name from the body.
  std::string_view kind = rule.path;
  kind = kind.substr(0, kind.find('/'));
  if (kind.ends_with('s')) kind.remove_suffix(1);
  for (const char* name : {"username", "team", "token", "name"}) {
    const std::string value = FieldValue(call.fields, name);
    if (!value.empty()) return std::string(kind) + " " + value;
  }
  return std::string(kind);
}

PendingAudit Gate::Describe(const Caller& caller, const HttpRequest& req,
                            const CallSubject& call) const {
  const AccessRule& rule = *call.rule;
  PendingAudit a;
  a.entry.actor = caller.Actor();
  a.entry.source = req.remote_address;
  a.entry.object = ObjectOf(call);
  a.changes = Changes(rule);
  a.logging = IsLoggingCall(rule);
  std::string& action = a.entry.action;
  action = req.method + " ";
  const size_t mlflow = req.path.find("/mlflow/");
  if (rule.api == Api::kArtifacts) {
    action += "artifacts";
  } else if (rule.api == Api::kPlain) {
    action += rule.path;
  } else if (std::string_view(rule.path).starts_with("datasets/blobs")) {
    action += "datasets/blobs";  // one line for a client's many blobs, not one per digest
  } else if (req.path.starts_with("/api/cairn/v1/")) {
    action += req.path.substr(std::string_view("/api/cairn/v1/").size());
  } else if (mlflow != std::string::npos) {
    action += req.path.substr(mlflow + std::string_view("/mlflow/").size());
  } else {
    action += req.path;
  }
  return a;
}

void Gate::Record(PendingAudit audit, const Status& outcome) {
  // Reads, refused or not, only with --audit-reads.
  if (!audit.changes && !access_->options().audit_reads) return;
  const std::string key = audit.entry.actor + '\0' + audit.entry.action + '\0' + audit.entry.object;
  if (outcome.ok() && audit.logging &&
      !access_->AuditDue(key, service::AccessService::kLoggingAuditPeriodMs)) {
    return;
  }
  // A caller retrying what it may not do leaves one line a minute, not one per request.
  if (outcome.code() == StatusCode::kPermissionDenied &&
      !access_->AuditDue(key, service::AccessService::kRefusalAuditPeriodMs)) {
    return;
  }
  audit.entry.outcome = outcome.ok() ? "ok" : outcome.ToString();
  // Logging calls may be answered on an I/O thread, which must not wait on the store.
  access_->Audit(std::move(audit.entry), /*wait=*/!audit.logging);
}

void Gate::Audit(const Caller& caller, const HttpRequest& req, const CallSubject& call,
                 const Status& outcome) {
  Record(Describe(caller, req, call), outcome);
}

}  // namespace cairn::server
