// Who is signed in, and what they may do with an experiment, so that pages offer only what the
// server would allow. The server checks every request regardless: this only spares a person
// buttons that would answer "Permission denied".
import { createContext } from "preact";
import { useContext } from "preact/hooks";
import { cairn } from "./api.js";

// With authentication off every caller acts as an admin.
export const AUTH_OFF = { auth: false, signed_in: true, username: "", is_admin: true };

export const SessionContext = createContext(AUTH_OFF);
export const useSession = () => useContext(SessionContext);

export const LEVELS = ["NO_PERMISSIONS", "READ", "EDIT", "MANAGE"];

// The experiments asked about in one request at most.
const BATCH = 500;

// What the session may do with each experiment in `ids`: a Map from id to {edit, manage}
// (EDIT: rename, runs; MANAGE: delete, permissions), from the server's experiments/access,
// which answers for admins, team grants and the server's default alike.
export async function experimentAccess(session, ids) {
  const out = new Map();
  if (!session.auth || session.is_admin) {
    for (const id of ids) out.set(id, { manage: true, edit: true });
    return out;
  }
  for (let i = 0; i < ids.length; i += BATCH) {
    const { experiments } = await cairn.get("experiments/access",
                                            { experiment_id: ids.slice(i, i + BATCH) });
    for (const e of experiments) out.set(e.experiment_id, { manage: e.can_manage, edit: e.can_update });
  }
  return out;
}
