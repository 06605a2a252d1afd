/**
 * Where a front door listens, and listening with one-line errors (docs/adding-a-front-door.md):
 * endpoint parsing (`port`, `ip:port`, `[ipv6]:port`, `none`), protected mode (loopback only
 * when nothing guards the door) and `listen()` that rejects with a reason a user can act on.
 */
import type { AddressInfo, Server } from "node:net";
import { isIP } from "node:net";
import { z } from "zod";
import { errorMessage, ZestError } from "../core/errors.js";
import type { Logger } from "../core/log.js";

/** An interface and port to listen on; no host: the door's default (see `protectedBind`). */
export interface Endpoint {
  readonly host?: string;
  readonly port: number;
}

/** Longest endpoint text accepted (an IPv6 literal with brackets and port fits easily). */
const MAX_ENDPOINT = 256;

/**
 * Parses `port`, `ip:port` or `[ipv6]:port` (a number is a port). `none` (any case) gives
 * undefined when `allowNone`. Throws a `bad_input` ZestError naming `what` for anything else.
 */
export function parseEndpoint(value: number | string, what: string, allowNone = false): Endpoint | undefined {
  const s = String(value).trim();
  const expected = `expected a port, ip:port${allowNone ? ", or none" : ""}`;
  if (s.length > MAX_ENDPOINT) throw ZestError.badRequest(`invalid ${what}: longer than ${MAX_ENDPOINT} characters`);
  if (allowNone && s.toLowerCase() === "none") return undefined;
  const colon = s.lastIndexOf(":");
  const rawHost = colon === -1 ? undefined : s.slice(0, colon);
  const host = rawHost?.startsWith("[") && rawHost.endsWith("]") ? rawHost.slice(1, -1) : rawHost;
  const portText = colon === -1 ? s : s.slice(colon + 1);
  const port = Number(portText);
  if (!/^\d{1,5}$/.test(portText) || port > 65535) throw ZestError.badRequest(`invalid ${what} "${s}": ${expected}`);
  if (host !== undefined && (host === "" || /[\s/]/.test(host) || (host.includes(":") && isIP(host) !== 6)))
    throw ZestError.badRequest(`invalid ${what} "${s}": ${expected}`);
  return host === undefined ? { port } : { host, port };
}

/**
 * The config schema of an endpoint (`port`, `ip:port`, `[ipv6]:port`, and `none` when
 * `allowNone`): checked by `parseEndpoint`, so a door's start cannot meet a bad one.
 */
export function endpointSchema(what: string, allowNone = false) {
  return z.union([z.number().int().min(0).max(65535), z.string().min(1).max(MAX_ENDPOINT)]).superRefine((v, ctx) => {
    if (typeof v === "number") return;
    try {
      parseEndpoint(v, what, allowNone);
    } catch (err) {
      ctx.addIssue({ code: "custom", message: errorMessage(err) });
    }
  });
}

/** True for `localhost` and loopback IP literals. */
export function isLoopbackHost(host: string): boolean {
  return host === "localhost" || host === "::1" || (isIP(host) === 4 && host.startsWith("127."));
}

/**
 * Protected mode, as Redis does it, for every door: with access control off and no interface
 * given, a door listens on loopback only and says so in one line (naming `openHint`, how to
 * open it); an explicit non-loopback interface without access control starts with a warning.
 * With access control on, a port alone binds every interface. Returns the interface to bind.
 */
export function protectedBind(
  door: { readonly title: string; readonly openHint: string },
  endpoint: Endpoint,
  accessEnabled: boolean,
  logger: Logger,
): string | undefined {
  const { host, port } = endpoint;
  if (accessEnabled) return host;
  if (host === undefined) {
    logger.warn(
      { host: "127.0.0.1", port },
      `protected mode: no access control is configured, so the ${door.title} listens on 127.0.0.1 only; to serve other machines configure access_control, or start with ${door.openHint}`,
    );
    return "127.0.0.1";
  }
  if (!isLoopbackHost(host)) {
    logger.warn(
      { host, port },
      `the ${door.title} listens on ${host} without access control: anyone who can reach it may read and write every key (configure access_control)`,
    );
  }
  return host;
}

/**
 * Starts `server` listening on `port` and `host` (undefined: every interface); rejects with a
 * one-line reason naming the address and the door (`title`) when it cannot, e.g. the port is
 * taken.
 */
export function listen(server: Server, port: number, host: string | undefined, title: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => {
      const where = `${host === undefined ? "*" : host.includes(":") ? `[${host}]` : host}:${port}`;
      reject(
        new Error(
          err.code === "EADDRINUSE"
            ? `cannot listen on ${where} (${title}): the port is already in use`
            : `cannot listen on ${where} (${title}): ${err.message}`,
        ),
      );
    };
    server.once("error", onError);
    server.listen(port, host, () => {
      server.off("error", onError);
      resolve(server.address() as AddressInfo);
    });
  });
}

/** `scheme://host:port` of a bound address, `host` as given (a wildcard becomes `localhost`). */
export function urlOf(scheme: string, host: string | undefined, port: number): string {
  const h = host === undefined || host === "0.0.0.0" || host === "::" ? "localhost" : host;
  return `${scheme}://${h.includes(":") ? `[${h}]` : h}:${port}`;
}
