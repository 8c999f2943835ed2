// Registered models: each with its latest version, its aliases and when it last changed, and a
// filter in the registry's grammar (the server's error shown under it).
import { useEffect, useState } from "preact/hooks";
import { searchRegisteredModels } from "../api.js";
import { href } from "../router.js";
import { formatTime } from "../util.js";

// latest_versions holds the newest version of each stage, so the newest of those is the
// model's newest version.
function latestVersion(model) {
  const numbers = (model.latest_versions || []).map((v) => Number(v.version));
  return numbers.length ? String(Math.max(...numbers)) : null;
}

// A model's aliases as chips, each linking to the version it names.
function AliasChips({ name, aliases }) {
  return (aliases || []).map((a) => (
    <a class="chip" key={a.alias} data-alias={a.alias} href={href("models", name, "versions", a.version)}>
      @{a.alias} → {a.version}
    </a>
  ));
}

export function Models({ params }) {
  const [models, setModels] = useState(null);
  const [error, setError] = useState(null);
  const [filterText, setFilterText] = useState(params.get("filter") || "");
  const [filter, setFilter] = useState(params.get("filter") || "");
  useEffect(() => {
    let live = true;
    setModels(null);
    setError(null);
    searchRegisteredModels(filter)
      .then((m) => live && setModels(m))
      .catch((e) => {
        if (!live) return;
        setError(e.message);
        setModels([]);
      });
    return () => {
      live = false;
    };
  }, [filter]);
  const apply = (ev) => {
    ev.preventDefault();
    setFilter(filterText.trim());
  };

  return (
    <section>
      <h1>Registered models</h1>
      <form class="inline-form filter" onSubmit={apply}>
        <input id="model-filter" class="wide" placeholder="filter, e.g. name LIKE 'fraud%' or tags.team = 'ml'"
               value={filterText} onInput={(e) => setFilterText(e.currentTarget.value)} />
        <button type="submit">Filter</button>
      </form>
      {error && <p class="error" role="alert" id="model-filter-error">{error}</p>}
      {!models ? (
        <p class="muted">Loading…</p>
      ) : !models.length ? (
        !error && (
          <p class="muted">
            {filter ? "No model matches the filter."
              : "No registered models yet: an MLflow client registers one (mlflow.register_model)."}
          </p>
        )
      ) : (
        <table class="table" id="models">
          <thead>
            <tr><th>Name</th><th>Latest version</th><th>Aliases</th><th>Last updated</th></tr>
          </thead>
          <tbody>
            {models.map((m) => {
              const latest = latestVersion(m);
              return (
                <tr key={m.name} data-model={m.name}>
                  <td><a href={href("models", m.name)}>{m.name}</a></td>
                  <td class="num">
                    {latest ? <a href={href("models", m.name, "versions", latest)}>{latest}</a>
                      : <span class="muted">none</span>}
                  </td>
                  <td><AliasChips name={m.name} aliases={m.aliases} /></td>
                  <td>{formatTime(m.last_updated_timestamp)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </section>
  );
}
