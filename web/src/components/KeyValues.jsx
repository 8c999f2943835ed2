// Keys and their values as a two-column table, sorted by key; "None." when there are none.
import { formatValue } from "../util.js";

export function KeyValues({ rows, id }) {
  const keys = Object.keys(rows).sort();
  if (!keys.length) return <p class="muted">None.</p>;
  return (
    <table class="table kv" id={id}>
      <tbody>
        {keys.map((k) => <tr key={k}><th>{k}</th><td>{formatValue(rows[k])}</td></tr>)}
      </tbody>
    </table>
  );
}
