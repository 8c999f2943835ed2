// One run: overview (status, times, command, code state with the uncommitted diff, its
// reproductions or the run it reproduces, with the verdict and the curves overlaid, the model
// versions registered from it), parameters, metric charts, the console log (following it while
// the run is active), artifacts with previews, and the environment it ran in.
import { Fragment } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { cairn, mlflow, runLog, searchModelVersions, searchRuns } from "../api.js";
import { artifactUrl, fetchArtifactText, listArtifacts, previewKind } from "../artifacts.js";
import { MetricChart } from "../components/Chart.jsx";
import { Crumbs } from "../components/Crumbs.jsx";
import { Diff } from "../components/Diff.jsx";
import { KeyValues } from "../components/KeyValues.jsx";
import { href } from "../router.js";
import { formatDuration, formatTime, runDuration, runFields, runName } from "../util.js";

const REFRESH_MS = 5000;
const TABS = ["overview", "parameters", "metrics", "log", "artifacts", "environment"];

export function Run({ runId, params }) {
  const [run, setRun] = useState(null);
  const [error, setError] = useState(null);
  const tab = TABS.includes(params.get("tab")) ? params.get("tab") : "overview";
  useEffect(() => {
    let stop = false;
    let timer;
    // While the run is queued or active its status, times, metrics and tags move, and a
    // reproduction's verdict comes just after it ends: read it again.
    const load = () =>
      mlflow.get("runs/get", { run_id: runId })
        .then((r) => {
          if (stop) return;
          setRun(r.run);
          setError(null);
          const tags = runFields(r.run).tags;
          const ended = r.run.info.end_time;
          const awaited = tags["cairn.reproduce.of"] && !tags["cairn.reproduce.verdict"] &&
            (!ended || Date.now() - ended < 60000);
          if (["RUNNING", "SCHEDULED"].includes(r.run.info.status) || awaited) {
            timer = setTimeout(load, REFRESH_MS);
          }
        })
        .catch((e) => !stop && setError(e.message));
    load();
    return () => {
      stop = true;
      clearTimeout(timer);
    };
  }, [runId]);
  if (error) return <p class="error" role="alert">{error}</p>;
  if (!run) return <p class="muted">Loading…</p>;
  const f = runFields(run);
  return (
    <section>
      <Crumbs experimentId={run.info.experiment_id} />
      <h1>{runName(run)} <span class={"status " + run.info.status.toLowerCase()}>{run.info.status}</span></h1>
      {f.tags["cairn.task.id"] && <RunAgain run={run} f={f} />}
      <nav class="tabs">
        {TABS.map((t) => (
          <a key={t} class={t === tab ? "active" : ""} href={href("runs", runId) + "?tab=" + t}>{t}</a>
        ))}
      </nav>
      {tab === "overview" && <Overview run={run} f={f} />}
      {tab === "parameters" && <KeyValues rows={f.params} id="params" />}
      {tab === "metrics" && <Metrics run={run} f={f} />}
      {tab === "log" && <Log run={run} />}
      {tab === "artifacts" && <Artifacts key={params.get("path")} run={run} start={params.get("path") || ""} />}
      {tab === "environment" && <Environment run={run} f={f} />}
    </section>
  );
}

