// A pipeline run: its steps laid out as the DAG they form, each with its state, duration and
// a link to its run, and each step's declared outputs linked to where they are kept as
// artifacts (the step's own run, or for a cached step the run that produced them). A step
// waiting for approval gets Approve and Reject buttons. Drawn from the runs alone: the parent run of the pipeline and a child run
// per step (tags cairn.step.id, cairn.step.state, cairn.step.needs). A step another one waits
// for but that never got a run is drawn as "not started". Read again every 3 s while running.
import { useEffect, useState } from "preact/hooks";
import { cairn, mlflow, searchRuns } from "../api.js";
import { Crumbs } from "../components/Crumbs.jsx";
import { href } from "../router.js";
import { formatDuration, runDuration, runFields } from "../util.js";

const W = 190;
const H = 48;
const GAP_X = 70;
const GAP_Y = 22;

function childRuns(parent) {
  return searchRuns({
    experiment_ids: [parent.info.experiment_id],
    filter: `tags.mlflow.parentRunId = '${parent.info.run_id}'`,
  });
}

function parseNeeds(text) {
  try {
    const v = JSON.parse(text || "[]");
    return Array.isArray(v) ? v.map(String) : [];
  } catch {
    return [];
  }
}

// Steps with their level (the longest chain of needs before them) and position.
export function layout(steps) {
  const byId = new Map(steps.map((s) => [s.id, s]));
  const level = new Map();
  const visit = (id, seen = new Set()) => {
    if (level.has(id)) return level.get(id);
    if (seen.has(id)) return 0; // a cycle cannot come from cairn; do not loop on bad tags
    seen.add(id);
    const s = byId.get(id);
    const l = s && s.needs.length ? 1 + Math.max(...s.needs.map((n) => visit(n, seen))) : 0;
    level.set(id, l);
    return l;
  };
  steps.forEach((s) => visit(s.id));
  const columns = [];
  for (const s of steps) (columns[level.get(s.id)] ||= []).push(s);
  const placed = new Map();
  columns.forEach((col, x) => col.forEach((s, y) => placed.set(s.id, {
    ...s, x: 20 + x * (W + GAP_X), y: 20 + y * (H + GAP_Y),
  })));
  return placed;
}

export function Pipeline({ runId }) {
  const [parent, setParent] = useState(null);
  const [steps, setSteps] = useState(null);
  const [error, setError] = useState(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    (async () => {
      const { run } = await mlflow.get("runs/get", { run_id: runId });
      const children = await childRuns(run);
      if (!live) return;
      // A resumed pipeline may have several runs of one step: its newest tells.
      const newest = new Map();
      for (const r of children) {
        const id = runFields(r).tags["cairn.step.id"] || r.info.run_name;
        const before = newest.get(id);
        if (!before || Number(r.info.start_time) >= Number(before.info.start_time)) newest.set(id, r);
      }
      const found = [...newest.entries()].map(([id, r]) => {
        const t = runFields(r).tags;
        return {
          id,
          runId: r.info.run_id,
          state: t["cairn.step.state"] || (r.info.status === "RUNNING" ? "running" : r.info.status.toLowerCase()),
          duration: runDuration(r),
          needs: parseNeeds(t["cairn.step.needs"]),
          outputs: parseNeeds(t["cairn.step.outputs"]),
          // Waiting, and not decided yet (the runner has not seen the decision).
          approver: t["cairn.step.state"] === "waiting for approval" && !t["cairn.approval.decision"]
            ? t["cairn.approval.by"] : undefined,
          // Where its outputs are kept: its own run, or the run a cached step's came from.
          outputsRun: t["cairn.step.state"] === "done" ? r.info.run_id
            : t["cairn.step.state"] === "cached" ? t["cairn.step.cached_from_run"] : undefined,
        };
      });
      const known = new Set(found.map((s) => s.id));
      for (const s of [...found]) {
        for (const n of s.needs) {
          if (!known.has(n)) {
            known.add(n);
            found.push({ id: n, state: "not started", needs: [] });
          }
        }
      }
      found.sort((a, b) => a.id.localeCompare(b.id));
      setParent(run);
      setSteps(found);
    })().catch((e) => live && setError(e.message));
    return () => {
      live = false;
    };
  }, [runId, tick]);
  const running = parent && parent.info.status === "RUNNING";
  useEffect(() => {
    if (!running) return undefined;
    const t = setTimeout(() => setTick((n) => n + 1), 3000);
    return () => clearTimeout(t);
  }, [running, steps]);

  if (error) return <p class="error" role="alert">{error}</p>;
  if (!steps) return <p class="muted">Loading…</p>;
  const placed = layout(steps);
  const nodes = [...placed.values()];
  const width = Math.max(...nodes.map((n) => n.x + W), 200) + 20;
  const height = Math.max(...nodes.map((n) => n.y + H), 60) + 20;
  const counts = {};
  for (const s of steps) counts[s.state] = (counts[s.state] || 0) + 1;
  const tags = runFields(parent).tags;
  return (
    <section>
      <Crumbs experimentId={parent.info.experiment_id} />
      <h1>Pipeline {tags["cairn.pipeline.name"] || parent.info.run_name}{" "}
        <span class="muted">{tags["cairn.pipeline.state"] || parent.info.status.toLowerCase()}</span></h1>
      <p class="muted" id="pipeline-summary">
        {steps.length} steps: {Object.entries(counts).map(([k, n]) => `${n} ${k}`).join(", ")}
        {" · "}<a href={href("runs", runId)}>the pipeline's run</a>
      </p>
      <div class="dag">
        <svg id="dag" width={width} height={height} role="img" aria-label="the pipeline's steps">
          {nodes.flatMap((n) => n.needs.filter((d) => placed.has(d)).map((d) => {
            const from = placed.get(d);
            const x1 = from.x + W;
            const y1 = from.y + H / 2;
            const x2 = n.x;
            const y2 = n.y + H / 2;
            const mid = (x1 + x2) / 2;
            return <path key={d + ">" + n.id} class="edge" data-edge={d + ">" + n.id}
                         d={`M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}`} />;
          }))}
          {nodes.map((n) => {
            const box = (
              <g class={"node " + n.state.replace(/\s/g, "-")} data-step={n.id} data-state={n.state}
                 transform={`translate(${n.x},${n.y})`}>
                <rect width={W} height={H} rx="6" />
                <text x="10" y="19" class="node-id">{n.id.length > 24 ? n.id.slice(0, 23) + "…" : n.id}</text>
                <text x="10" y="37" class="node-detail">
                  {n.state}{n.duration !== undefined && n.duration !== null ? " · " + formatDuration(n.duration) : ""}
                </text>
                <title>{n.id}</title>
              </g>
            );
            return n.runId ? <a key={n.id} href={href("runs", n.runId)}>{box}</a> : <g key={n.id}>{box}</g>;
          })}
        </svg>
      </div>
      <Approvals steps={steps} onDecided={() => setTick((n) => n + 1)} />
      <Outputs steps={steps} />
    </section>
  );
}

