/**
 * Browser checks (docs/security.md): which `Host` values name this router (against DNS
 * rebinding), and which `Origin`s may write.
 */
import { isIP } from "node:net";

/** The host name of a `Host` header, lowercased, without port or IPv6 brackets. */
function hostName(host: string): string {
  if (host.startsWith("[")) {
    const end = host.indexOf("]");
    return end === -1 ? host : host.slice(1, end);
  }
  const colon = host.indexOf(":");
  return (colon === -1 ? host : host.slice(0, colon)).toLowerCase();
}

/**
 * True when `host` (a `Host` header) names this router: an IP literal, `localhost`, or one of
 * `allowed` (configured names, lowercase). A rebinding page reaches the router under its own
 * domain name, which is none of these.
 */
export function isAllowedHost(host: string | undefined, allowed: ReadonlySet<string>): boolean {
  if (host === undefined || host === "") return false;
  const name = hostName(host);
  return isIP(name) !== 0 || name === "localhost" || allowed.has(name);
}

/**
 * True when a browser on `origin` may write: `origin` is listed in `allowedOrigins` (`*` lists
 * every origin), or it is the router's own origin (`<scheme>://<Host>`) under a `Host` that
 * names the router.
 */
export function originAllowed(
  origin: string,
  host: string | undefined,
  scheme: "http" | "https",
  allowedOrigins: ReadonlySet<string>,
  allowedHosts: ReadonlySet<string>,
): boolean {
  const o = origin.toLowerCase();
  if (allowedOrigins.has(o) || allowedOrigins.has("*")) return true;
  return host !== undefined && o === `${scheme}://${host.toLowerCase()}` && isAllowedHost(host, allowedHosts);
}
