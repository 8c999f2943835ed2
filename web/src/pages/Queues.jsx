// Queues and agents: every queue with its waiting tasks in the order they start (and the
// reason a task waits, when it is not just its turn) and its running tasks, with buttons to
// cancel a task or change its priority; then the agents with their host, GPUs, slots, running
// tasks and last heartbeat. Refreshed every few seconds.
import { useEffect, useState } from "preact/hooks";
import { cairn } from "../api.js";
import { href } from "../router.js";
import { formatDuration, formatTime } from "../util.js";

const REFRESH_MS = 3000;

function gpuSummary(host) {
  const gpus = (host && host.gpus) || [];
  if (!gpus.length) return host && host.distribution ? host.distribution : "no GPU";
  const names = [...new Set(gpus.map((g) => g.name))].join(", ");
  return `${gpus.length} × ${names}` + (host.driver_version ? `, driver ${host.driver_version}` : "");
}

function TaskRow({ task, now, onChanged, onError }) {
  const act = (call) => call.then(onChanged).catch((e) => onError(e.message));
  const cancel = () => {
    if (!confirm(`Cancel task ${task.id.slice(0, 8)}?` +
      (task.state === "running" ? " Its agent stops it." : ""))) return;
    act(cairn.post(`tasks/${task.id}/cancel`, {}));
  };
  const reprioritise = () => {
    const answer = prompt(`Priority of task ${task.id.slice(0, 8)} (higher starts first)`,
      String(task.priority));
    if (answer === null || answer.trim() === "") return;
    const priority = Number(answer);
    if (!Number.isInteger(priority)) {
      onError(`"${answer}" is not a whole number`);
      return;
    }
    act(cairn.post(`tasks/${task.id}/move`, { queue: task.queue, priority }));
  };
  const running = task.state === "running";
  return (
    <tr data-task={task.id} data-state={task.state}>
      <td><a href={href("runs", task.run_id)} title={task.id}>{task.id.slice(0, 8)}</a></td>
      <td class="num">{task.priority}</td>
      <td class="num">{task.attempt}/{task.max_attempts}</td>
      <td class="num">{task.needs && task.needs.gpus ? task.needs.gpus : ""}</td>
      <td>{task.owner}{task.team ? ` (${task.team})` : ""}</td>
      <td class="task-status">
        {running
          ? `on ${task.agent} for ${formatDuration(now - task.start_time)}` +
            (task.cancel_requested ? ", stopping" : "")
          : `waiting ${formatDuration(now - task.created_time)}` +
            (task.reason ? ` (${task.reason})` : "")}
      </td>
      <td class="actions">
        {!running && <button class="link" data-action="priority" onClick={reprioritise}>priority</button>}
        {!task.cancel_requested && <button class="link" data-action="cancel" onClick={cancel}>cancel</button>}
      </td>
    </tr>
  );
}

export function Queues() {
  const [queues, setQueues] = useState(null);
  const [tasks, setTasks] = useState([]);
  const [agents, setAgents] = useState([]);
  const [error, setError] = useState(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    Promise.all([
      cairn.get("queues"),
      cairn.get("tasks", { state: ["queued", "running"], max_results: 10000 }),
      cairn.get("agents"),
    ]).then(([q, t, a]) => {
      if (!live) return;
      setQueues(q.queues || []);
      setTasks(t.tasks || []);
      setAgents(a.agents || []);
    }).catch((e) => live && setError(e.message));
    const timer = setTimeout(() => live && setTick(tick + 1), REFRESH_MS);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [tick]);
  const refresh = () => {
    setError(null);
    setTick(tick + 1);
  };
  const now = Date.now();

  if (!queues) return error ? <p class="error" role="alert">{error}</p> : <p class="muted">Loading…</p>;
  return (
    <section>
      <h1>Queues</h1>
      {error && <p class="error" role="alert" id="queue-error">{error}</p>}
      {!queues.length && (
        <p class="muted">No queues yet: <code>cairn run --queue NAME -- COMMAND</code> queues a task.</p>
      )}
      {queues.map((q) => {
        const mine = tasks.filter((t) => t.queue === q.name);
        return (
          <div class="queue" key={q.name} data-queue={q.name}>
            <h2>{q.name} <span class="muted">{q.queued} waiting, {q.running} running
              {q.description ? ` · ${q.description}` : ""}</span></h2>
            {mine.length ? (
              <table class="table">
                <thead>
                  <tr><th>Task</th><th>Priority</th><th>Attempt</th><th>GPUs</th><th>Owner</th>
                    <th>Status</th><th></th></tr>
                </thead>
                <tbody>
                  {mine.map((t) => <TaskRow key={t.id} task={t} now={now} onChanged={refresh} onError={setError} />)}
                </tbody>
              </table>
            ) : <p class="muted">Nothing waits or runs.</p>}
          </div>
        );
      })}
      <h1>Agents</h1>
      {!agents.length ? (
        <p class="muted">No agents: <code>cairn agent --queue NAME</code> on a GPU host runs tasks.</p>
      ) : (
        <table class="table" id="agents">
          <thead>
            <tr><th>Agent</th><th>Queues</th><th>GPUs</th><th>Slots</th><th>Running</th>
              <th>Last heartbeat</th><th>Host</th></tr>
          </thead>
          <tbody>
            {agents.map((a) => (
              <tr key={a.id} data-agent={a.id}>
                <td>{a.id}</td>
                <td>{(a.queues || []).join(", ")}</td>
                <td>{(a.gpus || []).join(",") || "-"}</td>
                <td class="num">{a.slots}</td>
                <td class="num">{tasks.filter((t) => t.state === "running" && t.agent === a.id).length}</td>
                <td title={formatTime(a.heartbeat_time)}>{formatDuration(now - a.heartbeat_time)} ago</td>
                <td>{gpuSummary(a.host)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