// A queued run's task queued again: "Clone and enqueue" with parameters changed, or
// "Reproduce" with the same ones (POST tasks/clone); then the new run's page. The server gives
// a reproduction its verdict when its task ends.
function RunAgain({ run, f }) {
  const [error, setError] = useState(null);
  const queueAgain = (reproduce) => {
    const body = { run_id: run.info.run_id, reproduce, params: [] };
    if (!reproduce) {
      const current = Object.entries(f.params).map(([k, v]) => `${k}=${v}`).join(", ");
      const answer = prompt("Parameters to change, as name=value separated by commas", current);
      if (answer === null) return;
      for (const item of answer.split(",").map((s) => s.trim()).filter(Boolean)) {
        const eq = item.indexOf("=");
        if (eq <= 0) {
          setError(`"${item}" is not name=value`);
          return;
        }
        body.params.push({ key: item.slice(0, eq).trim(), value: item.slice(eq + 1).trim() });
      }
    }
    setError(null);
    cairn.post("tasks/clone", body)
      .then((r) => { location.hash = href("runs", r.task.run_id); })
      .catch((e) => setError(e.message));
  };
  return (
    <p class="run-again">
      <button id="clone-run" onClick={() => queueAgain(false)}>Clone and enqueue</button>{" "}
      <button id="reproduce-run" onClick={() => queueAgain(true)}>Reproduce</button>
      {f.tags["cairn.reproduce.of"] && (
        <span class="muted"> · a reproduction of{" "}
          <a href={href("runs", f.tags["cairn.reproduce.of"])}>{f.tags["cairn.reproduce.of"].slice(0, 8)}</a>
          {f.tags["cairn.reproduce.verdict"] ? `: ${f.tags["cairn.reproduce.verdict"]}` : ""}</span>
      )}
      {f.tags["cairn.clone.of"] && (
        <span class="muted"> · a clone of{" "}
          <a href={href("runs", f.tags["cairn.clone.of"])}>{f.tags["cairn.clone.of"].slice(0, 8)}</a></span>
      )}
      {error && <span class="error" role="alert" id="run-again-error"> {error}</span>}
    </p>
  );
}

function Overview({ run, f }) {
  const [diff, setDiff] = useState(null);
  const t = f.tags;
  const commit = t["mlflow.source.git.commit"];
  const showDiff = () =>
    fetchArtifactText(run, "cairn/code.diff").then(setDiff).catch((e) => setDiff("(" + e.message + ")"));
  return (
    <div>
      <table class="table kv" id="overview">
        <tbody>
          <tr><th>Run id</th><td><code>{run.info.run_id}</code></td></tr>
          <tr><th>Started</th><td>{formatTime(run.info.start_time)}</td></tr>
          <tr><th>Ended</th><td>{formatTime(run.info.end_time)}</td></tr>
          <tr><th>Duration</th><td>{formatDuration(runDuration(run))}</td></tr>
          {t["cairn.command"] && <tr><th>Command</th><td><code>{t["cairn.command"]}</code></td></tr>}
          {t["cairn.exit_code"] && <tr><th>Exit code</th><td>{t["cairn.exit_code"]}</td></tr>}
          {t["cairn.failure_reason"] && <tr><th>Failure</th><td>{t["cairn.failure_reason"]}</td></tr>}
          {t["mlflow.user"] && <tr><th>User</th><td>{t["mlflow.user"]}</td></tr>}
          {t["mlflow.parentRunId"] && (
            <tr><th>Parent run</th><td><a href={href("runs", t["mlflow.parentRunId"])}>{t["mlflow.parentRunId"]}</a></td></tr>
          )}
          {(t["cairn.pipeline.steps"] || t["cairn.step.id"]) && (
            <tr><th>Pipeline</th><td>
              <a id="pipeline-link" href={href("pipelines", t["cairn.step.id"] ? t["mlflow.parentRunId"] : run.info.run_id)}>
                {t["cairn.pipeline.name"] || "pipeline"}: its steps as a graph</a>
            </td></tr>
          )}
          {commit && (
            <tr><th>Code</th><td>
              <code>{commit.slice(0, 12)}</code>{t["mlflow.source.git.branch"] ? ` on ${t["mlflow.source.git.branch"]}` : ""}
              {t["mlflow.source.git.repoURL"] ? ` · ${t["mlflow.source.git.repoURL"]}` : ""}
              {t["cairn.git.dirty"] === "true" && (
                <> · uncommitted changes <button onClick={showDiff}>show diff</button></>
              )}
            </td></tr>
          )}
        </tbody>
      </table>
      {diff !== null && <Diff text={diff} id="code-diff" />}
      <Reproductions run={run} f={f} />
      <RegisteredVersions runId={run.info.run_id} />
      <RunDatasets run={run} />
      <h2>Tags</h2>
      <KeyValues rows={Object.fromEntries(Object.entries(t).filter(([k]) => !k.startsWith("mlflow.log")))} id="tags" />
    </div>
  );
}

