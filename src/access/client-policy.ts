/**
 * What one client may do, decided once per connection by the edge policy and asked per operation
 * by its door (docs/security.md): access control's decision for the client's principal, and the
 * admin-space permissions resolved for where it connects from.
 */
import { ZestError } from "../core/errors.js";
import type { AccessControl, Decision, Message, Principal } from "./access.js";
import type { AdminPermissions } from "./admin-permissions.js";

/** One client's policy: every zenoh door's face asks it (src/door/face.ts). */
export interface ClientPolicy {
  /** Access control's decision on `message` over the canonical key expression `key` (allow when off). */
  decide(message: Message, key: string): Decision;
  /** The error for a refused operation (`what` names it): `unauthenticated` when credentials could help. */
  refusal(what: string): ZestError;
  /** Who may read and write the admin space (`@/…`). */
  readonly admin: AdminPermissions;
  /** The client connects from loopback (admin writes are allowed from there by default). */
  readonly loopback: boolean;
}

const allowAll = (): "allow" => "allow";
const forbid = (what: string): ZestError => ZestError.forbidden(`this client may not ${what}`);

/**
 * The policy of a client that `principal` names (undefined: access control is off), connected
 * from loopback or not.
 */
export function clientPolicy(
  access: AccessControl | undefined,
  principal: Principal | undefined,
  admin: AdminPermissions,
  loopback: boolean,
): ClientPolicy {
  if (access === undefined || !access.enabled || principal === undefined)
    return { decide: allowAll, refusal: forbid, admin, loopback };
  return {
    decide: (message, key) => access.decide(principal, message, key),
    refusal: (what) => access.refusal(principal, what),
    admin,
    loopback,
  };
}
