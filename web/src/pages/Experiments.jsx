// Experiments: each with its runs' count and last activity; create, rename and delete.
import { useEffect, useState } from "preact/hooks";
import { listExperiments, mlflow, searchRuns } from "../api.js";
import { href } from "../router.js";
import { formatTime } from "../util.js";

// The number of runs and the time of the latest start or end among them (the experiment's own
// last_update_time changes only when the experiment itself does).
async function runStats(experimentId) {
  const runs = await searchRuns({ experiment_ids: [experimentId] });
  let last = 0;
  for (const r of runs) {
    last = Math.max(last, Number(r.info.end_time || 0), Number(r.info.start_time || 0));
  }
  return { n: runs.length, last };
}

export function Experiments() {
  const [experiments, setExperiments] = useState(null);
  const [counts, setCounts] = useState({});
  const [error, setError] = useState(null);
  const [name, setName] = useState("");

  const load = () =>
    listExperiments()
      .then((list) => {
        setExperiments(list);
        for (const e of list) {
          runStats(e.experiment_id).then((st) =>
            setCounts((c) => ({ ...c, [e.experiment_id]: st })));
        }
      })
      .catch((e) => setError(e.message));
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
            {experiments.map((e) => (
              <tr key={e.experiment_id} data-experiment={e.experiment_id}>
                <td><a href={href("experiments", e.experiment_id)}>{e.name}</a></td>
                <td class="num">{counts[e.experiment_id] ? counts[e.experiment_id].n : "…"}</td>
                <td>{formatTime(Math.max(Number(e.last_update_time || 0),
                                         counts[e.experiment_id] ? counts[e.experiment_id].last : 0))}</td>
                <td class="actions">
                  <button onClick={() => rename(e)}>Rename</button>
                  <button onClick={() => remove(e)}>Delete</button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
