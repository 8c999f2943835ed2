// Datasets: the list, a dataset's versions (any two compared), one version (its facts, files
// and lineage: the run that made it and the runs that used it), and the diff of two versions.
import { useEffect, useState } from "preact/hooks";
import { cairn } from "../api.js";
import { DatasetCrumbs } from "../components/Crumbs.jsx";
import { KeyValues } from "../components/KeyValues.jsx";
import { href } from "../router.js";
import { formatSize, formatTime } from "../util.js";

const FILES_PAGE = 200;

// Loads `load()` when `deps` change: [value, error], value null while loading.
function useLoad(load, deps) {
  const [value, setValue] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    let live = true;
    setValue(null);
    setError(null);
    load().then((v) => live && setValue(v)).catch((e) => live && setError(e.message));
    return () => {
      live = false;
    };
  }, deps);
  return [value, error];
}

const short = (digest) => (digest || "").slice(0, 12);

export function Datasets() {
  const [list, error] = useLoad(() => cairn.get("datasets").then((r) => r.datasets || []), []);
  if (error) return <p class="error" role="alert">{error}</p>;
  return (
    <section>
      <h1>Datasets</h1>
      {!list ? <p class="muted">Loading…</p> : !list.length ? (
        <p class="muted">No datasets yet: <code>cairn data add NAME DIR</code> adds the first version of one.</p>
      ) : (
        <table class="table" id="datasets">
          <thead>
            <tr><th>Name</th><th class="num">Versions</th><th class="num">Latest</th><th class="num">Files</th>
              <th class="num">Size</th><th>Updated</th><th>Message</th></tr>
          </thead>
          <tbody>
            {list.map((d) => (
              <tr key={d.name} data-dataset={d.name}>
                <td><a href={href("datasets", d.name)}>{d.name}</a></td>
                <td class="num">{d.versions}</td>
                <td class="num"><a href={href("datasets", d.name, "versions", d.latest.version)}>{d.latest.version}</a></td>
                <td class="num">{d.latest.files}</td>
                <td class="num">{formatSize(d.latest.bytes)}</td>
                <td>{formatTime(d.latest.created_time)}</td>
                <td>{d.latest.message}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

export function Dataset({ name }) {
  const [versions, error] = useLoad(
    () => cairn.get("datasets/versions", { name }).then((r) => r.versions || []), [name]);
  const [picked, setPicked] = useState([]);
  if (error) return <p class="error" role="alert">{error}</p>;
  const toggle = (v) => setPicked((p) => (p.includes(v) ? p.filter((x) => x !== v) : [...p, v].slice(-2)));
  const [a, b] = [...picked].sort((x, y) => x - y);
  return (
    <section>
      <DatasetCrumbs />
      <h1>{name}</h1>
      {!versions ? <p class="muted">Loading…</p> : (
        <>
          <p>
            <a class={"button" + (picked.length === 2 ? "" : " disabled")} id="compare-versions"
               href={picked.length === 2 ? href("datasets", name, "diff") + `?from=${a}&to=${b}` : undefined}>
              Compare the two versions picked</a>
          </p>
          <table class="table" id="versions">
            <thead>
              <tr><th></th><th class="num">Version</th><th>Digest</th><th class="num">Files</th><th class="num">Size</th>
                <th>Created</th><th>By</th><th>Message</th></tr>
            </thead>
            <tbody>
              {versions.map((v) => (
                <tr key={v.version} data-version={v.version}>
                  <td><input type="checkbox" aria-label={`pick version ${v.version}`}
                             checked={picked.includes(v.version)} onChange={() => toggle(v.version)} /></td>
                  <td class="num"><a href={href("datasets", name, "versions", v.version)}>{v.version}</a></td>
                  <td><code>{short(v.digest)}</code></td>
                  <td class="num">{v.files}</td>
                  <td class="num">{formatSize(v.bytes)}</td>
                  <td>{formatTime(v.created_time)}</td>
                  <td>{v.creator || <span class="muted">-</span>}</td>
                  <td>{v.message}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}

function RunLink({ run }) {
  return (
    <a href={href("runs", run.run_id)}>{run.run_name || run.run_id.slice(0, 8)}</a>
  );
}

function Lineage({ name, version }) {
  const [lineage, error] = useLoad(() => cairn.get("datasets/lineage", { name, version }), [name, version]);
  if (error) return <p class="error">{error}</p>;
  if (!lineage) return <p class="muted">Loading…</p>;
  const used = lineage.used_by || [];
  return (
    <div id="lineage">
      <p id="produced-by">Made by: {lineage.produced_by ? <RunLink run={lineage.produced_by} />
        : <span class="muted">no run recorded</span>}</p>
      {!used.length ? <p class="muted" id="used-by">No run has recorded this version as an input.</p> : (
        <table class="table" id="used-by">
          <thead><tr><th>Used by run</th><th>Experiment</th><th>Status</th><th>Started</th></tr></thead>
          <tbody>
            {used.map((r) => (
              <tr key={r.run_id} data-run={r.run_id}>
                <td><RunLink run={r} /></td>
                <td><a href={href("experiments", r.experiment_id)}>{r.experiment_id}</a></td>
                <td>{r.status}</td>
                <td>{formatTime(r.start_time)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {lineage.hidden > 0 && <p class="muted">{lineage.hidden} more run(s) you may not read.</p>}
    </div>
  );
}

function Files({ name, version }) {
  const [prefix, setPrefix] = useState("");
  const [offset, setOffset] = useState(0);
  const [page, error] = useLoad(
    () => cairn.get("datasets/files", { name, version, prefix, offset, max_results: FILES_PAGE }),
    [name, version, prefix, offset]);
  const [text, setText] = useState("");
  const apply = (ev) => {
    ev.preventDefault();
    setOffset(0);
    setPrefix(text.trim());
  };
  return (
    <div>
      <form class="inline-form" onSubmit={apply}>
        <input id="files-prefix" placeholder="directory, e.g. train/" value={text}
               onInput={(e) => setText(e.currentTarget.value)} />
        <button type="submit">Show</button>
      </form>
      {error ? <p class="error">{error}</p> : !page ? <p class="muted">Loading…</p> : (
        <>
          <p class="muted" id="files-total">{page.total_files} file(s), {formatSize(page.total_bytes)}
            {prefix ? ` under ${prefix}` : ""}</p>
          <table class="table" id="files">
            <thead><tr><th>Path</th><th class="num">Size</th><th>SHA-256</th></tr></thead>
            <tbody>
              {page.files.map((f) => (
                <tr key={f.path} data-path={f.path}>
                  <td>{f.path}{f.executable ? " *" : ""}</td>
                  <td class="num">{formatSize(f.size)}</td>
                  <td><code>{short(f.sha256)}</code></td>
                </tr>
              ))}
            </tbody>
          </table>
          {page.total_files > FILES_PAGE && (
            <p>
              <button disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - FILES_PAGE))}>Previous</button>{" "}
              <span class="muted">{offset + 1}–{Math.min(offset + FILES_PAGE, page.total_files)}</span>{" "}
              <button disabled={offset + FILES_PAGE >= page.total_files} onClick={() => setOffset(offset + FILES_PAGE)}>Next</button>
            </p>
          )}
        </>
      )}
    </div>
  );
}

export function DataVersion({ name, version }) {
  const [v, error] = useLoad(
    () => cairn.get("datasets/get", { name, version }).then((r) => r.version), [name, version]);
  if (error) return <p class="error" role="alert">{error}</p>;
  if (!v) return <p class="muted">Loading…</p>;
  const metadata = Object.fromEntries(Object.entries(v.metadata || {}).map(([k, x]) =>
    [k, typeof x === "string" ? x : JSON.stringify(x)]));
  return (
    <section>
      <DatasetCrumbs name={name} />
      <h1>{name} <span class="muted">version {v.version}</span></h1>
      <table class="table kv" id="data-version">
        <tbody>
          <tr><th>Digest</th><td><code>{v.digest}</code></td></tr>
          <tr><th>Files</th><td>{v.files}, {formatSize(v.bytes)}</td></tr>
          <tr><th>Created</th><td>{formatTime(v.created_time)}{v.creator ? ` by ${v.creator}` : ""}</td></tr>
          <tr><th>Message</th><td>{v.message || <span class="muted">none</span>}</td></tr>
          <tr><th>Made after</th><td>{v.parent ? (
            <>
              <a href={href("datasets", name, "versions", v.parent)}>version {v.parent}</a>{" · "}
              <a id="diff-parent" href={href("datasets", name, "diff") + `?from=${v.parent}&to=${v.version}`}>what changed</a>
            </>) : <span class="muted">nothing: the first version</span>}</td></tr>
          <tr><th>Use it</th><td><code>cairn data get {name}@{v.version} DIR</code></td></tr>
        </tbody>
      </table>
      {Object.keys(metadata).length > 0 && <><h2>Metadata</h2><KeyValues rows={metadata} id="data-metadata" /></>}
      <h2>Lineage</h2>
      <Lineage name={name} version={v.version} />
      <h2>Files</h2>
      <Files name={name} version={v.version} />
    </section>
  );
}

export function DataDiff({ name, params }) {
  const from = params.get("from");
  const to = params.get("to");
  const [d, error] = useLoad(() => cairn.get("datasets/diff", { name, from, to }), [name, from, to]);
  if (error) return <p class="error" role="alert">{error}</p>;
  if (!d) return <p class="muted">Loading…</p>;
  const sum = (list) => list.reduce((n, f) => n + f.size, 0);
  const rows = [
    ...d.added.map((f) => ({ kind: "added", path: f.path, sizes: formatSize(f.size) })),
    ...d.removed.map((f) => ({ kind: "removed", path: f.path, sizes: formatSize(f.size) })),
    ...d.changed.map((c) => ({ kind: "changed", path: c.path,
      sizes: `${formatSize(c.from_size)} → ${formatSize(c.to_size)}` })),
  ].sort((x, y) => (x.path < y.path ? -1 : x.path > y.path ? 1 : 0));
  return (
    <section>
      <DatasetCrumbs name={name} />
      <h1>{name} <span class="muted">version {d.from.version} → {d.to.version}</span></h1>
      <p id="diff-summary">{d.added.length} added ({formatSize(sum(d.added))}), {d.removed.length} removed
        ({formatSize(sum(d.removed))}), {d.changed.length} changed;
        {" "}{d.to.files - d.added.length - d.changed.length} of {d.to.files} files the same.</p>
      {!rows.length ? <p class="muted">The two versions hold the same files.</p> : (
        <table class="table" id="data-diff">
          <thead><tr><th>Change</th><th>Path</th><th class="num">Size</th></tr></thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.path} class={"diff-" + r.kind} data-path={r.path}>
                <td>{r.kind}</td><td>{r.path}</td><td class="num">{r.sizes}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
