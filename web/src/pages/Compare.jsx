// 2 to 10 runs side by side: parameters, latest metrics, code and environment, with the rows
// whose values differ highlighted; then each metric's curves overlaid.
import { useEffect, useState } from "preact/hooks";
import { cairn, mlflow } from "../api.js";
import { fetchArtifactText } from "../artifacts.js";
import { MetricChart } from "../components/Chart.jsx";
import { Diff } from "../components/Diff.jsx";
import { Crumbs } from "../components/Crumbs.jsx";
import { href } from "../router.js";
import { formatValue, runFields, runName } from "../util.js";

// The runs' recorded environments, compared by the server with the first run that has one
// (GET runs/environment-diff), and each run's uncommitted changes, when recorded.
function useRunFiles(runs) {
  const [files, setFiles] = useState(null);
  useEffect(() => {
    setFiles(null);
    if (!runs) return undefined;
    let live = true;
    const ids = runs.map((r) => r.info.run_id);
    Promise.all([
      cairn.get("runs/environment-diff", { run_id: ids }).catch((e) => ({ error: e.message })),
      Promise.all(runs.map((r) => fetchArtifactText(r, "cairn/code.diff").catch(() => null))),
    ]).then(([environments, diffs]) => live && setFiles({ ids, environments, diffs }));
    return () => {
      live = false;
    };
  }, [runs]);
  // Only what was read for these very runs.
  const current = runs && runs.map((r) => r.info.run_id).join();
  return files && files.ids.join() === current ? files : null;
}

// Rows of values per run from the comparison: every package (or field) that differs from the
// baseline in some run, with its value in each run. A run without a snapshot has null.
export function environmentRows(comparison, pick) {
  const runs = comparison.runs;
  const diffs = new Map(comparison.diffs.map((d) => [d.run_id, d.diff]));
  const base = new Map();
  const names = new Set();
  for (const d of comparison.diffs) {
    for (const c of pick(d.diff)) {
      names.add(c.name);
      if (c.change !== "added" && c.from !== "") base.set(c.name, c.from);
    }
  }
  return [...names].sort().map((name) => ({
    name,
    values: runs.map(({ run_id: id, recorded }) => {
      if (!recorded) return null;
      const change = diffs.has(id) && pick(diffs.get(id)).find((c) => c.name === name);
      if (!change) return base.get(name);
      return change.change === "removed" || change.to === "" ? undefined : change.to;
    }),
    details: comparison.diffs.flatMap((d) => pick(d.diff).filter((c) => c.name === name && c.details)
      .flatMap((c) => c.details)),
  }));
}

