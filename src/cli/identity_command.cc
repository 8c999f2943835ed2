// `cairn login`, `cairn token create|ls|revoke` and `cairn audit`: identity through a tracking
// server's API (docs/api/cairn.md, "Identity").
#include <cctype>
#include <charconv>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/secrets.h"
#include "client/credentials.h"
#include "client/tracking_client.h"
#include "report/run_report.h"
#include "util/clock.h"
#include "util/hash.h"
#include "util/strings.h"

namespace cairn::cli {
namespace {

using nlohmann::json;

bool ParseInt64(std::string_view text, int64_t* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

// A query value, %-escaped.
std::string QueryValue(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      char hex[4];
      std::snprintf(hex, sizeof(hex), "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

// Calls the API and parses the answer; prints the error and returns nullopt on failure.
std::optional<json> Call(client::TrackingClient& client, const std::string& method,
                         const std::string& path, const json& body = json::object()) {
  Result<std::string> out = client.CallJson(method, path, method == "GET" ? "" : body.dump());
  if (!out.ok()) {
    std::fprintf(stderr, "error: %s\n", out.status().message().c_str());
    return std::nullopt;
  }
  json parsed = json::parse(*out, nullptr, false);
  if (parsed.is_discarded()) {
    std::fprintf(stderr, "error: the server's answer to %s %s is not JSON\n", method.c_str(),
                 path.c_str());
    return std::nullopt;
  }
  return parsed;
}

std::string Text(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A time of the API (ms, or null) as the tables show it.
std::string When(const json& j, const char* key, const char* none) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return none;
  return report::FormatCompactTime(it->get<int64_t>(), SystemClock()->NowMillis());
}

// --- cairn token ----------------------------------------------------------------------------

struct TokenFlags {
  std::string tracking_uri;
  std::string name;
  std::string scopes;
  int64_t expires_in_days = -1;
  std::string owner;
  bool save = false;
  bool all = false;
  bool json = false;
  std::string token;
};

int CreateToken(const TokenFlags& flags) {
  auto client = ConnectOrExplain(flags.tracking_uri);
  if (client == nullptr) return 2;
  json body = {{"name", flags.name}};
  if (!flags.owner.empty()) body["owner"] = flags.owner;
  if (!flags.scopes.empty()) {
    std::vector<std::string> scopes;
    for (std::string_view s : Split(flags.scopes, ',')) scopes.emplace_back(s);
    body["scopes"] = scopes;
  }
  if (flags.expires_in_days >= 0) body["expires_in_days"] = flags.expires_in_days;
  std::optional<json> out = Call(*client, "POST", "/api/cairn/v1/tokens", body);
  if (!out) return 1;
  const std::string value = Text(*out, "value");
  const json& token = (*out)["token"];
  if (flags.save) {
    Status s = client::SaveToken(client->tracking_uri(), value);
    if (!s.ok()) {
      std::fprintf(stderr, "error: saving the token: %s\n", s.message().c_str());
      std::printf("%s\n", value.c_str());
      return 1;
    }
    std::fprintf(stderr, "token %s (id %s) saved in %s for %s\n", Text(token, "name").c_str(),
                 Text(token, "id").c_str(), client::CredentialsFilePath().c_str(),
                 client->tracking_uri().c_str());
    return 0;
  }
  std::fprintf(stderr,
               "token %s (id %s, %s, expires %s); its value, shown only this once:\n",
               Text(token, "name").c_str(), Text(token, "id").c_str(),
               token["scopes"].dump().c_str(), When(token, "expiry_time", "never").c_str());
  std::printf("%s\n", value.c_str());
  return 0;
}

int ListTokens(const TokenFlags& flags) {
  auto client = ConnectOrExplain(flags.tracking_uri);
  if (client == nullptr) return 2;
  std::string path = "/api/cairn/v1/tokens";
  if (flags.all) {
    path += "?all=true";
  } else if (!flags.owner.empty()) {
    path += "?owner=" + QueryValue(flags.owner);
  }
  std::optional<json> out = Call(*client, "GET", path);
  if (!out) return 1;
  if (flags.json) {
    for (const json& t : (*out)["tokens"]) std::printf("%s\n", t.dump().c_str());
    return 0;
  }
  report::Table table;
  for (const char* h : {"id", "name", "owner", "scopes", "created", "expires", "last used",
                        "state"}) {
    table.columns.push_back({h});
  }
  const int64_t now = SystemClock()->NowMillis();
  for (const json& t : (*out)["tokens"]) {
    std::string scopes;
    for (const json& s : t["scopes"]) scopes += (scopes.empty() ? "" : ",") + s.get<std::string>();
    std::string state = "active";
    if (t["revoked_time"].is_number_integer()) {
      state = "revoked";
    } else if (t["expiry_time"].is_number_integer() && t["expiry_time"].get<int64_t>() <= now) {
      state = "expired";
    }
    table.rows.push_back({Text(t, "id"), Text(t, "name"), Text(t, "owner"), scopes,
                          When(t, "created_time", "-"), When(t, "expiry_time", "never"),
                          When(t, "last_used_time", "never"), state});
  }
  const std::string text = report::RenderTable(table, report::DetectOutputStyle());
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

int RevokeToken(const TokenFlags& flags) {
  auto client = ConnectOrExplain(flags.tracking_uri);
  if (client == nullptr) return 2;
  std::optional<json> out =
      Call(*client, "POST", "/api/cairn/v1/tokens/revoke", {{"token", flags.token}});
  if (!out) return 1;
  const json& token = (*out)["token"];
  std::printf("revoked token %s (id %s) of %s\n", Text(token, "name").c_str(),
              Text(token, "id").c_str(), Text(token, "owner").c_str());
  return 0;
}

// --- cairn login ----------------------------------------------------------------------------

struct LoginFlags {
  std::string tracking_uri;
  std::string username;
  std::string password_file;
  std::string token_name;
  int64_t expires_in_days = 90;
};

// The token a new `cairn login` replaced in the credentials file is revoked, so that no
// forgotten token stays valid; one of another account, or one no longer valid, is left alone.
void RevokeReplacedToken(client::TrackingClient& signed_in, const std::string& old_value) {
  client::ClientOptions options;
  options.tracking_uri = signed_in.tracking_uri();
  options.authorization = "Bearer " + old_value;
  auto old = client::TrackingClient::Create(options);
  if (!old.ok()) return;
  Result<std::string> who = (*old)->CallJson("GET", "/api/cairn/v1/auth/session", "");
  if (!who.ok()) return;
  const json session = json::parse(*who, nullptr, false);
  if (session.is_discarded() || !session.contains("token")) return;
  // Only a token of the account that signed in: an admin signing in must not revoke another
  // person's token that happened to be in this file.
  Result<std::string> me = signed_in.CallJson("GET", "/api/cairn/v1/auth/session", "");
  if (!me.ok()) return;
  const json mine = json::parse(*me, nullptr, false);
  if (mine.is_discarded() || Text(mine, "username") != Text(session, "username")) return;
  const std::string id = Text(session["token"], "id");
  Result<std::string> revoked =
      signed_in.CallJson("POST", "/api/cairn/v1/tokens/revoke", json({{"token", id}}).dump());
  if (revoked.ok()) {
    std::printf("revoked the token it replaces (%s)\n",
                Text(session["token"], "name").c_str());
  }
}

int Login(const LoginFlags& flags) {
  std::string username = flags.username;
  if (username.empty()) {
    const char* user = std::getenv("USER");
    username = user != nullptr ? user : "";
  }
  if (username.empty()) {
    std::fprintf(stderr, "error: name the account with --username\n");
    return 2;
  }
  Result<std::string> password =
      ReadPassword(flags.password_file, "Password for " + username + ": ", false);
  if (!password.ok()) {
    std::fprintf(stderr, "error: %s\n", password.status().message().c_str());
    return 2;
  }
  client::ClientOptions options;
  options.tracking_uri = client::ResolveTrackingUri(flags.tracking_uri);
  options.authorization = "Basic " + Base64Encode(username + ":" + *password);
  auto client = client::TrackingClient::Create(options);
  if (!client.ok()) {
    std::fprintf(stderr, "error: %s\n", client.status().message().c_str());
    return 2;
  }
  std::string name = flags.token_name;
  if (name.empty()) {
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    name = "cli-" + std::string(host) + "-" + RandomHex(2);
  }
  // The token carries what the account may do: an admin's includes the admin scope.
  std::optional<json> me =
      Call(**client, "GET", "/api/2.0/mlflow/users/get?username=" + QueryValue(username));
  if (!me) return 1;
  const bool admin = (*me)["user"].value("is_admin", false);
  std::optional<json> out =
      Call(**client, "POST", "/api/cairn/v1/tokens",
           {{"name", name},
            {"expires_in_days", flags.expires_in_days},
            {"scopes", admin ? json::array({"admin"}) : json::array({"write"})}});
  if (!out) return 1;
  const std::optional<std::string> replaced = client::SavedToken((*client)->tracking_uri());
  Status s = client::SaveToken((*client)->tracking_uri(), Text(*out, "value"));
  if (!s.ok()) {
    std::fprintf(stderr, "error: saving the token: %s\n", s.message().c_str());
    return 1;
  }
  std::printf("signed in to %s as %s: token %s saved in %s\n",
              (*client)->tracking_uri().c_str(), username.c_str(), name.c_str(),
              client::CredentialsFilePath().c_str());
  if (replaced) RevokeReplacedToken(**client, *replaced);
  return 0;
}

// --- cairn audit ----------------------------------------------------------------------------

struct AuditFlags {
  std::string tracking_uri;
  std::string actor;
  std::string object;
  std::string since;
  int64_t limit = 100;
  bool json = false;
};

// "90m", "12h", "7d" before now; "2026-12-01" or "2026-12-01T08:30" in UTC; or epoch ms.
std::optional<int64_t> ParseSince(const std::string& text, int64_t now) {
  if (text.empty()) return 0;
  char unit = text.back();
  const std::string number = text.substr(0, text.size() - 1);
  int64_t n = 0;
  const int64_t per = unit == 's' ? 1000 : unit == 'm' ? 60'000 : unit == 'h' ? 3'600'000
                                                        : unit == 'd' ? 86'400'000 : 0;
  if (per != 0 && ParseInt64(number, &n) && n >= 0) return now - n * per;
  if (ParseInt64(text, &n)) return n;
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M", &tm);
  if (end == nullptr) {
    tm = {};
    end = strptime(text.c_str(), "%Y-%m-%d", &tm);
  }
  if (end == nullptr || *end != '\0') return std::nullopt;
  return static_cast<int64_t>(timegm(&tm)) * 1000;
}

int ReadAudit(const AuditFlags& flags) {
  const std::optional<int64_t> since = ParseSince(flags.since, SystemClock()->NowMillis());
  if (!since) {
    std::fprintf(stderr, "error: --since takes 90m, 12h, 7d, 2026-12-01 or 2026-12-01T08:30\n");
    return 2;
  }
  auto client = ConnectOrExplain(flags.tracking_uri);
  if (client == nullptr) return 2;
  std::string path = "/api/cairn/v1/audit?max_results=" + std::to_string(flags.limit) +
                     "&since=" + std::to_string(*since);
  if (!flags.actor.empty()) path += "&actor=" + QueryValue(flags.actor);
  if (!flags.object.empty()) path += "&object=" + QueryValue(flags.object);
  std::optional<json> out = Call(*client, "GET", path);
  if (!out) return 1;
  if (flags.json) {
    for (const json& e : (*out)["entries"]) std::printf("%s\n", e.dump().c_str());
    return 0;
  }
  report::Table table;
  for (const char* h : {"time", "actor", "source", "action", "object", "outcome"}) {
    table.columns.push_back({h});
  }
  for (const json& e : (*out)["entries"]) {
    const std::string actor = Text(e, "actor");
    table.rows.push_back({report::FormatFullTime(e["time"].get<int64_t>()),
                          actor.empty() ? "-" : actor, Text(e, "source"), Text(e, "action"),
                          Text(e, "object"), Text(e, "outcome")});
  }
  const std::string text = report::RenderTable(table, report::DetectOutputStyle());
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

}  // namespace

void RegisterToken(CLI::App& app, Action* action) {
  CLI::App* group = app.add_subcommand(
      "token",
      "Access tokens of a tracking server with --auth on: for scripts, CI and agents, sent as\n"
      "`Authorization: Bearer` ($CAIRN_TOKEN, $MLFLOW_TRACKING_TOKEN or the credentials file).");
  group->require_subcommand(1);
  auto flags = std::make_shared<TokenFlags>();
  CLI::App* create = group->add_subcommand(
      "create",
      "Create a token and print its value, which the server keeps only a hash of: it is shown\n"
      "this once. With --save it goes into the credentials file instead.");
  create->add_option("name", flags->name, "A name for the token, unique among yours")->required();
  create->add_option("--scopes", flags->scopes,
                     "read, write (read and write, the default) or admin (an admin's only)");
  create->add_option("--expires-in", flags->expires_in_days,
                     "Days until it stops working; 0 never (default: never, 90 for a service "
                     "account's token)");
  create->add_option("--for", flags->owner,
                     "The account it is for, such as a service account (admins only)");
  create->add_flag("--save", flags->save,
                   "Write it to the credentials file for this tracking URI instead of printing");
  AddTrackingUriOption(create, &flags->tracking_uri);
  create->callback([flags, action] { *action = [flags] { return CreateToken(*flags); }; });

  CLI::App* ls = group->add_subcommand("ls", "List your tokens (never their values).");
  ls->add_flag("--all", flags->all, "Everyone's tokens (admins only)");
  ls->add_option("--for", flags->owner, "Another account's tokens (admins only)");
  ls->add_flag("--json", flags->json, "One JSON object per token and line");
  AddTrackingUriOption(ls, &flags->tracking_uri);
  ls->callback([flags, action] { *action = [flags] { return ListTokens(*flags); }; });

  CLI::App* revoke = group->add_subcommand(
      "revoke", "Revoke a token at once: by id, or by name among your own.");
  revoke->add_option("token", flags->token, "The token's id or name")->required();
  AddTrackingUriOption(revoke, &flags->tracking_uri);
  revoke->callback([flags, action] { *action = [flags] { return RevokeToken(*flags); }; });
}

void RegisterLogin(CLI::App& app, Action* action) {
  auto flags = std::make_shared<LoginFlags>();
  CLI::App* cmd = app.add_subcommand(
      "login",
      "Sign in to a tracking server with your password once: creates a token and saves it in\n"
      "the credentials file ($XDG_CONFIG_HOME/cairn/credentials, mode 0600), which cairn's\n"
      "commands and Python client then use for that server.");
  cmd->add_option("--username,-u", flags->username, "Your account (default $USER)");
  cmd->add_option("--password-file", flags->password_file,
                  "File whose first line is the password (mode 0600); default: ask");
  cmd->add_option("--token-name", flags->token_name,
                  "Name of the token to create (default cli-HOST-XXXX)");
  cmd->add_option("--expires-in", flags->expires_in_days, "Days the token lasts; 0 never")
      ->capture_default_str();
  AddTrackingUriOption(cmd, &flags->tracking_uri);
  cmd->callback([flags, action] { *action = [flags] { return Login(*flags); }; });
}

void RegisterAudit(CLI::App& app, Action* action) {
  auto flags = std::make_shared<AuditFlags>();
  CLI::App* cmd = app.add_subcommand(
      "audit",
      "Read the audit log of a tracking server (admins): who changed or deleted what, from\n"
      "where, and refused sign-ins and requests; newest first.");
  cmd->add_option("--actor", flags->actor, "Only this user (or user/token)");
  cmd->add_option("--object", flags->object,
                  "Only this object ('experiment 3'), or those starting with it when it ends "
                  "in a space or / ('run ', 'artifact 3/')");
  cmd->add_option("--since", flags->since, "90m, 12h, 7d, 2026-12-01 or 2026-12-01T08:30 (UTC)");
  cmd->add_option("--limit,-n", flags->limit, "At most this many entries")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  cmd->add_flag("--json", flags->json, "One JSON object per entry and line");
  AddTrackingUriOption(cmd, &flags->tracking_uri);
  cmd->callback([flags, action] { *action = [flags] { return ReadAudit(*flags); }; });
}

}  // namespace cairn::cli