// The reproduction panel. On a reproduction's page: its verdict against the original. On any
// other run's page: the runs that reproduce it, each with its verdict, and the latest one's
// verdict in full. Nothing when the run neither is nor has a reproduction.
function Reproductions({ run, f }) {
  const [others, setOthers] = useState(null);
  const [error, setError] = useState(null);
  const of = f.tags["cairn.reproduce.of"];
  const runId = run.info.run_id;
  useEffect(() => {
    if (of) return undefined;
    let live = true;
    searchRuns({
      experiment_ids: [run.info.experiment_id],
      filter: `tags.\`cairn.reproduce.of\` = '${runId}'`,
      order_by: ["attributes.start_time DESC"],
    })
      .then((runs) => live && setOthers(runs))
      .catch((e) => live && setError(e.message));
    return () => {
      live = false;
    };
  }, [runId, of]);
  if (of) {
    return (
      <>
        <h2>Reproduction</h2>
        <Verdict reproduction={run} originalId={of} />
      </>
    );
  }
  if (error) return <><h2>Reproductions</h2><p class="error">{error}</p></>;
  if (!others || !others.length) return null;
  const judged = others.find((r) => runFields(r).tags["cairn.reproduce.verdict"]);
  return (
    <>
      <h2>Reproductions</h2>
      <table class="table" id="reproductions">
        <thead><tr><th>Run</th><th>Status</th><th>Verdict</th><th>Started</th></tr></thead>
        <tbody>
          {others.map((r) => {
            const verdict = runFields(r).tags["cairn.reproduce.verdict"];
            return (
              <tr key={r.info.run_id} data-run={r.info.run_id}>
                <td><a href={href("runs", r.info.run_id)}>{runName(r)}</a></td>
                <td><span class={"status " + r.info.status.toLowerCase()}>{r.info.status}</span></td>
                <td>{verdict ? <span class={"verdict " + verdictClass(verdict)}>{verdict}</span> : <span class="muted">not yet</span>}</td>
                <td>{formatTime(r.info.start_time)}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {judged && <Verdict reproduction={judged} originalId={runId} />}
    </>
  );
}

function verdictClass(verdict) {
  return verdict.replace(/ /g, "-");
}

// A reproduction's verdict (its cairn/reproduce.json): the summary, a row per metric, how the
// runs differ, and each compared metric's curves of both runs on one chart.
function Verdict({ reproduction, originalId }) {
  const [record, setRecord] = useState(null);
  const [error, setError] = useState(null);
  const id = reproduction.info.run_id;
  const verdictTag = runFields(reproduction).tags["cairn.reproduce.verdict"];
  useEffect(() => {
    if (!verdictTag) return undefined;
    let live = true;
    fetchArtifactText(reproduction, "cairn/reproduce.json")
      .then((text) => live && setRecord(JSON.parse(text)))
      .catch((e) => live && setError(e.message));
    return () => {
      live = false;
    };
  }, [id, verdictTag]);
  if (!verdictTag) {
    return (
      <p class="muted" id="reproduction-verdict">
        Reproduces <a href={href("runs", originalId)}>{originalId.slice(0, 8)}</a>; the verdict comes
        when its run ends.
      </p>
    );
  }
  if (error) return <p class="error" id="reproduction-verdict">{error}</p>;
  if (!record) return <p class="muted">Loading the verdict…</p>;
  const runs = [
    { id: record.original, label: "original " + record.original.slice(0, 8) },
    { id: record.reproduced, label: "reproduction " + record.reproduced.slice(0, 8) },
  ];
  const differences = Object.entries(record.differences || {}).filter(([, lines]) => lines.length);
  return (
    <div class="reproduction" id="reproduction-verdict" data-verdict={record.verdict}>
      <p>
        <span class={"verdict " + verdictClass(record.verdict)}>{record.verdict}</span>{" "}
        {record.summary.startsWith(record.verdict)
          ? record.summary.slice(record.verdict.length).replace(/^:?\s*/, "")
          : record.summary} ·{" "}
        <a href={href("runs", record.reproduced)}>{record.reproduced.slice(0, 8)}</a> reproduces{" "}
        <a href={href("runs", record.original)}>{record.original.slice(0, 8)}</a>
      </p>
      {record.metrics.length > 0 && (
        <table class="table" id="reproduction-metrics">
          <thead><tr><th>Metric</th><th>Verdict</th><th>Values</th><th>Where</th></tr></thead>
          <tbody>
            {record.metrics.map((m) => (
              <tr key={m.key} data-metric={m.key}>
                <td>{m.key}</td>
                <td><span class={"verdict " + verdictClass(m.verdict)}>{m.verdict}</span></td>
                <td>{m.points}</td>
                <td>{m.note || (m.verdict === "diverged"
                  ? `step ${m.step}: ${m.reproduced} (original ${m.original})`
                  : m.verdict === "within tolerance" ? `largest difference ${m.max_abs_diff}` : "")}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {differences.length > 0 && (
        <dl class="differences" id="reproduction-differences">
          {differences.map(([section, lines]) => (
            <Fragment key={section}>
              <dt>{section}</dt>
              {lines.map((line, i) => <dd key={i}><code>{line}</code></dd>)}
            </Fragment>
          ))}
        </dl>
      )}
      <div class="charts">
        {record.metrics.map((m) => <MetricChart key={m.key} metric={m.key} runs={runs} />)}
      </div>
    </div>
  );
}

// The model versions made from this run; nothing at all when there are none.
function RegisteredVersions({ runId }) {
  const [versions, setVersions] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    let live = true;
    searchModelVersions(`run_id = '${runId}'`)
      .then((v) => live && setVersions(v.sort((a, b) =>
        a.name.localeCompare(b.name) || Number(b.version) - Number(a.version))))
      .catch((e) => live && setError(e.message));
    return () => {
      live = false;
    };
  }, [runId]);
  if (error) return <><h2>Registered versions</h2><p class="error">{error}</p></>;
  if (!versions || !versions.length) return null;
  return (
    <>
      <h2>Registered versions</h2>
      <table class="table" id="registered-versions">
        <thead><tr><th>Model</th><th>Version</th><th>Stage</th><th>Aliases</th><th>Created</th></tr></thead>
        <tbody>
          {versions.map((v) => (
            <tr key={v.name + "/" + v.version} data-version={v.name + "/" + v.version}>
              <td><a href={href("models", v.name)}>{v.name}</a></td>
              <td><a href={href("models", v.name, "versions", v.version)}>version {v.version}</a></td>
              <td>{v.current_stage}</td>
              <td>{(v.aliases || []).map((a) => <span class="chip" key={a}>@{a}</span>)}</td>
              <td>{formatTime(v.creation_timestamp)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

// The dataset inputs a run recorded (a cairn dataset's version linking to its page), and the
// dataset versions it made. Nothing when there are neither.
function RunDatasets({ run }) {
  const [made, setMade] = useState([]);
  const runId = run.info.run_id;
  useEffect(() => {
    let live = true;
    cairn.get("datasets/produced", { run_id: runId })
      .then((r) => live && setMade(r.versions || []))
      .catch(() => live && setMade([]));
    return () => {
      live = false;
    };
  }, [runId]);
  const inputs = (run.inputs && run.inputs.dataset_inputs) || [];
  if (!inputs.length && !made.length) return null;
  const versionOf = (d) => {
    if (d.source_type !== "cairn") return null;
    try {
      const source = JSON.parse(d.source);
      return source.version ? String(source.version) : null;
    } catch {
      return null;
    }
  };
  return (
    <>
      <h2>Datasets</h2>
      {inputs.length > 0 && (
        <table class="table" id="dataset-inputs">
          <thead><tr><th>Input</th><th>Version</th><th>Digest</th><th>Context</th><th>Source</th></tr></thead>
          <tbody>
            {inputs.map((i) => {
              const d = i.dataset;
              const version = versionOf(d);
              const context = ((i.tags || []).find((t) => t.key === "mlflow.data.context") || {}).value;
              return (
                <tr key={d.name + d.digest + (context || "")} data-dataset={d.name}>
                  <td>{version ? <a href={href("datasets", d.name)}>{d.name}</a> : d.name}</td>
                  <td>{version ? <a href={href("datasets", d.name, "versions", version)}>version {version}</a>
                    : <span class="muted">-</span>}</td>
                  <td><code>{d.digest.slice(0, 12)}</code></td>
                  <td>{context || <span class="muted">-</span>}</td>
                  <td>{version ? "cairn" : <code>{d.source_type}</code>}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {made.length > 0 && (
        <p id="datasets-made">Made:{" "}
          {made.map((v) => (
            <a class="chip" key={v.name + v.version} href={href("datasets", v.name, "versions", v.version)}>
              {v.name}@{v.version}</a>
          ))}
        </p>
      )}
    </>
  );
}

function Metrics({ run, f }) {
  const keys = Object.keys(f.metrics).sort();
  if (!keys.length) return <p class="muted">No metrics.</p>;
  const runs = [{ id: run.info.run_id, label: runName(run) }];
  return <div class="charts">{keys.map((k) => <MetricChart key={k} metric={k} runs={runs} />)}</div>;
}

function Log({ run }) {
  const [text, setText] = useState("");
  const [follow, setFollow] = useState(true);
  const [error, setError] = useState(null);
  const state = useRef({ offset: 0, status: run.info.status });
  const pre = useRef(null);
  useEffect(() => {
    let stop = false;
    let timer;
    const poll = async () => {
      try {
        const out = await runLog(run.info.run_id, state.current.offset);
        if (stop) return;
        const added = out.chunks.map((c) => c.data).join("");
        const moved = out.next_offset > state.current.offset;
        state.current = { offset: out.next_offset, status: out.run_status };
        if (added) setText((t) => t + added);
        // A long log comes a megabyte at a time: read on until caught up, then look again
        // every second while the run is active and the log is followed.
        if (moved) timer = setTimeout(poll, 0);
        else if (follow && out.run_status === "RUNNING") timer = setTimeout(poll, 1000);
      } catch (e) {
        if (!stop) setError(e.message);
      }
    };
    poll();
    return () => {
      stop = true;
      clearTimeout(timer);
    };
  }, [run.info.run_id, follow]);
  useEffect(() => {
    if (follow && pre.current) pre.current.scrollTop = pre.current.scrollHeight;
  }, [text, follow]);
  return (
    <div>
      <label><input type="checkbox" checked={follow} onChange={(e) => setFollow(e.currentTarget.checked)} /> follow</label>
      {error && <p class="error">{error}</p>}
      <pre class="log" id="log" ref={pre}>{text || "(no output yet)"}</pre>
    </div>
  );
}

// The run's artifacts, listed from the directory `start` (a link may name one).
function Artifacts({ run, start }) {
  const [path, setPath] = useState(start);
  const [files, setFiles] = useState(null);
  const [preview, setPreview] = useState(null);
  const [error, setError] = useState(null);
  const latest = useRef(0); // the newest preview asked for; older answers are dropped
  useEffect(() => {
    let live = true;
    setFiles(null);
    setError(null);
    listArtifacts(run, path)
      .then((f) => live && setFiles(f))
      .catch((e) => live && setError(e.message));
    return () => {
      live = false;
    };
  }, [path]);
  const open = (file) => {
    if (file.is_dir) return setPath(file.path);
    const ask = ++latest.current;
    setError(null);
    const kind = previewKind(file.path);
    if (kind === "image") return setPreview({ path: file.path, kind });
    if (!kind) return setPreview({ path: file.path, kind: null });
    setPreview({ path: file.path, kind: "loading" });
    fetchArtifactText(run, file.path)
      .then((text) => ask === latest.current && setPreview({ path: file.path, kind, text }))
      .catch((e) => ask === latest.current && setError(e.message));
  };
  const up = path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : "";
  return (
    <div class="artifacts">
      {error && <p class="error">{error}</p>}
      <div class="artifact-list">
        <p class="muted">/{path}</p>
        {path && <p><button class="link" onClick={() => setPath(up)}>..</button></p>}
        {!files ? <p class="muted">Loading…</p> : files.length === 0 ? <p class="muted">{noArtifacts(run)}</p> : (
          <ul id="artifacts">
            {files.map((f) => (
              <li key={f.path}>
                <button class="link" onClick={() => open(f)}>{f.path.split("/").pop()}{f.is_dir ? "/" : ""}</button>
                {!f.is_dir && <span class="muted"> {Number(f.file_size).toLocaleString()} B · <a href={artifactUrl(run, f.path)} download>download</a></span>}
              </li>
            ))}
          </ul>
        )}
      </div>
      {preview && <div class="artifact-preview" id="preview"><h3>{preview.path}</h3><Preview run={run} p={preview} /></div>}
    </div>
  );
}

// Runs of an experiment created with its own artifact location (a path, s3://...) have their
// artifacts written there by the client; the server does not serve them.
function noArtifacts(run) {
  const uri = run.info.artifact_uri || "";
  if (uri.startsWith("mlflow-artifacts:")) return "No artifacts.";
  return `No artifacts kept by this server: the run's artifacts go to ${uri}, where its client writes them.`;
}

// Rows of CSV text (RFC 4180: quoted fields may hold the separator, newlines and doubled
// quotes; CRLF or LF line ends), at most `limit` of them.
function parseCsv(text, sep, limit) {
  const rows = [];
  let row = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < text.length && rows.length < limit; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c === '"' && field === "") {
      quoted = true;
    } else if (c === sep) {
      row.push(field);
      field = "";
    } else if (c === "\n" || c === "\r") {
      if (c === "\r" && text[i + 1] === "\n") i++;
      row.push(field);
      if (row.length > 1 || row[0] !== "") rows.push(row);
      row = [];
      field = "";
    } else {
      field += c;
    }
  }
  if ((field !== "" || row.length) && rows.length < limit) rows.push([...row, field]);
  return rows;
}

function Preview({ run, p }) {
  if (p.kind === "loading") return <p class="muted">Loading…</p>;
  if (p.kind === "image") return <img src={artifactUrl(run, p.path)} alt={p.path} />;
  if (p.kind === "json") {
    let pretty = p.text;
    try {
      pretty = JSON.stringify(JSON.parse(p.text), null, 2);
    } catch { /* shown as it is */ }
    return <pre>{pretty}</pre>;
  }
  if (p.kind === "csv") {
    const rows = parseCsv(p.text, p.path.endsWith(".tsv") ? "\t" : ",", 200);
    return (
      <table class="table csv"><tbody>
        {rows.map((r, i) => <tr key={i}>{r.map((c, j) => (i === 0 ? <th key={j}>{c}</th> : <td key={j}>{c}</td>))}</tr>)}
      </tbody></table>
    );
  }
  if (p.kind === "text") return <pre>{p.text}</pre>;
  return <p class="muted">No preview for this file; <a href={artifactUrl(run, p.path)} download>download it</a>.</p>;
}

function Environment({ run, f }) {
  const [lock, setLock] = useState(null);
  const [host, setHost] = useState(null);
  useEffect(() => {
    fetchArtifactText(run, "cairn/environment/pylock.toml").then(setLock).catch(() => setLock(""));
    fetchArtifactText(run, "cairn/host.json").then(setHost).catch(() => setHost(""));
  }, [run.info.run_id]);
  const facts = Object.fromEntries(Object.entries(f.tags).filter(([k]) =>
    /^cairn\.(host|gpu|python|env)\./.test(k)));
  return (
    <div>
      <h2>Host and interpreter</h2>
      <KeyValues rows={facts} id="env-facts" />
      <h2>Packages (pylock.toml)</h2>
      {lock === null ? <p class="muted">Loading…</p> : lock ? <pre>{lock}</pre> : <p class="muted">No environment snapshot.</p>}
      {host && <><h2>Host facts</h2><pre>{host}</pre></>}
    </div>
  );
}
