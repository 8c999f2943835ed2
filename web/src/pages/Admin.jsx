// Administration, for admins: accounts (people and service accounts, with the service
// accounts' tokens), teams and their members, and the audit log.
import { useEffect, useState } from "preact/hooks";
import { cairn, mlflow } from "../api.js";
import { Tokens } from "../components/Tokens.jsx";
import { useSession } from "../session.js";
import { formatTime } from "../util.js";

const TABS = ["users", "teams", "audit"];
// Service accounts' tokens are for machines: they expire unless told otherwise.
const SERVICE_TOKEN_DAYS = 90;

export function Admin({ params }) {
  const session = useSession();
  const tab = TABS.includes(params.get("tab")) ? params.get("tab") : "users";
  if (!session.auth) {
    return (
      <section>
        <h1>Administration</h1>
        <p class="muted">Authentication is off on this server: there are no accounts to manage.</p>
      </section>
    );
  }
  if (!session.is_admin) return <p class="error" role="alert">Only admins may see this page.</p>;
  return (
    <section>
      <h1>Administration</h1>
      <nav class="tabs">
        {TABS.map((t) => (
          <a key={t} class={t === tab ? "active" : ""} href={"#/admin?tab=" + t}>{t}</a>
        ))}
      </nav>
      {tab === "users" && <Users />}
      {tab === "teams" && <Teams />}
      {tab === "audit" && <Audit />}
    </section>
  );
}

