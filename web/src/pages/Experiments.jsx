// Experiments: each with its runs' count and last activity; create, rename and delete.
import { useEffect, useState } from "preact/hooks";
import { listExperiments, mlflow } from "../api.js";
import { href } from "../router.js";
import { formatTime } from "../util.js";

async function runCount(experimentId) {
  // Pages of the largest size the API allows; a count, so only ids are kept.
  let n = 0;
  let token;
  do {
    const page = await mlflow.post("runs/search", {
      experiment_ids: [experimentId], max_results: 50000, page_token: token,
    });
    n += (page.runs || []).length;
    token = page.next_page_token;
  } while (token);
  return n;
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
          runCount(e.experiment_id).then((n) =>
            setCounts((c) => ({ ...c, [e.experiment_id]: n })));
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
                <td class="num">{counts[e.experiment_id] ?? "…"}</td>
                <td>{formatTime(e.last_update_time)}</td>
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
