import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { Compare } from "./pages/Compare.jsx";
import { Experiments } from "./pages/Experiments.jsx";
import { Pipeline } from "./pages/Pipeline.jsx";
import { Run } from "./pages/Run.jsx";
import { Runs } from "./pages/Runs.jsx";
import { useRoute } from "./router.js";
import "./style.css";

function App() {
  const { parts, params } = useRoute();
  const [version, setVersion] = useState("");
  useEffect(() => {
    fetch("/version").then((r) => r.text()).then(setVersion).catch(() => {});
  }, []);
  let page;
  if (parts[0] === "experiments" && parts[1]) {
    page = <Runs key={parts[1]} experimentId={parts[1]} params={params} />;
  } else if (parts[0] === "runs" && parts[1]) {
    page = <Run key={parts[1]} runId={parts[1]} params={params} />;
  } else if (parts[0] === "pipelines" && parts[1]) {
    page = <Pipeline key={parts[1]} runId={parts[1]} />;
  } else if (parts[0] === "compare") {
    page = <Compare params={params} />;
  } else {
    page = <Experiments />;
  }
  return (
    <>
      <header class="top">
        <a href="#/" class="brand">cairn</a>
        <span class="muted">{version}</span>
      </header>
      <main>{page}</main>
    </>
  );
}

render(<App />, document.getElementById("app"));
