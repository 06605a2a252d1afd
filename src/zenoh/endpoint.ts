/**
 * zenoh endpoints (docs/zenoh-protocol.md): `<proto>/<ipv4>:<port>`, `<proto>/[<ipv6>]:<port>`
 * and `<proto>/localhost:<port>` for the link protocols `tcp`, `udp` (unicast) and `tls`, as
 * zenohd's `listen.endpoints` and `-l` take them. Metadata after `?` and configuration after `#`
 * are refused rather than ignored.
 */
import { isIP } from "node:net";
import { ZestError } from "../core/errors.js";

/** The link protocols the door listens on. */
export const LINK_PROTOCOLS = ["tcp", "udp", "tls"] as const;
export type LinkProtocol = (typeof LINK_PROTOCOLS)[number];

/** A parsed endpoint. */
export interface Endpoint {
  protocol: LinkProtocol;
  /** An IP address (IPv6 without brackets). */
  host: string;
  /** 0: any free port. */
  port: number;
}

/** The longest endpoint string accepted. */
const MAX_ENDPOINT = 256;

/** The default port of zenoh's TCP listener. */
export const DEFAULT_ZENOH_PORT = 7447;

export function parseEndpoint(text: string): Endpoint {
  if (text.length > MAX_ENDPOINT) throw ZestError.badRequest(`endpoint longer than ${MAX_ENDPOINT} characters`);
  const slash = text.indexOf("/");
  if (slash < 0) throw ZestError.badRequest(`endpoint "${text}" has no protocol: expected tcp/<ip>:<port>`);
  const protocol = LINK_PROTOCOLS.find((p) => p === text.slice(0, slash));
  if (protocol === undefined)
    throw ZestError.badRequest(
      `endpoint "${text}": protocol "${text.slice(0, slash)}" is not supported (${LINK_PROTOCOLS.join(", ")})`,
    );
  const address = text.slice(slash + 1);
  if (/[?#]/.test(address))
    throw ZestError.badRequest(`endpoint "${text}": metadata and configuration are not supported`);
  let host: string;
  let portText: string;
  if (address.startsWith("[")) {
    const close = address.indexOf("]");
    if (close < 0 || address[close + 1] !== ":")
      throw ZestError.badRequest(`endpoint "${text}": expected ${protocol}/[<ipv6>]:<port>`);
    host = address.slice(1, close);
    portText = address.slice(close + 2);
    if (isIP(host) !== 6) throw ZestError.badRequest(`endpoint "${text}": "${host}" is not an IPv6 address`);
  } else {
    const colon = address.lastIndexOf(":");
    if (colon < 0) throw ZestError.badRequest(`endpoint "${text}": expected ${protocol}/<ip>:<port>`);
    host = address.slice(0, colon);
    portText = address.slice(colon + 1);
    if (host === "localhost") host = "127.0.0.1";
    if (isIP(host) !== 4) throw ZestError.badRequest(`endpoint "${text}": "${host}" is not an IPv4 address`);
  }
  if (!/^\d{1,5}$/.test(portText) || Number(portText) > 65_535)
    throw ZestError.badRequest(`endpoint "${text}": "${portText}" is not a port (0 to 65535)`);
  return { protocol, host, port: Number(portText) };
}

/** The locator form of an endpoint (`tcp/127.0.0.1:7447`, `udp/[::1]:7447`). */
export function formatEndpoint(e: Endpoint): string {
  return `${e.protocol}/${e.host.includes(":") ? `[${e.host}]` : e.host}:${e.port}`;
}

/** True for loopback addresses (protected mode keeps the listener on them). */
export function isLoopback(host: string): boolean {
  return host === "::1" || host.startsWith("127.");
}
