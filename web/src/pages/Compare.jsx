// 2 to 10 runs side by side: parameters, latest metrics, code and environment, with the rows
// whose values differ highlighted; then each metric's curves overlaid.
import { useEffect, useState } from "preact/hooks";
import { mlflow } from "../api.js";
import { MetricChart } from "../components/Chart.jsx";
import { href } from "../router.js";
import { formatValue, runFields, runName } from "../util.js";

export function Compare({ params }) {
  const ids = (params.get("runs") || "").split(",").filter(Boolean);
  const [runs, setRuns] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    if (ids.length < 2 || ids.length > 10) {
      setError(`Compare takes 2 to 10 runs; ${ids.length} given.`);
      return;
    }
    Promise.all(ids.map((id) => mlflow.get("runs/get", { run_id: id }).then((r) => r.run)))
      .then(setRuns)
      .catch((e) => setError(e.message));
  }, [params.get("runs")]);
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
      <p class="crumbs"><a href="#/">Experiments</a> /</p>
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
      <h2>Metrics</h2>
      <div class="charts">{metricKeys.map((k) => <MetricChart key={k} metric={k} runs={chartRuns} />)}</div>
    </section>
  );
}
