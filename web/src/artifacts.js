// Artifacts of a run, through the server's artifact proxy.
import { mlflow, uiFetch } from "./api.js";

// "mlflow-artifacts:/1/<run>/artifacts" -> "1/<run>/artifacts"
function rootOf(run) {
  return run.info.artifact_uri.replace(/^mlflow-artifacts:\/*/, "");
}

export function artifactUrl(run, path) {
  return "/api/2.0/mlflow-artifacts/artifacts/" +
    (rootOf(run) + "/" + path).split("/").map(encodeURIComponent).join("/");
}

export async function listArtifacts(run, path = "") {
  const out = await mlflow.get("artifacts/list", { run_id: run.info.run_id, path: path || undefined });
  return out.files || [];
}

// The first `maxBytes` of an artifact as text (a Range request: a large file is not read
// whole for a preview).
export async function fetchArtifactText(run, path, maxBytes = 2 << 20) {
  const resp = await uiFetch(artifactUrl(run, path), { headers: { Range: `bytes=0-${maxBytes - 1}` } });
  if (!resp.ok) throw new Error(`${path}: ${resp.status} ${resp.statusText}`);
  const text = await resp.text();
  const range = resp.headers.get("Content-Range"); // "bytes 0-N/TOTAL" when cut
  const total = range ? Number(range.split("/")[1]) : text.length;
  if (resp.status === 206 && total > maxBytes) return text + "\n… (the first " + maxBytes + " of " + total + " bytes)";
  return text.length > maxBytes ? text.slice(0, maxBytes) + "\n… (cut)" : text;
}

export function previewKind(path) {
  const ext = path.toLowerCase().split(".").pop();
  if (["png", "jpg", "jpeg", "gif", "webp", "svg"].includes(ext)) return "image";
  if (ext === "json") return "json";
  if (ext === "csv" || ext === "tsv") return "csv";
  if (["txt", "log", "md", "yaml", "yml", "toml", "py", "diff", "cfg", "ini", "sh"].includes(ext)) {
    return "text";
  }
  return null;
}
