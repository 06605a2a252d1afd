/**
 * What a front door knows about its client, door-neutral (docs/security.md): the address, whether
 * it is on this machine, and the credentials it presented. HTTP-based doors read them from a
 * request; any other door fills `ClientInfo` from its own wire.
 */
import { Buffer } from "node:buffer";
import type { Credentials } from "./access.js";

/** A client of a front door. */
export interface ClientInfo extends Credentials {
  /** True when the client is on this machine (admin writes are allowed from loopback by default). */
  readonly loopback: boolean;
}

/** The parts of an HTTP request (`node:http` IncomingMessage) the edge policy reads. */
export interface RequestLike {
  readonly url?: string | undefined;
  readonly headers: { readonly authorization?: string | undefined };
  readonly socket: { readonly remoteAddress?: string | undefined; readonly localAddress?: string | undefined };
}

/** True for a loopback address (`127.0.0.0/8`, `::1`, and IPv4-mapped loopback). */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (address === undefined) return false;
  return address === "::1" || address.startsWith("127.") || address.startsWith("::ffff:127.");
}

/** True when the request's client is on this machine. */
export function isLoopbackRequest(req: RequestLike): boolean {
  return isLoopbackAddress(req.socket.remoteAddress);
}

/**
 * The credentials of an HTTP request: its `Authorization` header (Basic or Bearer) and address.
 * On REST's hot path: one small object, nothing else.
 */
export function httpCredentials(req: RequestLike): Credentials {
  return {
    authorization: req.headers.authorization,
    address: req.socket.remoteAddress ?? "",
    localAddress: req.socket.localAddress,
  };
}

/** The client of an HTTP request: its address, whether it is loopback, and its `Authorization` header. */
export function httpClient(req: RequestLike): ClientInfo {
  const address = req.socket.remoteAddress ?? "";
  return {
    authorization: req.headers.authorization,
    address,
    localAddress: req.socket.localAddress,
    loopback: isLoopbackAddress(address),
  };
}

/**
 * The client of a request where headers may be out of reach (a browser cannot set them on a
 * WebSocket): the `Authorization` header (a browser turns `ws://user:password@host` userinfo into
 * Basic), else a `token` query parameter taken as a Bearer token.
 */
export function httpClientWithToken(req: RequestLike): ClientInfo {
  const header = req.headers.authorization;
  if (header !== undefined && header !== "") return httpClient(req);
  const address = req.socket.remoteAddress ?? "";
  const url = req.url ?? "/";
  const q = url.indexOf("?");
  const token = q === -1 ? null : new URLSearchParams(url.slice(q + 1)).get("token");
  return {
    authorization: token ? `Bearer ${token}` : undefined,
    address,
    localAddress: req.socket.localAddress,
    loopback: isLoopbackAddress(address),
  };
}

/**
 * Credentials from a `user:password` userinfo or a bare token, for doors whose wire carries them
 * as text (a line-based door's `AUTH` command, a URL): `Basic` for `user:password`, else `Bearer`.
 */
export function authorizationOf(secret: string): string | undefined {
  if (secret === "") return undefined;
  const colon = secret.indexOf(":");
  return colon === -1 ? `Bearer ${secret}` : `Basic ${Buffer.from(secret, "utf8").toString("base64")}`;
}
