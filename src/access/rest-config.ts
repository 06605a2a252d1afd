/**
 * The security part of the REST gateway's configuration (docs/security.md): access control,
 * TLS, browser checks, connection limits, and where to listen when nothing says (protected
 * mode: loopback only unless access control is on).
 */
import type { Buffer } from "node:buffer";
import { isIP } from "node:net";
import type { Logger } from "../core/log.js";
import { AccessControl } from "./access.js";
import { REST_SECURITY_KEYS, restSecuritySchema, zodMessage } from "./schema.js";
import { loadTlsOptions } from "./tls.js";

/** What `RestServer` takes from the security configuration. */
export interface RestSecurityOptions {
  access: AccessControl;
  tls: { cert: Buffer | string; key: Buffer | string } | undefined;
  allowedOrigins: string[];
  allowedHosts: string[];
  maxConnectionsPerAddress: number | undefined;
  maxConnections: number | undefined;
  headersTimeoutMs: number | undefined;
  bodyIdleTimeoutMs: number | undefined;
  responseIdleTimeoutMs: number | undefined;
}

/**
 * Reads `access_control` and the security keys of `plugins.rest`. Throws an Error with a
 * one-line reason (the caller makes it a configuration error).
 */
export function restSecurityOptions(
  accessSection: unknown,
  rest: Readonly<Record<string, unknown>>,
): RestSecurityOptions {
  const access = AccessControl.fromConfig(accessSection);
  const picked: Record<string, unknown> = {};
  for (const k of REST_SECURITY_KEYS) if (rest[k] !== undefined) picked[k] = rest[k];
  const parsed = restSecuritySchema.safeParse(picked);
  if (!parsed.success) throw new Error(zodMessage("plugins.rest", parsed.error));
  const c = parsed.data;
  return {
    access,
    tls: c.tls && loadTlsOptions(c.tls),
    allowedOrigins: c.cors?.allowed_origins ?? [],
    allowedHosts: c.allowed_hosts ?? [],
    maxConnectionsPerAddress: c.max_connections_per_address,
    maxConnections: c.max_connections,
    headersTimeoutMs: c.headers_timeout_ms,
    bodyIdleTimeoutMs: c.body_idle_timeout_ms,
    responseIdleTimeoutMs: c.response_idle_timeout_ms,
  };
}

/** The flag that opens the gateway to the network, named in the protected-mode line. */
export const OPEN_FLAG = "--rest-http-port 0.0.0.0:8000";

function isLoopbackHost(host: string): boolean {
  return host === "localhost" || host === "::1" || (isIP(host) === 4 && host.startsWith("127."));
}

/**
 * Protected mode, as Redis does it: with no access control and no explicit interface, the
 * gateway listens on loopback only and says so in one line; an explicit non-loopback interface
 * without access control starts with a warning. Returns the interface to bind.
 */
export function protectedBind(
  host: string | undefined,
  port: number,
  access: AccessControl,
  logger: Logger,
): string | undefined {
  if (access.enabled) return host;
  if (host === undefined) {
    logger.warn(
      { host: "127.0.0.1", port },
      `protected mode: no access control is configured, so the REST gateway listens on 127.0.0.1 only; to serve other machines configure access_control, or start with ${OPEN_FLAG}`,
    );
    return "127.0.0.1";
  }
  if (!isLoopbackHost(host)) {
    logger.warn(
      { host, port },
      `the REST gateway listens on ${host} without access control: anyone who can reach it may read and write every key (configure access_control)`,
    );
  }
  return host;
}
