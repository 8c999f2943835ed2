// Artifacts of a run, and the files of a model version, through the server's artifact proxy.
import { listArtifactStore, mlflow, uiFetch } from "./api.js";

// The proxy's address of `path` in the artifact store ("models/<id>/model.pkl").
function storeUrl(path) {
  return "/api/2.0/mlflow-artifacts/artifacts/" + path.split("/").map(encodeURIComponent).join("/");
}

// "mlflow-artifacts:/1/<run>/artifacts" -> "1/<run>/artifacts"
function rootOf(run) {
  return run.info.artifact_uri.replace(/^mlflow-artifacts:\/*/, "");
}

export function artifactUrl(run, path) {
  return storeUrl(rootOf(run) + "/" + path);
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

// Where a model version's files are kept: "models/<id>" for a download URI
// "mlflow-artifacts:/models/<id>", null when the server keeps none (a version whose source
// the server was told to allow elsewhere, s3:// or the like, has that source as its URI).
export function versionRoot(downloadUri) {
  const m = /^mlflow-artifacts:\/*(.+)$/.exec(downloadUri || "");
  return m ? m[1].replace(/\/+$/, "") : null;
}

export function versionFileUrl(root, path) {
  return storeUrl(root + "/" + path);
}

// Every file under a version's root, directories walked in order ({path, file_size}, paths
// relative to the root), and whether the walk stopped at `limit` files.
export async function listVersionFiles(root, limit = 1000) {
  const files = [];
  let truncated = false;
  const walk = async (dir) => {
    const { files: entries = [] } = await listArtifactStore(dir ? root + "/" + dir : root);
    for (const e of entries) {
      const path = dir ? dir + "/" + e.path : e.path;
      if (e.is_dir) {
        await walk(path);
      } else if (files.length < limit) {
        files.push({ path, file_size: e.file_size });
      } else {
        truncated = true;
      }
      if (truncated) return;
    }
  };
  await walk("");
  return { files, truncated };
}
