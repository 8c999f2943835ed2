import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { getSession, logout, onSignedOut, setCsrfToken } from "./api.js";
import { Admin } from "./pages/Admin.jsx";
import { Compare } from "./pages/Compare.jsx";
import { DataDiff, Dataset, Datasets, DataVersion } from "./pages/Datasets.jsx";
import { Experiments } from "./pages/Experiments.jsx";
import { Login } from "./pages/Login.jsx";
import { Model } from "./pages/Model.jsx";
import { Models } from "./pages/Models.jsx";
import { ModelVersion } from "./pages/ModelVersion.jsx";
import { Pipeline } from "./pages/Pipeline.jsx";
import { Queues } from "./pages/Queues.jsx";
import { Run } from "./pages/Run.jsx";
import { Runs } from "./pages/Runs.jsx";
import { Settings } from "./pages/Settings.jsx";
import { href, useRoute } from "./router.js";
import { SessionContext } from "./session.js";
import "./style.css";

const SIGNED_OUT = { auth: true, signed_in: false, username: "", is_admin: false };

function App() {
  const { parts, params } = useRoute();
  const [version, setVersion] = useState("");
  const [session, setSession] = useState(null); // null: not known yet
  const [error, setError] = useState(null);
  useEffect(() => {
    fetch("/version").then((r) => r.text()).then(setVersion).catch(() => {});
  }, []);
  // Who is signed in decides what shows, so nothing else is asked before it is known. A 401
  // later (the session expired, or was ended elsewhere) brings the sign-in page back, in place
  // of the page the person is on.
  // The CSRF token is in place before any page renders and asks (searches are POSTs).
  const adopt = (s) => {
    setCsrfToken(s.csrf_token);
    setSession(s);
  };
  useEffect(() => {
    getSession().then(adopt).catch((e) => setError(e.message));
    return onSignedOut(() => setSession((s) => (s && s.auth ? SIGNED_OUT : s)));
  }, []);

  const signOut = () => {
    logout().catch(() => {}).finally(() => {
      adopt(SIGNED_OUT);
      location.hash = "#/";
    });
  };

  let page;
  if (error) {
    page = <p class="error" role="alert">{error}</p>;
  } else if (!session) {
    page = <p class="muted">Loading…</p>;
  } else if (session.auth && !session.signed_in) {
    page = <Login onSignedIn={adopt} />;
  } else if (parts[0] === "experiments" && parts[1]) {
    page = <Runs key={parts[1]} experimentId={parts[1]} params={params} />;
  } else if (parts[0] === "runs" && parts[1]) {
    page = <Run key={parts[1]} runId={parts[1]} params={params} />;
  } else if (parts[0] === "pipelines" && parts[1]) {
    page = <Pipeline key={parts[1]} runId={parts[1]} />;
  } else if (parts[0] === "models" && parts[1] && parts[2] === "versions" && parts[3]) {
    page = <ModelVersion key={parts[1] + "/" + parts[3]} name={parts[1]} version={parts[3]} />;
  } else if (parts[0] === "models" && parts[1]) {
    page = <Model key={parts[1]} name={parts[1]} />;
  } else if (parts[0] === "models") {
    page = <Models params={params} />;
  } else if (parts[0] === "datasets" && parts[1] && parts[2] === "versions" && parts[3]) {
    page = <DataVersion key={parts[1] + "/" + parts[3]} name={parts[1]} version={parts[3]} />;
  } else if (parts[0] === "datasets" && parts[1] && parts[2] === "diff") {
    page = <DataDiff key={parts[1]} name={parts[1]} params={params} />;
  } else if (parts[0] === "datasets" && parts[1]) {
    page = <Dataset key={parts[1]} name={parts[1]} />;
  } else if (parts[0] === "datasets") {
    page = <Datasets />;
  } else if (parts[0] === "queues") {
    page = <Queues />;
  } else if (parts[0] === "compare") {
    page = <Compare params={params} />;
  } else if (parts[0] === "settings") {
    page = <Settings />;
  } else if (parts[0] === "admin") {
    page = <Admin params={params} />;
  } else {
    page = <Experiments />;
  }
  const signedIn = session && session.auth && session.signed_in;
  // The sections, once there is something to show: with authentication off, or signed in.
  const inside = session && (!session.auth || session.signed_in);
  const section = ["models", "datasets", "queues"].includes(parts[0]) ? parts[0]
    : ["settings", "admin"].includes(parts[0]) ? "" : "experiments";
  return (
    <SessionContext.Provider value={session || SIGNED_OUT}>
      <header class="top">
        <a href="#/" class="brand">cairn</a>
        <span class="muted">{version}</span>
        {inside && (
          <nav class="sections">
            <a href="#/" id="experiments-link" class={section === "experiments" ? "active" : ""}>Experiments</a>
            <a href={href("models")} id="models-link" class={section === "models" ? "active" : ""}>Models</a>
            <a href={href("datasets")} id="datasets-link" class={section === "datasets" ? "active" : ""}>Datasets</a>
            <a href={href("queues")} id="queues-link" class={section === "queues" ? "active" : ""}>Queues</a>
          </nav>
        )}
        {signedIn && (
          <nav class="who">
            {session.is_admin && <a href="#/admin" id="admin-link">Admin</a>}
            <a href="#/settings/tokens" id="user" title="your access tokens">{session.username}</a>
            <button class="link" id="sign-out" onClick={signOut}>Sign out</button>
          </nav>
        )}
      </header>
      <main>{page}</main>
    </SessionContext.Provider>
  );
}

render(<App />, document.getElementById("app"));
