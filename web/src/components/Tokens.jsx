// Access tokens of one account: the list, a form for a new one (its value shown once, with a
// copy button) and revoking. `owner` is set when an admin manages a service account's tokens;
// without it the tokens are the signed-in user's.
import { useEffect, useState } from "preact/hooks";
import { cairn } from "../api.js";
import { useSession } from "../session.js";
import { formatTime } from "../util.js";

export function Tokens({ owner, defaultDays = 0 }) {
  const session = useSession();
  const [tokens, setTokens] = useState(null);
  const [error, setError] = useState(null);
  const [name, setName] = useState("");
  const [scopes, setScopes] = useState({ read: true, write: false, admin: false });
  const [days, setDays] = useState(String(defaultDays));
  const [created, setCreated] = useState(null); // {token, value}, shown until dismissed

  const load = () => cairn.get("tokens", { owner })
    .then((r) => setTokens(r.tokens))
    .catch((e) => setError(e.message));
  useEffect(() => {
    load();
  }, [owner]);

  const create = (ev) => {
    ev.preventDefault();
    setError(null);
    const chosen = Object.keys(scopes).filter((s) => scopes[s]);
    cairn.post("tokens", { name: name.trim(), scopes: chosen, expires_in_days: Number(days) || 0, owner })
      .then((r) => {
        setCreated(r);
        setName("");
        return load();
      })
      .catch((e) => setError(e.message));
  };
  const revoke = (t) => {
    if (!confirm(`Revoke token ${t.name}? Whatever uses it is refused from now on.`)) return;
    cairn.post("tokens/revoke", { token: t.id }).then(load).catch((e) => setError(e.message));
  };
  const scope = (s, label) => (
    <label>
      <input type="checkbox" name={"scope-" + s} checked={scopes[s]}
             onChange={(e) => setScopes({ ...scopes, [s]: e.currentTarget.checked })} /> {label}
    </label>
  );

  return (
    <div class="tokens">
      {error && <p class="error" role="alert">{error}</p>}
      {created && <NewToken created={created} onDone={() => setCreated(null)} />}
      <form class="inline-form" id="new-token-form" onSubmit={create}>
        <input name="token-name" placeholder="token name" required value={name}
               onInput={(e) => setName(e.currentTarget.value)} />
        {scope("read", "read")}
        {scope("write", "write")}
        {session.is_admin && scope("admin", "admin")}
        <label>
          expires in{" "}
          <input name="expires-in-days" type="number" min="0" class="narrow" value={days}
                 onInput={(e) => setDays(e.currentTarget.value)} /> days (0: never)
        </label>
        <button type="submit">Create token</button>
      </form>
      {!tokens ? (
        <p class="muted">Loading…</p>
      ) : !tokens.length ? (
        <p class="muted">No tokens yet.</p>
      ) : (
        <table class="table" id="tokens">
          <thead>
            <tr><th>Name</th><th>Scopes</th><th>Created</th><th>Expires</th><th>Last used</th><th>Revoked</th><th /></tr>
          </thead>
          <tbody>
            {tokens.map((t) => (
              <tr key={t.id} data-token={t.id} class={t.revoked_time ? "muted" : ""}>
                <td>{t.name}</td>
                <td>{t.scopes.join(", ")}</td>
                <td>{formatTime(t.created_time)}</td>
                <td>{t.expiry_time ? formatTime(t.expiry_time) : "never"}</td>
                <td>{t.last_used_time ? formatTime(t.last_used_time) : "never"}</td>
                <td class="revoked">{formatTime(t.revoked_time)}</td>
                <td class="actions">
                  {!t.revoked_time && <button onClick={() => revoke(t)}>Revoke</button>}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

// A new token's value, which the server keeps only as a hash: this is the one time it shows.
function NewToken({ created, onDone }) {
  const [copied, setCopied] = useState(null);
  const copy = () => navigator.clipboard.writeText(created.value)
    .then(() => setCopied("Copied."))
    .catch(() => setCopied("The browser refused: select the value and copy it."));
  return (
    <div class="notice" id="new-token" role="status">
      <p>
        Token <strong>{created.token.name}</strong> is made. Copy its value now: it will not be
        shown again.
      </p>
      <p>
        <code id="token-value">{created.value}</code>{" "}
        <button id="copy-token" onClick={copy}>Copy</button>{" "}
        <button class="link" onClick={onDone}>Done</button>
        {copied && <span class="muted"> {copied}</span>}
      </p>
    </div>
  );
}
