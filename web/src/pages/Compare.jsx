// 2 to 10 runs side by side: parameters, latest metrics, code and environment, with the rows
// whose values differ highlighted; then each metric's curves overlaid.
import { useEffect, useState } from "preact/hooks";
import { mlflow } from "../api.js";
import { fetchArtifactText } from "../artifacts.js";
import { MetricChart } from "../components/Chart.jsx";
import { Diff } from "../components/Diff.jsx";
import { Crumbs } from "../components/Crumbs.jsx";
import { href } from "../router.js";
import { formatValue, runFields, runName } from "../util.js";

// name -> version of each [[packages]] table of a pylock.toml (the lines cairn writes).
export function lockPackages(text) {
  const out = {};
  let name = null;
  for (const line of text.split("\n")) {
    if (line.trim() === "[[packages]]") {
      name = null;
      continue;
    }
    const m = line.match(/^(name|version)\s*=\s*"([^"]*)"/);
    if (!m) continue;
    if (m[1] === "name") name = m[2];
    else if (name) out[name] = m[2];
  }
  return out;
}

// Each run's packages (from its environment snapshot) and uncommitted changes, when recorded.
function useRunFiles(runs) {
  const [files, setFiles] = useState(null);
  useEffect(() => {
    setFiles(null);
    if (!runs) return undefined;
    let live = true;
    const optional = (run, path) => fetchArtifactText(run, path).catch(() => null);
    Promise.all(runs.map(async (r) => {
      const [lock, diff] = await Promise.all([optional(r, "cairn/environment/pylock.toml"),
                                              optional(r, "cairn/code.diff")]);
      return { packages: lock ? lockPackages(lock) : null, diff };
    })).then((f) => live && setFiles(f));
    return () => {
      live = false;
    };
  }, [runs]);
  // Only files read for these very runs.
  return files && runs && files.length === runs.length ? files : null;
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
      <h2>Packages</h2>
      {!files ? <p class="muted">Loading…</p> : files.every((f) => !f.packages) ? (
        <p class="muted">No run has an environment snapshot (cairn run records one).</p>
      ) : (
        <PackageDiff runs={runs} files={files} />
      )}
      {files && files.some((f) => f.diff) && (
        <>
          <h2>Uncommitted changes</h2>
          <div class="diffs">
            {runs.map((r, i) => (
              <div key={r.info.run_id}>
                <h3>{runName(r)}</h3>
                {files[i].diff ? <Diff text={files[i].diff} /> : <p class="muted">none recorded</p>}
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

// Packages whose versions differ between the runs (added, removed or changed), then a count
// of the ones they share.
function PackageDiff({ runs, files }) {
  const names = [...new Set(files.flatMap((f) => Object.keys(f.packages || {})))].sort();
  const rows = names.map((n) => ({ name: n, versions: files.map((f) => (f.packages ? f.packages[n] : undefined)) }));
  const differing = rows.filter((r) => r.versions.some((v) => v !== r.versions[0]));
  return (
    <>
      <p class="muted" id="package-summary">
        {differing.length} of {names.length} packages differ
      </p>
      {differing.length > 0 && (
        <table class="table compare" id="package-diff">
          <thead><tr><th />{runs.map((r) => <th key={r.info.run_id}>{runName(r)}</th>)}</tr></thead>
          <tbody>
            {differing.map((r) => (
              <tr key={r.name} class="differs" data-package={r.name}>
                <th>{r.name}</th>
                {r.versions.map((v, i) => <td key={i}>{v ?? <span class="muted">absent</span>}</td>)}
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
