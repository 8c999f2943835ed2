// The signed-in user's settings: their access tokens, for MLflow clients, scripts and CI.
import { Tokens } from "../components/Tokens.jsx";
import { useSession } from "../session.js";

export function Settings() {
  const session = useSession();
  if (!session.auth) {
    return (
      <section>
        <h1>Access tokens</h1>
        <p class="muted">Authentication is off on this server: clients need no token.</p>
      </section>
    );
  }
  return (
    <section>
      <h1>Access tokens of {session.username}</h1>
      <p class="muted">
        A client sends a token as <code>Authorization: Bearer TOKEN</code> (MLflow clients:
        <code> MLFLOW_TRACKING_TOKEN</code>). A read token reads only; write also logs runs and
        changes experiments, within your permissions.
      </p>
      <Tokens />
    </section>
  );
}
