// One registered model: its description and tags; its aliases, each with a Roll back button,
// and every move they made (set, delete, rollback: when, to which version, by whom); a form
// that promotes a version to an alias; and its versions. The page is read again after each
// action, and a refusal is shown where the person acted.
import { useEffect, useState } from "preact/hooks";
import { cairn, mlflow, modelVersions } from "../api.js";
import { ModelCrumbs } from "../components/Crumbs.jsx";
import { KeyValues } from "../components/KeyValues.jsx";
import { href } from "../router.js";
import { formatTime, tagMap } from "../util.js";

export function Model({ name }) {
  const [state, setState] = useState(null); // {model, versions, moves}
  const [error, setError] = useState(null);
  const [actionError, setActionError] = useState(null);
  const [notice, setNotice] = useState(null);
  const [busy, setBusy] = useState(false);
  const [form, setForm] = useState({ version: "", alias: "" }); // version "": the newest

  const load = () => Promise.all([
    mlflow.get("registered-models/get", { name }),
    modelVersions(name),
    cairn.get("models/alias-history", { name }),
  ]).then(([{ registered_model: model }, versions, { moves }]) => {
    setState({ model, versions, moves });
    setError(null);
  }).catch((e) => setError(e.message));
  useEffect(() => {
    load();
  }, [name]);

  if (error && !state) return <p class="error" role="alert">{error}</p>;
  if (!state) return <p class="muted">Loading…</p>;
  const { model, versions, moves } = state;
  const aliases = [...(model.aliases || [])].sort((a, b) => a.alias.localeCompare(b.alias));
  const named = Object.fromEntries(aliases.map((a) => [a.alias, a.version]));

  // `said` turns the server's answer into the line shown above the aliases.
  const act = (promise, said) => {
    setBusy(true);
    setActionError(null);
    setNotice(null);
    promise.then((r) => setNotice(said(r)))
      .catch((e) => setActionError(e.message))
      .then(load)
      .finally(() => setBusy(false));
  };
  const promote = (ev) => {
    ev.preventDefault();
    const alias = form.alias.trim();
    const version = form.version || (versions[0] && versions[0].version);
    if (!alias || !version) return;
    const before = named[alias];
    const request = mlflow.post("registered-models/alias", { name, alias, version })
      .then(() => setForm({ ...form, alias: "" }));
    act(request, () => `@${alias} now names version ${version}` + (before ? ` (it named ${before})` : ""));
  };
  const rollBack = (alias) =>
    act(cairn.post("models/rollback", { name, alias }),
        (r) => (r.version ? `@${alias} is back at version ${r.version}` : `@${alias} names no version now`));

  return (
    <section>
      <ModelCrumbs />
      <h1>{model.name}</h1>
      {error && <p class="error" role="alert">{error}</p>}
      <p class="muted">
        created {formatTime(model.creation_timestamp)}{model.user_id ? ` by ${model.user_id}` : ""}
        {" · "}last updated {formatTime(model.last_updated_timestamp)}
      </p>
      {model.description ? <p class="description" id="model-description">{model.description}</p>
        : <p class="muted" id="model-description">No description.</p>}
      <h2>Tags</h2>
      <KeyValues rows={tagMap(model.tags)} id="model-tags" />

      <h2>Aliases</h2>
      {notice && <p class="notice" id="alias-notice">{notice}</p>}
      {actionError && <p class="error" role="alert" id="alias-error">{actionError}</p>}
      {!aliases.length ? <p class="muted">No aliases: promote a version below to give it one.</p> : (
        <table class="table" id="aliases">
          <thead><tr><th>Alias</th><th>Version</th><th /></tr></thead>
          <tbody>
            {aliases.map((a) => (
              <tr key={a.alias} data-alias={a.alias}>
                <td>@{a.alias}</td>
                <td class="version"><a href={href("models", name, "versions", a.version)}>{a.version}</a></td>
                <td class="actions">
                  <button disabled={busy} onClick={() => rollBack(a.alias)}
                          title={`move @${a.alias} back to the version it named before`}>Roll back</button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <form class="inline-form" id="promote" onSubmit={promote}>
        <label>
          Promote version{" "}
          <select name="version" value={form.version || (versions[0] && versions[0].version) || ""}
                  onChange={(e) => setForm({ ...form, version: e.currentTarget.value })}>
            {versions.map((v) => <option key={v.version} value={v.version}>{v.version}</option>)}
          </select>
        </label>
        <label>
          to alias{" "}
          <input name="alias" list="alias-names" placeholder="e.g. champion" required value={form.alias}
                 onInput={(e) => setForm({ ...form, alias: e.currentTarget.value })} />
        </label>
        <datalist id="alias-names">{aliases.map((a) => <option key={a.alias} value={a.alias} />)}</datalist>
        <button type="submit" disabled={busy || !versions.length}>Promote</button>
      </form>
      {moves.length > 0 && (
        <details class="panel" id="alias-history-panel" open>
          <summary>History of the aliases ({moves.length} move{moves.length === 1 ? "" : "s"})</summary>
          <table class="table" id="alias-history">
            <thead><tr><th>Time</th><th>Alias</th><th>Move</th><th>Version</th><th>By</th></tr></thead>
            <tbody>
              {[...moves].reverse().map((m) => (
                <tr key={m.id} data-move={m.kind}>
                  <td>{formatTime(m.time)}</td>
                  <td>@{m.alias}</td>
                  <td>{m.kind}</td>
                  <td class="version">
                    {m.version ? <a href={href("models", name, "versions", m.version)}>{m.version}</a>
                      : <span class="muted">none</span>}
                  </td>
                  <td>{m.actor || <span class="muted">—</span>}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </details>
      )}

      <h2>Versions</h2>
      {!versions.length ? <p class="muted">No versions yet.</p> : (
        <table class="table" id="versions">
          <thead>
            <tr>
              <th>Version</th><th>Stage</th><th>Status</th><th>Aliases</th><th>Created</th><th>Run</th>
              <th>Source</th>
            </tr>
          </thead>
          <tbody>
            {versions.map((v) => (
              <tr key={v.version} data-version={v.version}>
                <td class="num"><a href={href("models", name, "versions", v.version)}>{v.version}</a></td>
                <td>{v.current_stage}</td>
                <td>{v.status}</td>
                <td>{(v.aliases || []).map((a) => <span class="chip" key={a}>@{a}</span>)}</td>
                <td>{formatTime(v.creation_timestamp)}</td>
                <td>{v.run_id ? <a href={href("runs", v.run_id)}><code>{v.run_id.slice(0, 8)}</code></a>
                  : <span class="muted">none</span>}</td>
                <td><code>{v.source}</code></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
