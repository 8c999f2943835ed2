// A unified diff with added and removed lines coloured.
export function Diff({ text, id }) {
  return (
    <pre class="diff" id={id}>
      {text.split("\n").map((line, i) => (
        <span key={i} class={line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : ""}>
          {line + "\n"}
        </span>
      ))}
    </pre>
  );
}
