/**
 * Who a remote-API client is (docs/remote-api.md, docs/security.md): the upgrade request
 * authenticates the connection once, and the edge policy decides what it may do from then on
 * (access control for its principal, the admin-space permissions for its address). Each
 * operation is then decided by the connection's face as its zenoh message, the same decision
 * REST and the zenoh door make.
 */
import type { IncomingMessage } from "node:http";
import type { Principal } from "../access/access.js";
import { httpClientWithToken, isLoopbackRequest } from "../access/client.js";
import type { ClientPolicy } from "../access/client-policy.js";
import type { EdgePolicy } from "../access/edge-policy.js";
import { ZestError } from "../core/errors.js";

/**
 * The policy of the client behind an upgrade request. The credentials are its `Authorization`
 * header, else a `token` query parameter, since a browser cannot set headers on a WebSocket
 * (access/client.ts). Bad credentials throw (or reject with) an `unauthenticated` ZestError.
 */
export function remoteClientPolicy(edge: EdgePolicy): (req: IncomingMessage) => ClientPolicy | Promise<ClientPolicy> {
  const access = edge.access;
  if (!access.enabled) return (req) => edge.client(undefined, isLoopbackRequest(req));
  return (req) => {
    // The remote API is zenoh over WebSocket: `link_protocols: ["ws"]` subjects match it.
    const principal = access.authenticate({ ...httpClientWithToken(req), protocol: "ws" });
    const loopback = isLoopbackRequest(req);
    return principal instanceof Promise
      ? principal.then((p) => admitted(edge, p, loopback))
      : admitted(edge, principal, loopback);
  };
}

function admitted(edge: EdgePolicy, principal: Principal, loopback: boolean): ClientPolicy {
  const access = edge.access;
  // An anonymous client that could do nothing is asked for credentials at the upgrade (401 with
  // a Basic challenge): a browser then retries with the `ws://user:password@host` userinfo.
  if (principal.user === undefined && access.wantsCredentials && access.allowsNothing(principal)) {
    throw new ZestError(
      "unauthenticated",
      "this connection needs credentials: Basic or Bearer in the Authorization header, user:password in the URL, or ?token=<token>",
    );
  }
  return edge.client(principal, loopback);
}
