// `cairn admin create-user|set-password`: accounts made on a server's store directly, for the
// first admin and for an admin who lost their password. A running server sees the change
// within a second.
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "cli/commands.h"
#include "cli/secrets.h"
#include "service/access_service.h"
#include "service/identity_service.h"
#include "store/metadata_store.h"
#include "util/clock.h"

namespace cairn::cli {
namespace {

struct AdminFlags {
  std::string username;
  bool admin = false;
  bool service_account = false;
  std::string password_file;
  std::string data_dir;
  std::string backend_store_uri;
};

std::string StoreUri(const AdminFlags& flags) {
  if (!flags.backend_store_uri.empty()) return flags.backend_store_uri;
  return "sqlite:///" + DataDir(flags.data_dir) + "/cairn.db";
}

// The audit line of a change made here, on the machine itself.
void Audit(store::MetadataStore& store, const std::string& action, const std::string& object) {
  const char* user = std::getenv("USER");
  core::AuditEntry e{0, SystemClock()->NowMillis(),
                     std::string("cairn admin (") + (user != nullptr ? user : "?") + ")",
                     "local", action, object, "ok"};
  Status s = store.identity().AppendAudit(e);
  if (!s.ok()) std::fprintf(stderr, "warning: writing the audit log: %s\n", s.message().c_str());
}

int WithIdentity(const AdminFlags& flags,
                 const std::function<int(store::MetadataStore&, service::IdentityService&)>& fn) {
  Result<std::unique_ptr<store::MetadataStore>> store =
      store::OpenMetadataStore(StoreUri(flags), store::StoreOptions{});
  if (!store.ok()) {
    std::fprintf(stderr, "error: %s\n", store.status().message().c_str());
    return 1;
  }
  service::AccessService access(store->get(), SystemClock(), service::AccessOptions{});
  service::IdentityService identity(store->get(), &access, SystemClock());
  return fn(**store, identity);
}

int CreateUser(const AdminFlags& flags) {
  std::string password;
  if (!flags.service_account) {
    Result<std::string> read =
        ReadPassword(flags.password_file, "Password for " + flags.username + ": ", true);
    if (!read.ok()) {
      std::fprintf(stderr, "error: %s\n", read.status().message().c_str());
      return 2;
    }
    password = *read;
  }
  return WithIdentity(flags, [&](store::MetadataStore& store, service::IdentityService& ids) {
    Result<core::User> u =
        ids.CreateUser(flags.username, password, flags.admin, flags.service_account);
    if (!u.ok()) {
      std::fprintf(stderr, "error: %s\n", u.status().message().c_str());
      return 1;
    }
    Audit(store, "create-user", "user " + flags.username);
    std::printf("created %s %s%s\n", flags.service_account ? "service account" : "user",
                flags.username.c_str(), flags.admin ? " (admin)" : "");
    if (flags.service_account) {
      std::printf("give it a token: cairn token create NAME --for %s\n", flags.username.c_str());
    }
    return 0;
  });
}

int SetPassword(const AdminFlags& flags) {
  Result<std::string> password =
      ReadPassword(flags.password_file, "New password for " + flags.username + ": ", true);
  if (!password.ok()) {
    std::fprintf(stderr, "error: %s\n", password.status().message().c_str());
    return 2;
  }
  return WithIdentity(flags, [&](store::MetadataStore& store, service::IdentityService& ids) {
    Status s = ids.UpdatePassword(flags.username, *password);
    if (!s.ok()) {
      std::fprintf(stderr, "error: %s\n", s.message().c_str());
      return 1;
    }
    Audit(store, "set-password", "user " + flags.username);
    std::printf("set the password of %s\n", flags.username.c_str());
    return 0;
  });
}

void AddStoreOptions(CLI::App* cmd, AdminFlags* flags) {
  cmd->add_option("--data-dir", flags->data_dir,
                  "The server's data directory (default $CAIRN_HOME, else ./.cairn)");
  cmd->add_option("--backend-store-uri", flags->backend_store_uri,
                  "The server's metadata store (default sqlite:///<data-dir>/cairn.db)");
  cmd->add_option("--password-file", flags->password_file,
                  "File whose first line is the password (mode 0600); default: ask twice");
}

}  // namespace

void RegisterAdmin(CLI::App& app, Action* action) {
  CLI::App* group = app.add_subcommand(
      "admin",
      "Accounts made on a server's store directly (the first admin, a lost password), on the\n"
      "machine that holds it. Once a server runs with --auth on, admins manage accounts\n"
      "through its API and web UI.");
  group->require_subcommand(1);
  auto flags = std::make_shared<AdminFlags>();
  CLI::App* create = group->add_subcommand("create-user", "Create an account.");
  create->add_option("username", flags->username, "The account's name")->required();
  create->add_flag("--admin", flags->admin, "An administrator, who may do everything");
  create->add_flag("--service-account", flags->service_account,
                   "An account for agents and CI, without a password: it signs in with tokens");
  AddStoreOptions(create, flags.get());
  create->callback([flags, action] { *action = [flags] { return CreateUser(*flags); }; });

  CLI::App* set = group->add_subcommand(
      "set-password", "Set an account's password; its browser sessions end.");
  set->add_option("username", flags->username, "The account's name")->required();
  AddStoreOptions(set, flags.get());
  set->callback([flags, action] { *action = [flags] { return SetPassword(*flags); }; });
}

}  // namespace cairn::cli