function Users() {
  const session = useSession();
  const [users, setUsers] = useState(null);
  const [error, setError] = useState(null);
  const [form, setForm] = useState({ username: "", kind: "person", password: "", admin: false });
  const [tokensOf, setTokensOf] = useState(null);
  const load = () => cairn.get("users").then((r) => setUsers(r.users)).catch((e) => setError(e.message));
  useEffect(() => {
    load();
  }, []);
  const act = (promise) => promise.then(() => {
    setError(null);
    return load();
  }).catch((e) => setError(e.message));

  const create = (ev) => {
    ev.preventDefault();
    const service = form.kind === "service";
    act(cairn.post("users", {
      username: form.username.trim(), is_admin: form.admin, service_account: service,
      password: service ? undefined : form.password,
    }).then(() => setForm({ ...form, username: "", password: "" })));
  };
  const setAdmin = (u, on) => act(mlflow.patch("users/update-admin", { username: u.username, is_admin: on }));
  const remove = (u) => {
    if (confirm(`Delete account ${u.username}? Its tokens and sessions stop working.`)) {
      act(mlflow.delete("users/delete", { username: u.username }));
    }
  };
  const setPassword = (u) => {
    const password = prompt(`New password for ${u.username} (at least 8 characters)`);
    if (password) act(mlflow.patch("users/update-password", { username: u.username, password }));
  };
  const field = (key) => ({ value: form[key], onInput: (e) => setForm({ ...form, [key]: e.currentTarget.value }) });

  return (
    <div>
      {error && <p class="error" role="alert">{error}</p>}
      <form class="inline-form" id="new-user" onSubmit={create}>
        <input name="username" placeholder="username" required {...field("username")} />
        <select name="kind" value={form.kind} onChange={(e) => setForm({ ...form, kind: e.currentTarget.value })}>
          <option value="person">person</option>
          <option value="service">service account</option>
        </select>
        {form.kind === "person" && (
          <input name="password" type="password" autocomplete="new-password" required minlength="8"
                 placeholder="password (8 characters or more)" {...field("password")} />
        )}
        <label>
          <input type="checkbox" name="admin" checked={form.admin}
                 onChange={(e) => setForm({ ...form, admin: e.currentTarget.checked })} /> admin
        </label>
        <button type="submit">Create account</button>
      </form>
      {!users ? <p class="muted">Loading…</p> : (
        <table class="table" id="users">
          <thead><tr><th>Username</th><th>Kind</th><th>Admin</th><th>Created</th><th /></tr></thead>
          <tbody>
            {users.map((u) => {
              const self = u.username === session.username;
              return (
                <tr key={u.username} data-user={u.username}>
                  <td>{u.username}</td>
                  <td>{u.service_account ? "service account" : "person"}</td>
                  <td>{u.is_admin ? "yes" : ""}</td>
                  <td>{formatTime(u.created_time)}</td>
                  <td class="actions">
                    <button disabled={self} title={self ? "not your own account" : undefined}
                            onClick={() => setAdmin(u, !u.is_admin)}>
                      {u.is_admin ? "Remove admin" : "Make admin"}
                    </button>
                    {!u.service_account && <button onClick={() => setPassword(u)}>Set password</button>}
                    {u.service_account && (
                      <button onClick={() => setTokensOf(tokensOf === u.username ? null : u.username)}>
                        Tokens
                      </button>
                    )}
                    <button disabled={self} title={self ? "not your own account" : undefined}
                            onClick={() => remove(u)}>Delete</button>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {tokensOf && (
        <>
          <h2>Tokens of {tokensOf}</h2>
          <Tokens key={tokensOf} owner={tokensOf} defaultDays={SERVICE_TOKEN_DAYS} />
        </>
      )}
    </div>
  );
}

function Teams() {
  const [teams, setTeams] = useState(null);
  const [users, setUsers] = useState([]);
  const [error, setError] = useState(null);
  const [name, setName] = useState("");
  const [adding, setAdding] = useState({}); // team -> username typed
  const load = () => cairn.get("teams").then((r) => setTeams(r.teams)).catch((e) => setError(e.message));
  useEffect(() => {
    load();
    cairn.get("users").then((r) => setUsers(r.users.map((u) => u.username))).catch(() => {});
  }, []);
  const act = (promise) => promise.then(() => {
    setError(null);
    return load();
  }).catch((e) => setError(e.message));

  const create = (ev) => {
    ev.preventDefault();
    act(cairn.post("teams", { name: name.trim() }).then(() => setName("")));
  };
  const remove = (t) => {
    if (confirm(`Delete team ${t.name}? Its grants on experiments go with it.`)) {
      act(cairn.post("teams/delete", { name: t.name }));
    }
  };
  const addMember = (ev, t) => {
    ev.preventDefault();
    const username = (adding[t.name] || "").trim();
    if (!username) return;
    act(cairn.post("teams/members", { team: t.name, username })
      .then(() => setAdding({ ...adding, [t.name]: "" })));
  };
  const removeMember = (t, username) =>
    act(cairn.post("teams/members/remove", { team: t.name, username }));

  return (
    <div>
      {error && <p class="error" role="alert">{error}</p>}
      <form class="inline-form" id="new-team" onSubmit={create}>
        <input name="team" placeholder="new team name" required value={name}
               onInput={(e) => setName(e.currentTarget.value)} />
        <button type="submit">Create team</button>
      </form>
      <datalist id="usernames">{users.map((u) => <option key={u} value={u} />)}</datalist>
      {!teams ? <p class="muted">Loading…</p> : !teams.length ? <p class="muted">No teams yet.</p> : (
        <table class="table" id="teams">
          <thead><tr><th>Team</th><th>Members</th><th>Created</th><th /></tr></thead>
          <tbody>
            {teams.map((t) => (
              <tr key={t.name} data-team={t.name}>
                <td>{t.name}</td>
                <td>
                  {t.members.map((m) => (
                    <span class="chip" key={m} data-member={m}>
                      {m}{" "}
                      <button class="link" title={`remove ${m} from ${t.name}`}
                              onClick={() => removeMember(t, m)}>×</button>
                    </span>
                  ))}
                  <form class="inline-form" onSubmit={(ev) => addMember(ev, t)}>
                    <input name="member" list="usernames" placeholder="username"
                           value={adding[t.name] || ""}
                           onInput={(e) => setAdding({ ...adding, [t.name]: e.currentTarget.value })} />
                    <button type="submit">Add member</button>
                  </form>
                </td>
                <td>{formatTime(t.created_time)}</td>
                <td class="actions"><button onClick={() => remove(t)}>Delete</button></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

const AUDIT_PAGE = 100;

// The audit log, newest first, a page at a time; the filters match an actor or an object
// exactly, as the log records them ("alice", "alice/ci" for a token; "experiment 3").
function Audit() {
  const [entries, setEntries] = useState(null);
  const [next, setNext] = useState(null);
  const [error, setError] = useState(null);
  const [filter, setFilter] = useState({ actor: "", object: "" });
  const [applied, setApplied] = useState(filter);
  const read = (before) => cairn.get("audit", {
    actor: applied.actor || undefined, object: applied.object || undefined,
    max_results: AUDIT_PAGE, before_id: before,
  });
  useEffect(() => {
    setEntries(null);
    read().then((r) => {
      setEntries(r.entries);
      setNext(r.next_before_id || null);
      setError(null);
    }).catch((e) => setError(e.message));
  }, [applied]);
  const more = () => read(next).then((r) => {
    setEntries([...entries, ...r.entries]);
    setNext(r.next_before_id || null);
  }).catch((e) => setError(e.message));
  const apply = (ev) => {
    ev.preventDefault();
    setApplied({ actor: filter.actor.trim(), object: filter.object.trim() });
  };

  return (
    <div>
      <form class="inline-form" id="audit-filter" onSubmit={apply}>
        <input name="actor" placeholder="actor, e.g. alice" value={filter.actor}
               onInput={(e) => setFilter({ ...filter, actor: e.currentTarget.value })} />
        <input name="object" placeholder="object, e.g. experiment 3" value={filter.object}
               onInput={(e) => setFilter({ ...filter, object: e.currentTarget.value })} />
        <button type="submit">Filter</button>
      </form>
      {error && <p class="error" role="alert">{error}</p>}
      {!entries ? <p class="muted">Loading…</p> : !entries.length ? <p class="muted">No entries.</p> : (
        <table class="table" id="audit">
          <thead><tr><th>Time</th><th>Actor</th><th>Source</th><th>Action</th><th>Object</th><th>Outcome</th></tr></thead>
          <tbody>
            {entries.map((e) => (
              <tr key={e.id} class={e.outcome === "ok" ? "" : "refused"}>
                <td>{formatTime(e.time)}</td><td>{e.actor}</td><td>{e.source}</td>
                <td>{e.action}</td><td>{e.object}</td><td>{e.outcome}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {next && <p><button onClick={more}>Older entries</button></p>}
    </div>
  );
}
