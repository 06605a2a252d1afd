import type { AccessControl } from "../access/access.js";
import type { AdminPermissions } from "../access/admin-permissions.js";
import type { Session } from "../core/session.js";
import type { BodyWatch } from "./body.js";
import type { RestCodec } from "./codec.js";

/** What the read and the write paths both work with, built once by the server. */
export interface PathOptions {
  readonly session: Session;
  readonly codec: RestCodec;
  readonly access: AccessControl;
  readonly permissions: AdminPermissions;
  /** Largest request body accepted (a write's value, a GET's query payload), in bytes. */
  readonly bodyLimit: number;
  readonly bodyWatch: BodyWatch;
}
