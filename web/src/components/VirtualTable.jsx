// A table that renders only the rows in view, so that 10,000 runs scroll as smoothly as 10.
// Rows have one fixed height; the header stays put; a click on a header sorts by it.
import { useEffect, useRef, useState } from "preact/hooks";

const ROW = 30;

export function VirtualTable({ columns, rows, rowKey, sort, onSort, height = 560, rowClass }) {
  const box = useRef(null);
  const [top, setTop] = useState(0);
  useEffect(() => {
    if (box.current) box.current.scrollTop = 0;
    setTop(0);
  }, [sort && sort.key, sort && sort.desc]);
  const first = Math.max(0, Math.floor(top / ROW) - 10);
  const last = Math.min(rows.length, Math.ceil((top + height) / ROW) + 10);
  const visible = rows.slice(first, last);
  // Widths in em, so that the header and the rows line up however far the table scrolls
  // sideways: both are in the one scrolling box, the header sticking to its top.
  const template = columns.map((c) => `${c.width || 9}em`).join(" ");
  const width = `max(100%, ${columns.reduce((n, c) => n + (c.width || 9), 0)}em)`;
  return (
    <div class="vtable" data-rows={rows.length}>
      <div class="vtable-body" ref={box} style={{ height: `${height}px` }}
           onScroll={(e) => setTop(e.currentTarget.scrollTop)}>
        <div class="vtable-head" style={{ gridTemplateColumns: template, width }} role="row">
          {columns.map((c) => (
            <div
              key={c.key}
              role="columnheader"
              class={"vtable-cell" + (c.sortable === false ? "" : " sortable")}
              title={c.title || c.label}
              onClick={() => c.sortable !== false && onSort && onSort(c.key)}
            >
              {c.label}
              {sort && sort.key === c.key ? (sort.desc ? " ▼" : " ▲") : ""}
            </div>
          ))}
        </div>
        <div style={{ height: `${rows.length * ROW}px`, position: "relative", width }}>
          {visible.map((row, i) => (
            <div
              key={rowKey(row)}
              role="row"
              class={"vtable-row " + (rowClass ? rowClass(row) : "")}
              style={{ top: `${(first + i) * ROW}px`, gridTemplateColumns: template }}
            >
              {columns.map((c) => (
                <div key={c.key} class="vtable-cell" role="cell">
                  {c.render ? c.render(row) : String(c.value(row) ?? "")}
                </div>
              ))}
            </div>
          ))}
        </div>
      </div>
    </div>
  );
}
