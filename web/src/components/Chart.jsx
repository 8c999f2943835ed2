// Metric curves drawn with uPlot from the server's thinned series (at most ~2,000 points a
// run), one line per run, with step or time on the x axis, optional smoothing and log scale;
// drag to zoom, double-click to reset.
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { useEffect, useRef, useState } from "preact/hooks";
import { metricSeries } from "../api.js";

const COLORS = ["#2f6db5", "#d9622b", "#3a9a5b", "#9b4fb8", "#c2a125", "#3aa6a6", "#b8445a",
                "#6b7a8f", "#7c5a2f", "#5f7f1f"];

function toNumber(v) {
  if (typeof v === "number") return v;
  if (v === "Infinity") return Infinity;
  if (v === "-Infinity") return -Infinity;
  return NaN;
}

// Exponential moving average with weight `alpha` in [0, 1): 0 leaves the values as they are.
function smooth(values, alpha) {
  if (!alpha) return values;
  let last = null;
  return values.map((v) => {
    if (v === null || !Number.isFinite(v)) return v;
    last = last === null ? v : alpha * last + (1 - alpha) * v;
    return last;
  });
}

// Joins series with different x values into uPlot's one-x-array form.
function align(seriesList) {
  const xs = [...new Set(seriesList.flatMap((s) => s.x))].sort((a, b) => a - b);
  const index = new Map(xs.map((x, i) => [x, i]));
  const ys = seriesList.map((s) => {
    const col = new Array(xs.length).fill(null);
    s.x.forEach((x, i) => {
      col[index.get(x)] = s.y[i];
    });
    return col;
  });
  return [xs, ...ys];
}

export function MetricChart({ metric, runs, width = 640, height = 280 }) {
  const box = useRef(null);
  const [xAxis, setXAxis] = useState("step");
  const [logScale, setLogScale] = useState(false);
  const [alpha, setAlpha] = useState(0);
  const [data, setData] = useState(null);
  const [error, setError] = useState(null);

  useEffect(() => {
    let live = true;
    setError(null);
    Promise.all(runs.map((r) => metricSeries(r.id, metric)))
      .then((list) => live && setData(list))
      .catch((e) => live && setError(e.message));
    return () => {
      live = false;
    };
  }, [metric, runs.map((r) => r.id).join(",")]);

  useEffect(() => {
    if (!data || !box.current) return undefined;
    const series = data.map((s) => ({
      x: (xAxis === "step" ? s.steps : s.timestamps.map((t) => t / 1000)),
      y: smooth(s.values.map(toNumber).map((v) => (Number.isFinite(v) ? v : null)), alpha),
    }));
    const plot = new uPlot(
      {
        width,
        height,
        scales: { x: { time: xAxis === "time" }, y: { distr: logScale ? 3 : 1 } },
        legend: { show: runs.length > 1 },
        series: [
          { label: xAxis },
          ...runs.map((r, i) => ({
            label: r.label,
            stroke: COLORS[i % COLORS.length],
            width: 1.5,
            spanGaps: true,
            // Short series show their points: a single one draws no line.
            points: { show: data[i] ? data[i].values.length <= 50 : false, size: 5 },
          })),
        ],
        axes: [{}, { size: 60 }],
      },
      align(series),
      box.current,
    );
    return () => plot.destroy();
  }, [data, xAxis, logScale, alpha, width, height]);

  const total = data ? data.reduce((n, s) => n + s.total_points, 0) : 0;
  const drawable = data && data.some((s) => s.values.some((v) => Number.isFinite(toNumber(v))));
  return (
    <div class="chart" data-metric={metric}>
      <div class="chart-bar">
        <strong>{metric}</strong>
        <label>
          x{" "}
          <select value={xAxis} onChange={(e) => setXAxis(e.currentTarget.value)}>
            <option value="step">step</option>
            <option value="time">time</option>
          </select>
        </label>
        <label>
          <input type="checkbox" checked={logScale}
                 onChange={(e) => setLogScale(e.currentTarget.checked)} /> log scale
        </label>
        <label>
          smoothing{" "}
          <input type="range" min="0" max="0.98" step="0.02" value={alpha}
                 onInput={(e) => setAlpha(Number(e.currentTarget.value))} />
        </label>
        {data && <span class="muted">{total.toLocaleString()} point{total === 1 ? "" : "s"}</span>}
        {data && total > 0 && !drawable && <span class="muted">no finite values to draw</span>}
      </div>
      {error ? <p class="error">{error}</p> : <div ref={box} class="chart-canvas" />}
    </div>
  );
}
