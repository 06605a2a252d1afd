/** What the access control needs to know about an HTTP request's client (docs/security.md). */
import type { IncomingMessage } from "node:http";

/** The request's `Authorization` header and the client's address. */
export function credentialsOf(req: IncomingMessage): { authorization: string | undefined; address: string } {
  return { authorization: req.headers.authorization, address: req.socket.remoteAddress ?? "" };
}