// The directory of a run's artifacts that holds the output `path` (outputs/model for model/,
// outputs for score.txt).
export function outputListing(path) {
  const clean = path.replace(/\/+$/, "").replace(/^\.\//, "");
  return "outputs/" + clean;
}

// Steps waiting for a person: who may decide, and the buttons that decide (the server checks
// that the signed-in user is that person or in that team).
function Approvals({ steps, onDecided }) {
  const waiting = steps.filter((s) => s.approver && s.runId);
  const [comment, setComment] = useState("");
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  if (!waiting.length) return null;
  const decide = (s, decision) => {
    setBusy(true);
    setError(null);
    cairn.post("runs/approval", { run_id: s.runId, decision, comment })
      .then(() => { setComment(""); onDecided(); })
      .catch((e) => setError(e.message))
      .finally(() => setBusy(false));
  };
  return (
    <div id="approvals">
      <h2>Waiting for approval</h2>
      {error && <p class="error" role="alert">{error}</p>}
      <input type="text" placeholder="comment (optional)" value={comment} aria-label="comment"
             onInput={(e) => setComment(e.currentTarget.value)} />
      <table>
        <tbody>
          {waiting.map((s) => (
            <tr key={s.id} data-step={s.id}>
              <td>{s.id}</td>
              <td class="muted">by {s.approver}</td>
              <td>
                <button type="button" disabled={busy} data-decision="approve"
                        onClick={() => decide(s, "approve")}>Approve</button>{" "}
                <button type="button" disabled={busy} data-decision="reject"
                        onClick={() => decide(s, "reject")}>Reject</button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function Outputs({ steps }) {
  const withOutputs = steps.filter((s) => s.outputs && s.outputs.length);
  if (!withOutputs.length) return null;
  const link = (s, o) => {
    const dir = outputListing(o);
    const isFile = !o.endsWith("/");
    const listing = isFile ? dir.slice(0, dir.lastIndexOf("/")) : dir;
    return href("runs", s.outputsRun) + "?tab=artifacts&path=" + encodeURIComponent(listing);
  };
  return (
    <div>
      <h2>Outputs</h2>
      <table id="pipeline-outputs">
        <thead><tr><th>Step</th><th>Outputs</th></tr></thead>
        <tbody>
          {withOutputs.map((s) => (
            <tr key={s.id} data-step={s.id}>
              <td>{s.id}</td>
              <td>
                {s.outputs.map((o, i) => (
                  <span key={o}>
                    {i > 0 && ", "}
                    {s.outputsRun ? <a href={link(s, o)} data-output={o}>{o}</a>
                      : <span class="muted" data-output={o}>{o}</span>}
                  </span>
                ))}
                {!s.outputsRun && <span class="muted"> (not written)</span>}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
