// One model version: its stage, status, aliases, description, tags and source; its files, each
// a download; and what made it: the run, with that run's code, environment, datasets, and
// (briefly) its parameters and final metrics.
import { useEffect, useState } from "preact/hooks";
import { mlflow } from "../api.js";
import { listVersionFiles, versionFileUrl, versionRoot } from "../artifacts.js";
import { ModelCrumbs } from "../components/Crumbs.jsx";
import { KeyValues } from "../components/KeyValues.jsx";
import { href } from "../router.js";
import { formatTime, runFields, runName, tagMap } from "../util.js";

// Parameters and metrics shown on this page at most; the run's page has them all.
const BRIEF = 12;

export function ModelVersion({ name, version }) {
  const [mv, setMv] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    let live = true;
    mlflow.get("model-versions/get", { name, version })
      .then((r) => live && setMv(r.model_version))
      .catch((e) => live && setError(e.message));
    return () => {
      live = false;
    };
  }, [name, version]);
  if (error) return <p class="error" role="alert">{error}</p>;
  if (!mv) return <p class="muted">Loading…</p>;
  return (
    <section>
      <ModelCrumbs model={name} />
      <h1>{name} <span class="muted">version {mv.version}</span></h1>
      <table class="table kv" id="version">
        <tbody>
          <tr><th>Stage</th><td>{mv.current_stage}</td></tr>
          <tr><th>Status</th><td>{mv.status}{mv.status_message ? ` · ${mv.status_message}` : ""}</td></tr>
          <tr><th>Aliases</th><td>
            {(mv.aliases || []).length ? mv.aliases.map((a) => <span class="chip" key={a}>@{a}</span>)
              : <span class="muted">none</span>}
          </td></tr>
          <tr><th>Created</th><td>
            {formatTime(mv.creation_timestamp)}{mv.user_id ? ` by ${mv.user_id}` : ""}
          </td></tr>
          <tr><th>Last updated</th><td>{formatTime(mv.last_updated_timestamp)}</td></tr>
          <tr><th>Source</th><td><code>{mv.source}</code></td></tr>
          <tr><th>Description</th><td class="description">
            {mv.description || <span class="muted">none</span>}
          </td></tr>
        </tbody>
      </table>
      <h2>Tags</h2>
      <KeyValues rows={tagMap(mv.tags)} id="version-tags" />
      <h2>Files</h2>
      <Files name={name} version={mv.version} />
      <h2>Made by</h2>
      {mv.run_id ? <Lineage runId={mv.run_id} /> : <p class="muted">No run is recorded for this version.</p>}
    </section>
  );
}

function Files({ name, version }) {
  const [found, setFound] = useState(null); // {root, files, truncated, uri}
  const [error, setError] = useState(null);
  useEffect(() => {
    let live = true;
    (async () => {
      const { artifact_uri: uri } = await mlflow.get("model-versions/get-download-uri", { name, version });
      const root = versionRoot(uri);
      const listed = root ? await listVersionFiles(root) : { files: [], truncated: false };
      if (live) setFound({ root, uri, ...listed });
    })().catch((e) => live && setError(e.message));
    return () => {
      live = false;
    };
  }, [name, version]);
  if (error) return <p class="error">{error}</p>;
  if (!found) return <p class="muted">Loading…</p>;
  if (!found.root) {
    return <p class="muted">Not kept by this server: the version's files stay at <code>{found.uri}</code>.</p>;
  }
  if (!found.files.length) return <p class="muted">No files.</p>;
  return (
    <>
      <table class="table" id="version-files">
        <thead><tr><th>File</th><th class="num">Size</th><th /></tr></thead>
        <tbody>
          {found.files.map((f) => (
            <tr key={f.path} data-file={f.path}>
              <td><code>{f.path}</code></td>
              <td class="num">{Number(f.file_size || 0).toLocaleString()} B</td>
              <td><a href={versionFileUrl(found.root, f.path)} download>download</a></td>
            </tr>
          ))}
        </tbody>
      </table>
      {found.truncated && <p class="muted">The first {found.files.length.toLocaleString()} files.</p>}
      <p class="muted">Clients download them from <code>models:/{name}/{version}</code>.</p>
    </>
  );
}

