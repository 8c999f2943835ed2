// Who is signed in, and what they may do with an experiment, so that pages offer only what the
// server would allow. The server checks every request regardless: this only spares a person
// buttons that would answer "Permission denied".
import { createContext } from "preact";
import { useContext } from "preact/hooks";
import { ApiError, cairn, mlflow } from "./api.js";

// With authentication off every caller acts as an admin.
export const AUTH_OFF = { auth: false, signed_in: true, username: "", is_admin: true };

export const SessionContext = createContext(AUTH_OFF);
export const useSession = () => useContext(SessionContext);

export const LEVELS = ["NO_PERMISSIONS", "READ", "EDIT", "MANAGE"];
const rank = (level) => LEVELS.indexOf(level);

// Probes at once while the experiments list asks whether it may manage each experiment.
const PARALLEL = 6;

// Whether the session may manage (MANAGE: delete, permissions) and edit (EDIT: rename, runs)
// each experiment in `ids`: a Map from id to {manage, edit}, where edit null means not known.
//
// An admin, or anyone when authentication is off, may do everything. Otherwise the user's own
// grants (users/get) decide where there is one, since an own grant overrides any team's. Where
// there is none, the level comes from a team's grant or the server's default, which only a
// manager may read: experiments/permissions answering 200 means MANAGE, 403 means less, and
// whether a team grants EDIT stays unknown, so a rename is still offered.
export async function experimentAccess(session, ids) {
  const out = new Map();
  if (!session.auth || session.is_admin) {
    for (const id of ids) out.set(id, { manage: true, edit: true });
    return out;
  }
  const { user } = await mlflow.get("users/get", { username: session.username });
  const own = new Map((user.experiment_permissions || []).map((p) => [p.experiment_id, p.permission]));
  const probe = [];
  for (const id of ids) {
    if (own.has(id)) {
      const r = rank(own.get(id));
      out.set(id, { manage: r >= rank("MANAGE"), edit: r >= rank("EDIT") });
    } else {
      probe.push(id);
    }
  }
  const next = async () => {
    while (probe.length) {
      const id = probe.shift();
      const manage = await cairn.get("experiments/permissions", { experiment_id: id }).then(
        () => true,
        (e) => {
          if (e instanceof ApiError && e.status === 403) return false;
          throw e;
        });
      out.set(id, { manage, edit: manage ? true : null });
    }
  };
  await Promise.all(Array.from({ length: PARALLEL }, next));
  return out;
}
