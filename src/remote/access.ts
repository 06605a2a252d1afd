/**
 * Access control on the remote API (docs/remote-api.md, docs/security.md): the upgrade request
 * authenticates the connection, then each operation is decided as its zenoh message, the same
 * decision REST makes. Reads allowed in part are filtered per key; writes and declarations that
 * provide data must be allowed whole.
 */
import type { IncomingMessage } from "node:http";
import type { AccessControl, Message, Principal } from "../access/access.js";
import { httpClientWithToken } from "../access/client.js";
import { ZestError } from "../core/errors.js";
import type { Authorize, RemoteMessageName } from "./connection.js";

/** The zenoh access-control message of each remote API operation that names a key expression. */
const MESSAGES: ReadonlyMap<RemoteMessageName, Message> = new Map<RemoteMessageName, Message>([
  ["Put", "put"],
  ["PublisherPut", "put"],
  ["Delete", "delete"],
  ["PublisherDelete", "delete"],
  ["Get", "query"],
  ["QuerierGet", "query"],
  ["DeclareQuerier", "query"],
  ["DeclareSubscriber", "declare_subscriber"],
  ["DeclareQueryable", "declare_queryable"],
  ["DeclareLivelinessToken", "liveliness_token"],
  ["DeclareLivelinessSubscriber", "declare_liveliness_subscriber"],
  ["LivelinessGet", "liveliness_query"],
]);

/**
 * Adds access control to `base` (the admin-space permissions): both must allow an operation. The
 * upgrade's credentials are its `Authorization` header, else a `token` query parameter, since a
 * browser cannot set headers on a WebSocket (access/client.ts).
 * Authentication throws (or rejects with) an `unauthenticated` ZestError for bad credentials.
 */
export function accessAuthorizer(
  access: AccessControl,
  base: (req: IncomingMessage) => Authorize,
): (req: IncomingMessage) => Authorize | Promise<Authorize> {
  if (!access.enabled) return base;
  return (req) => {
    const admin = base(req);
    // The remote API is zenoh over WebSocket: `link_protocols: ["ws"]` subjects match it.
    const principal = access.authenticate({ ...httpClientWithToken(req), protocol: "ws" });
    return principal instanceof Promise
      ? principal.then((p) => decider(access, p, admin))
      : decider(access, principal, admin);
  };
}

function decider(access: AccessControl, principal: Principal, admin: Authorize): Authorize {
  // An anonymous client that could do nothing is asked for credentials at the upgrade (401 with
  // a Basic challenge): a browser then retries with the `ws://user:password@host` userinfo.
  if (principal.user === undefined && access.wantsCredentials && access.allowsNothing(principal)) {
    throw new ZestError(
      "unauthenticated",
      "this connection needs credentials: Basic or Bearer in the Authorization header, user:password in the URL, or ?token=<token>",
    );
  }
  return (name, key) => {
    const first = admin(name, key);
    if (first === false) return false;
    if (name === "DeclarePublisher") {
      // A publisher puts or deletes: declaring one needs either on its whole key.
      if (access.decide(principal, "put", key) === "allow" || access.decide(principal, "delete", key) === "allow")
        return first;
      throw access.refusal(principal, `declare a publisher on ${key}`);
    }
    const message = MESSAGES.get(name);
    if (message === undefined) return first;
    const decision = access.decide(principal, message, key);
    if (decision === "deny") throw access.refusal(principal, `${message} ${key}`);
    if (decision === "allow") return first;
    const own = (k: string): boolean => access.decide(principal, message, k) === "allow";
    return first === true ? own : (k) => first(k) && own(k);
  };
}
