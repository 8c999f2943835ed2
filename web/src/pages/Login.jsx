// Signing in, on a server with authentication on. The page the person was going to stays in
// the address, so it shows once they are in.
import { useState } from "preact/hooks";
import { login } from "../api.js";

export function Login({ onSignedIn }) {
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = (ev) => {
    ev.preventDefault();
    setBusy(true);
    setError(null);
    login(username.trim(), password)
      .then(onSignedIn)
      .catch((e) => {
        setError(e.message);
        setPassword("");
      })
      .finally(() => setBusy(false));
  };
  return (
    <section class="login">
      <h1>Sign in</h1>
      <form id="login" class="stacked" onSubmit={submit}>
        <label>
          Username
          <input name="username" autocomplete="username" required value={username}
                 onInput={(e) => setUsername(e.currentTarget.value)} />
        </label>
        <label>
          Password
          <input name="password" type="password" autocomplete="current-password" required
                 value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
        </label>
        {error && <p class="error" role="alert" id="login-error">{error}</p>}
        <button type="submit" disabled={busy}>Sign in</button>
      </form>
    </section>
  );
}
