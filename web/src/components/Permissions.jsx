// Who may do what with one experiment, for those who may manage it (and only shown to them):
// the grants to users and teams, each level changeable, removable, and a form for a new one.
// Users and teams without a grant have the server's default level.
import { useEffect, useState } from "preact/hooks";
import { cairn } from "../api.js";
import { experimentAccess, LEVELS, useSession } from "../session.js";

export function Permissions({ experimentId }) {
  const session = useSession();
  const [answer, setAnswer] = useState(null); // null: not shown
  const [error, setError] = useState(null);
  const [form, setForm] = useState({ kind: "username", name: "", permission: "READ" });

  const load = () => cairn.get("experiments/permissions", { experiment_id: experimentId })
    .then(setAnswer);
  useEffect(() => {
    if (!session.auth) return;
    experimentAccess(session, [experimentId])
      .then((access) => access.get(experimentId).manage && load())
      .catch((e) => setError(e.message));
  }, [experimentId]);
  if (!answer) return error ? <p class="error" role="alert">{error}</p> : null;

  const act = (promise) => promise.then(load).then(() => setError(null)).catch((e) => setError(e.message));
  const who = (g) => (g.team !== undefined ? { team: g.team } : { username: g.username });
  const set = (g, permission) =>
    act(cairn.post("experiments/permissions", { experiment_id: experimentId, ...who(g), permission }));
  const remove = (g) => {
    const name = g.team !== undefined ? `team ${g.team}` : g.username;
    if (confirm(`Remove the grant of ${name}? The default level (${answer.default_permission}) applies then.`)) {
      act(cairn.post("experiments/permissions/delete", { experiment_id: experimentId, ...who(g) }));
    }
  };
  const add = (ev) => {
    ev.preventDefault();
    act(cairn.post("experiments/permissions", {
      experiment_id: experimentId, [form.kind]: form.name.trim(), permission: form.permission,
    }).then(() => setForm({ ...form, name: "" })));
  };
  const levels = (value, onChange, name) => (
    <select name={name} value={value} onChange={(e) => onChange(e.currentTarget.value)}>
      {LEVELS.map((l) => <option key={l} value={l}>{l}</option>)}
    </select>
  );

  return (
    <details class="panel" id="permissions">
      <summary>Permissions</summary>
      {error && <p class="error" role="alert">{error}</p>}
      <p class="muted">
        READ sees the experiment and its runs; EDIT also logs runs and renames it; MANAGE also
        deletes it and grants. Anyone without a grant here: {answer.default_permission}. A
        user's own grant counts over their teams'.
      </p>
      <table class="table" id="grants">
        <thead><tr><th>Who</th><th>Permission</th><th /></tr></thead>
        <tbody>
          {answer.permissions.map((g) => {
            const key = g.team !== undefined ? "team:" + g.team : "user:" + g.username;
            return (
              <tr key={key} data-grant={key}>
                <td>{g.team !== undefined ? <>{g.team} <span class="muted">(team)</span></> : g.username}</td>
                <td>{levels(g.permission, (p) => set(g, p))}</td>
                <td class="actions"><button onClick={() => remove(g)}>Remove</button></td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <form class="inline-form" id="new-grant" onSubmit={add}>
        <select name="kind" value={form.kind} onChange={(e) => setForm({ ...form, kind: e.currentTarget.value })}>
          <option value="username">user</option>
          <option value="team">team</option>
        </select>
        <input name="grantee" required placeholder={form.kind === "team" ? "team name" : "username"}
               value={form.name} onInput={(e) => setForm({ ...form, name: e.currentTarget.value })} />
        {levels(form.permission, (p) => setForm({ ...form, permission: p }), "permission")}
        <button type="submit">Grant</button>
      </form>
    </details>
  );
}