// The run that made the version: its code, environment and datasets in full, its parameters
// and final metrics in brief.
function Lineage({ runId }) {
  const [run, setRun] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    let live = true;
    mlflow.get("runs/get", { run_id: runId })
      .then((r) => live && setRun(r.run))
      .catch((e) => live && setError(e.message));
    return () => {
      live = false;
    };
  }, [runId]);
  if (error) return <p class="error">The run {runId}: {error}</p>;
  if (!run) return <p class="muted">Loading…</p>;
  const f = runFields(run);
  const t = f.tags;
  const pick = (re) => Object.fromEntries(Object.entries(t).filter(([k]) => re.test(k)));
  const code = pick(/^(mlflow\.source\.git\.|cairn\.git\.|cairn\.command$)/);
  const env = pick(/^cairn\.(env|python)\./);
  const datasets = (run.inputs && run.inputs.dataset_inputs) || [];
  const step = t["cairn.step.id"];
  return (
    <div id="lineage">
      <table class="table kv">
        <tbody>
          <tr><th>Run</th><td>
            <a id="run-link" href={href("runs", runId)}>{runName(run)}</a>{" "}
            <span class={"status " + run.info.status.toLowerCase()}>{run.info.status}</span>
            <span class="muted"> · <code>{runId}</code> · </span>
            <a href={href("experiments", run.info.experiment_id)}>experiment {run.info.experiment_id}</a>
          </td></tr>
          <tr><th>Started</th><td>{formatTime(run.info.start_time)}</td></tr>
          {(t["cairn.pipeline.steps"] || step) && (
            <tr><th>Pipeline</th><td>
              <a href={href("pipelines", step ? t["mlflow.parentRunId"] : runId)}>
                {t["cairn.pipeline.name"] || "pipeline"}</a>{step ? `, step ${step}` : ""}
            </td></tr>
          )}
        </tbody>
      </table>
      <div class="columns">
        <div>
          <h3>Code</h3>
          <KeyValues rows={code} id="lineage-code" />
        </div>
        <div>
          <h3>Environment</h3>
          <KeyValues rows={env} id="lineage-env" />
        </div>
      </div>
      <h3>Datasets</h3>
      {!datasets.length ? <p class="muted">None recorded.</p> : (
        <table class="table" id="lineage-datasets">
          <thead><tr><th>Name</th><th>Digest</th><th>Source</th><th>Context</th></tr></thead>
          <tbody>
            {datasets.map((d, i) => (
              <tr key={i} data-dataset={d.dataset.name}>
                <td>{d.dataset.name}</td>
                <td><code>{d.dataset.digest}</code></td>
                <td>
                  <code>{d.dataset.source}</code>
                  {d.dataset.source_type && <span class="muted"> ({d.dataset.source_type})</span>}
                </td>
                <td>{tagMap(d.tags)["mlflow.data.context"] || ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <div class="columns">
        <div>
          <h3>Parameters</h3>
          <Brief rows={f.params} id="lineage-params" runId={runId} tab="parameters" />
        </div>
        <div>
          <h3>Final metrics</h3>
          <Brief rows={f.metrics} id="lineage-metrics" runId={runId} tab="metrics" />
        </div>
      </div>
    </div>
  );
}

function Brief({ rows, id, runId, tab }) {
  const keys = Object.keys(rows).sort();
  const shown = Object.fromEntries(keys.slice(0, BRIEF).map((k) => [k, rows[k]]));
  return (
    <>
      <KeyValues rows={shown} id={id} />
      {keys.length > BRIEF && (
        <p class="muted">
          and {keys.length - BRIEF} more on <a href={href("runs", runId) + "?tab=" + tab}>the run's page</a>
        </p>
      )}
    </>
  );
}
