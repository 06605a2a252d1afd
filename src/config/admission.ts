/**
 * What a volume or storage created through the admin space may reach: files only under
 * `data_dir` or `storage_manager.allowed_paths`, hosts only in `storage_manager.allowed_hosts`
 * (by default the hosts of the volumes in the configuration file). See docs/configuration.md.
 */
import { lstatSync, realpathSync } from "node:fs";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { ZestError } from "../core/errors.js";

/** Schemes whose URLs name a file; their path part is checked like a `path` option. */
const FILE_SCHEMES = new Set(["sqlite:", "sqlite3:", "file:"]);
/** Schemes whose URLs make the router connect somewhere. */
const NET_SCHEMES = new Set(["http:", "https:", "nats:", "tls:", "ws:", "wss:"]);
/** Default ports, so `host` and `host:port` entries both match a URL without a port. */
const DEFAULT_PORT: Readonly<Record<string, string>> = {
  "http:": "80",
  "https:": "443",
  "ws:": "80",
  "wss:": "443",
  "nats:": "4222",
  "tls:": "4222",
};
/** Option names that hold a file or directory. */
const FILE_KEY = /(^|_)(path|dir|file|filename)$/i;
/** Options only the configuration file may set. */
const CONFIG_FILE_ONLY = ["adopt_existing"];

/** Where run-time volumes may reach. */
export interface AdmissionPolicy {
  /** Directories files may live in (`data_dir` and `allowed_paths`), as given. */
  readonly roots: readonly string[];
  /** `host` or `host:port` entries, lower case. */
  readonly hosts: ReadonlySet<string>;
}

/** The policy of a router: its roots and hosts (the configured volumes' hosts by default). */
export function admissionPolicy(opts: {
  dataDir?: string;
  allowedPaths?: readonly string[];
  allowedHosts?: readonly string[];
  configuredVolumes: Iterable<unknown>;
}): AdmissionPolicy {
  const roots = [...(opts.dataDir !== undefined ? [opts.dataDir] : []), ...(opts.allowedPaths ?? [])];
  const hosts = new Set<string>();
  if (opts.allowedHosts) for (const h of opts.allowedHosts) hosts.add(h.toLowerCase());
  else
    for (const v of opts.configuredVolumes)
      for (const u of urlsIn(v)) if (NET_SCHEMES.has(u.protocol)) hosts.add(hostPort(u));
  return { roots, hosts };
}

/**
 * Checks the options of a volume or storage written through the admin space; throws a
 * `forbidden` ZestError with the reason. Values of the wrong type are left to the driver (400).
 */
export function admitRuntimeOptions(options: unknown, what: string, policy: AdmissionPolicy): void {
  if (typeof options !== "object" || options === null) return;
  for (const key of CONFIG_FILE_ONLY) {
    if (Object.hasOwn(options, key))
      throw ZestError.forbidden(
        `${what}: \`${key}\` is honoured only from the configuration file, not from the admin space`,
      );
  }
  for (const [key, value] of Object.entries(options)) {
    for (const text of strings(value)) {
      const url = parseUrl(text);
      if (url && FILE_SCHEMES.has(url.protocol))
        admitFile(decodeFileUrl(url, text, what), `\`${key}\` of ${what}`, policy);
      else if (url && NET_SCHEMES.has(url.protocol)) admitHost(url, `\`${key}\` of ${what}`, policy);
      else if (FILE_KEY.test(key)) admitFile(text, `\`${key}\` of ${what}`, policy);
    }
  }
}

/** `value` as strings: itself, the items of a list, or the parts of a comma-separated list of URLs. */
function strings(value: unknown): string[] {
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === "string");
  if (typeof value !== "string") return [];
  return value.includes(",") && /^[a-z][a-z0-9+.-]*:\/\//i.test(value.trim())
    ? value.split(",").map((s) => s.trim())
    : [value];
}

function urlsIn(value: unknown): URL[] {
  if (typeof value !== "object" || value === null) return [];
  const out: URL[] = [];
  for (const v of Object.values(value)) {
    if (typeof v === "object" && v !== null && !Array.isArray(v)) out.push(...urlsIn(v));
    else
      for (const s of strings(v)) {
        const u = parseUrl(s);
        if (u) out.push(u);
      }
  }
  return out;
}

function parseUrl(text: string): URL | undefined {
  if (!/^[a-z][a-z0-9+.-]*:/i.test(text)) return undefined;
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}

function hostPort(u: URL): string {
  return `${u.hostname.toLowerCase()}:${u.port || DEFAULT_PORT[u.protocol] || ""}`;
}

function admitHost(u: URL, what: string, policy: AdmissionPolicy): void {
  const host = u.hostname.toLowerCase();
  if (policy.hosts.has(host) || policy.hosts.has(hostPort(u))) return;
  const allowed = policy.hosts.size > 0 ? `allowed: ${[...policy.hosts].join(", ")}` : "no host is allowed";
  throw ZestError.forbidden(`${what}: host ${hostPort(u)} is not in storage_manager.allowed_hosts (${allowed})`);
}

function decodeFileUrl(u: URL, text: string, what: string): string {
  if (u.hostname !== "" && u.hostname !== "localhost")
    throw ZestError.forbidden(`${what}: a file URL must not name a host (got "${text}")`);
  try {
    return decodeURIComponent(u.pathname);
  } catch {
    throw ZestError.badRequest(`${what}: not a valid URL (got "${text}")`);
  }
}

/**
 * A file is admitted when, once every existing part is resolved (symbolic links included), it
 * lies inside one of the roots, themselves resolved. A `..` part is refused outright.
 */
function admitFile(path: string, what: string, policy: AdmissionPolicy): void {
  if (path.split(/[\\/]/).includes("..")) throw ZestError.forbidden(`${what}: "${path}" must not contain ".."`);
  if (policy.roots.length === 0) {
    throw ZestError.forbidden(
      `${what}: files are allowed only under data_dir or storage_manager.allowed_paths, and neither is configured`,
    );
  }
  const real = realPathOf(resolve(path), what);
  for (const root of policy.roots) {
    const r = realPathOf(resolve(root), what);
    const rel = relative(r, real);
    if (rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel))) return;
  }
  throw ZestError.forbidden(
    `${what}: "${path}" is outside data_dir and storage_manager.allowed_paths (${policy.roots.join(", ")})`,
  );
}

/** `path` with its longest existing prefix resolved through symbolic links. */
function realPathOf(path: string, what: string): string {
  let head = path;
  const tail: string[] = [];
  while (!present(head)) {
    const parent = dirname(head);
    if (parent === head) break;
    tail.unshift(basename(head));
    head = parent;
  }
  let real: string;
  try {
    real = realpathSync(head);
  } catch {
    // A dangling symbolic link: opening it would create its target, wherever that is.
    throw ZestError.forbidden(`${what}: "${head}" is a symbolic link that cannot be resolved`);
  }
  return tail.length > 0 ? join(real, ...tail) : real;
}

/** True when something (a file, a directory, a link even dangling) is at `path`. */
function present(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}