export function Compare({ params }) {
  const ids = (params.get("runs") || "").split(",").filter(Boolean);
  const [runs, setRuns] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    setRuns(null);
    setError(null);
    if (ids.length < 2 || ids.length > 10) {
      setError(`Compare takes 2 to 10 runs; ${ids.length} given.`);
      return undefined;
    }
    let live = true;
    Promise.all(ids.map((id) => mlflow.get("runs/get", { run_id: id }).then((r) => r.run)))
      .then((r) => live && setRuns(r))
      .catch((e) => live && setError(e.message));
    return () => {
      live = false;
    };
  }, [params.get("runs")]);
  const files = useRunFiles(runs);
  if (error) return <p class="error" role="alert">{error}</p>;
  if (!runs) return <p class="muted">Loading…</p>;

  const fields = runs.map(runFields);
  const section = (title, kind, pick) => {
    const keys = [...new Set(fields.flatMap((f) => Object.keys(pick(f))))].sort();
    if (!keys.length) return null;
    return [
      <tr key={"h-" + kind} class="section"><th colSpan={runs.length + 1}>{title}</th></tr>,
      ...keys.map((k) => {
        const values = fields.map((f) => pick(f)[k]);
        const differs = values.some((v) => String(v ?? "") !== String(values[0] ?? ""));
        return (
          <tr key={kind + k} class={differs ? "differs" : ""} data-key={kind + "." + k}>
            <th>{k}</th>
            {values.map((v, i) => <td key={i}>{v === undefined ? <span class="muted">—</span> : formatValue(v)}</td>)}
          </tr>
        );
      }),
    ];
  };
  const code = (f) => Object.fromEntries(Object.entries({
    commit: f.tags["mlflow.source.git.commit"],
    "uncommitted changes": f.tags["cairn.git.dirty"],
  }).filter(([, v]) => v !== undefined));
  const env = (f) => Object.fromEntries(Object.entries(f.tags).filter(([k]) =>
    /^cairn\.(env\.hash|python\.version|host\.|gpu\.)/.test(k)));
  const metricKeys = [...new Set(fields.flatMap((f) => Object.keys(f.metrics)))].sort();
  const chartRuns = runs.map((r) => ({ id: r.info.run_id, label: runName(r) }));
  return (
    <section>
      <Crumbs />
      <h1>Compare {runs.length} runs</h1>
      <table class="table compare" id="compare-table">
        <thead>
          <tr><th />{runs.map((r) => <th key={r.info.run_id}><a href={href("runs", r.info.run_id)}>{runName(r)}</a></th>)}</tr>
        </thead>
        <tbody>
          {section("Parameters", "params", (f) => f.params)}
          {section("Latest metrics", "metrics", (f) => f.metrics)}
          {section("Code", "code", code)}
          {section("Environment", "env", env)}
        </tbody>
      </table>
      <h2>Environment</h2>
      {!files ? <p class="muted">Loading…</p> : files.environments.error ? (
        <p class="error" role="alert">{files.environments.error}</p>
      ) : !files.environments.baseline ? (
        <p class="muted">No run has an environment snapshot (cairn run records one).</p>
      ) : (
        <EnvironmentDiff runs={runs} comparison={files.environments} />
      )}
      {files && files.diffs.some((d) => d) && (
        <>
          <h2>Uncommitted changes</h2>
          <div class="diffs">
            {runs.map((r, i) => (
              <div key={r.info.run_id}>
                <h3>{runName(r)}</h3>
                {files.diffs[i] ? <Diff text={files.diffs[i]} /> : <p class="muted">none recorded</p>}
              </div>
            ))}
          </div>
        </>
      )}
      <h2>Metrics</h2>
      <div class="charts">{metricKeys.map((k) => <MetricChart key={k} metric={k} runs={chartRuns} />)}</div>
    </section>
  );
}

// Packages, interpreter and host facts that differ between the runs' environments, as the
// server's environment diff (the one `cairn runs diff-env` prints) reports them.
function EnvironmentDiff({ runs, comparison }) {
  const packages = environmentRows(comparison, (d) => d.packages);
  const fields = [
    ...environmentRows(comparison, (d) => d.interpreter).map((r) => ({ ...r, name: "interpreter." + r.name })),
    ...environmentRows(comparison, (d) => d.host_requirements).map((r) => ({ ...r, name: "requires." + r.name })),
    ...environmentRows(comparison, (d) => d.host).map((r) => ({ ...r, name: "host." + r.name })),
  ];
  const added = new Set(comparison.diffs.flatMap((d) => d.diff.packages.filter((c) => c.change === "added").map((c) => c.name)));
  const total = (comparison.diffs[0] ? comparison.diffs[0].diff.packages_before : 0) + added.size;
  const cell = (v, i) => (
    <td key={i}>{v === null ? <span class="muted" title={comparison.runs[i].error}>{comparison.runs[i].error ? "unreadable snapshot" : "no snapshot"}</span>
      : v === undefined ? <span class="muted">absent</span> : v}</td>
  );
  const header = <thead><tr><th />{runs.map((r) => <th key={r.info.run_id}>{runName(r)}</th>)}</tr></thead>;
  return (
    <>
      <p class="muted" id="package-summary">
        {comparison.diffs.length === 0 ? "Only one run has an environment snapshot." :
          `${packages.length} of ${total} packages differ`}
      </p>
      {packages.length > 0 && (
        <table class="table compare" id="package-diff">
          {header}
          <tbody>
            {packages.map((r) => (
              <tr key={r.name} class="differs" data-package={r.name} title={r.details.join("; ")}>
                <th>{r.name}</th>
                {r.values.map(cell)}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {fields.length > 0 && (
        <table class="table compare" id="environment-diff">
          {header}
          <tbody>
            {fields.map((r) => (
              <tr key={r.name} class="differs" data-field={r.name}>
                <th>{r.name}</th>
                {r.values.map(cell)}
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
