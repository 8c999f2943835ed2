// Routes live in the location's hash (#/experiments/1), so the server serves one page.
import { useEffect, useState } from "preact/hooks";

export function parseRoute(hash) {
  const [path, search = ""] = (hash.replace(/^#/, "") || "/").split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  return { parts, params: new URLSearchParams(search) };
}

export function useRoute() {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const onChange = () => setRoute(parseRoute(location.hash));
    addEventListener("hashchange", onChange);
    return () => removeEventListener("hashchange", onChange);
  }, []);
  return route;
}

export function href(...parts) {
  return "#/" + parts.map((p) => encodeURIComponent(p)).join("/");
}
