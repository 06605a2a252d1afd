/**
 * What a volume or storage created through the admin space may reach: files only under
 * `data_dir` or `storage_manager.allowed_paths`, hosts only in `storage_manager.allowed_hosts`
 * (by default the hosts of the volumes in the configuration file). What options reach is
 * declared by their driver (`reaches`); nothing here knows a driver, a scheme or an option
 * name. See docs/configuration.md.
 */
import { lstatSync, realpathSync } from "node:fs";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { ZestError } from "../core/errors.js";

/** A host a volume connects to: its name (lower case) and port (the scheme's default when the URL has none). */
export interface HostRef {
  readonly hostname: string;
  readonly port: string;
}

/** What a set of options makes the router reach: files it opens or creates, hosts it connects to. */
export interface Reach {
  readonly files?: readonly string[];
  readonly hosts?: readonly HostRef[];
}

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
  /** The hosts the configured volumes reach, allowed when `allowedHosts` is not given. */
  configuredHosts?: Iterable<HostRef>;
}): AdmissionPolicy {
  const roots = [...(opts.dataDir !== undefined ? [opts.dataDir] : []), ...(opts.allowedPaths ?? [])];
  const hosts = new Set<string>();
  if (opts.allowedHosts) for (const h of opts.allowedHosts) hosts.add(h.toLowerCase());
  else for (const h of opts.configuredHosts ?? []) hosts.add(hostPort(h));
  return { roots, hosts };
}

/**
 * Checks what the options of a volume or storage written through the admin space reach, as
 * their driver declares it, and refuses options only the configuration file may set (`raw`
 * are the options as written). Throws a `forbidden` ZestError with the reason.
 */
export function admitRuntimeOptions(
  raw: Readonly<Record<string, unknown>>,
  declared: { reach: Reach; configFileOnly?: readonly string[] },
  what: string,
  policy: AdmissionPolicy,
): void {
  for (const key of declared.configFileOnly ?? []) {
    if (Object.hasOwn(raw, key) && raw[key] !== undefined && raw[key] !== null)
      throw ZestError.forbidden(
        `${what}: \`${key}\` is honoured only from the configuration file, not from the admin space`,
      );
  }
  for (const file of declared.reach.files ?? []) admitFile(file, what, policy);
  for (const host of declared.reach.hosts ?? []) admitHost(host, what, policy);
}

function hostPort(h: HostRef): string {
  return h.port === "" ? h.hostname : `${h.hostname}:${h.port}`;
}

function admitHost(h: HostRef, what: string, policy: AdmissionPolicy): void {
  if (policy.hosts.has(h.hostname) || policy.hosts.has(hostPort(h))) return;
  const allowed = policy.hosts.size > 0 ? `allowed: ${[...policy.hosts].join(", ")}` : "no host is allowed";
  throw ZestError.forbidden(`${what}: host ${hostPort(h)} is not in storage_manager.allowed_hosts (${allowed})`);
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
