// Experiments: each with its runs' count and last activity; create, rename and delete (offered
// where the signed-in user may: rename needs EDIT, delete MANAGE).
import { useEffect, useRef, useState } from "preact/hooks";
import { experimentStats, listExperiments, mlflow } from "../api.js";
import { href } from "../router.js";
import { experimentAccess, useSession } from "../session.js";
import { formatTime } from "../util.js";

export function Experiments() {
  const [experiments, setExperiments] = useState(null);
  const [counts, setCounts] = useState(null); // by experiment id; null: not known
  const [error, setError] = useState(null);
  const [name, setName] = useState("");
  const session = useSession();
  const [access, setAccess] = useState(new Map()); // by experiment id; absent: not known yet
  const asked = useRef(new Set()); // ids whose access is known or being asked, asked once a visit

  // Run counts come from one request over all experiments; the experiment's own
  // last_update_time changes only when the experiment itself does, so the last activity is the
  // later of it and its runs' latest start or end.
  // Without the counts the list still shows; a successful load clears an earlier error.
  const load = () => {
    const stats = experimentStats().catch((e) => {
      setError("Run counts: " + e.message);
      return null;
    });
    return Promise.all([listExperiments(), stats])
      .then(([list, st]) => {
        setExperiments(list);
        const ids = list.map((e) => e.experiment_id).filter((id) => !asked.current.has(id));
        ids.forEach((id) => asked.current.add(id));
        if (ids.length) {
          experimentAccess(session, ids)
            .then((found) => setAccess((known) => new Map([...known, ...found])))
            .catch((e) => setError("Permissions: " + e.message));
        }
        setCounts(st && Object.fromEntries(st.map((x) => [x.experiment_id, x])));
        if (st) setError(null);
      })
      .catch((e) => setError(e.message));
  };
  useEffect(() => {
    load();
  }, []);

  const act = (promise) => promise.then(load).catch((e) => setError(e.message));
  const create = (ev) => {
    ev.preventDefault();
    if (!name.trim()) return;
    act(mlflow.post("experiments/create", { name: name.trim() }).then(() => setName("")));
  };
  const rename = (e) => {
    const to = prompt(`Rename experiment ${e.name} to`, e.name);
    if (to && to !== e.name) {
      act(mlflow.post("experiments/update", { experiment_id: e.experiment_id, new_name: to }));
    }
  };
  const remove = (e) => {
    if (confirm(`Delete experiment ${e.name}? Its runs go with it (it can be restored).`)) {
      act(mlflow.post("experiments/delete", { experiment_id: e.experiment_id }));
    }
  };

  return (
    <section>
      <h1>Experiments</h1>
      {error && <p class="error" role="alert">{error}</p>}
      <form class="inline-form" onSubmit={create}>
        <input placeholder="new experiment name" value={name}
               onInput={(e) => setName(e.currentTarget.value)} />
        <button type="submit">Create</button>
      </form>
      {!experiments ? (
        <p class="muted">Loading…</p>
      ) : (
        <table class="table" id="experiments">
          <thead>
            <tr><th>Name</th><th>Runs</th><th>Last activity</th><th /></tr>
          </thead>
          <tbody>
            {experiments.map((e) => {
              const st = !counts ? { runs: "…", running: 0, last_activity: 0 }
                : counts[e.experiment_id] || { runs: 0, running: 0, last_activity: 0 };
              const may = access.get(e.experiment_id);
              return (
                <tr key={e.experiment_id} data-experiment={e.experiment_id}>
                  <td><a href={href("experiments", e.experiment_id)}>{e.name}</a></td>
                  <td class="num">
                    {st.runs}
                    {st.running > 0 && <span class="muted"> ({st.running} running)</span>}
                  </td>
                  <td>{formatTime(Math.max(Number(e.last_update_time || 0), st.last_activity))}</td>
                  <td class="actions">
                    <button disabled={!may || !may.edit} onClick={() => rename(e)}
                            title={may && !may.edit ? "needs EDIT on this experiment" : undefined}>
                      Rename
                    </button>
                    <button disabled={!may || !may.manage} onClick={() => remove(e)}
                            title={may && !may.manage ? "needs MANAGE on this experiment" : undefined}>
                      Delete
                    </button>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </section>
  );
}
