/**
 * Who may read and write the admin space (`@/...`), the same rule on every front door
 * (docs/security.md): reads as configured, writes from loopback clients by default.
 */
import { ZestError } from "../core/errors.js";

/** Who may read and write the admin space from a front door. */
export interface AdminPermissions {
  readonly read: boolean;
  /** `loopback`: only clients on this machine (the default). */
  readonly write: boolean | "loopback";
}

/** The default: anyone may read the admin space, only loopback clients may change it. */
export const DEFAULT_ADMIN_PERMISSIONS: AdminPermissions = { read: true, write: "loopback" };

/** Parses `--adminspace-permissions` (`r`, `w`, `rw`, `none`). */
export function parseAdminPermissions(s: string): AdminPermissions {
  switch (s.trim().toLowerCase()) {
    case "r":
      return { read: true, write: false };
    case "w":
      return { read: false, write: true };
    case "rw":
      return { read: true, write: true };
    case "none":
      return { read: false, write: false };
    default:
      throw ZestError.badRequest(`invalid admin space permissions "${s}": use r, w, rw or none`);
  }
}

/** True for a key (or key expression) in the admin space (`@` and below). */
export function isAdminKey(key: string): boolean {
  return key === "@" || key.startsWith("@/");
}

/** True when a client on `loopback` (or not) may write the admin space. */
export function mayWriteAdmin(perms: AdminPermissions, loopback: boolean): boolean {
  return perms.write === true || (perms.write === "loopback" && loopback);
}

/** Throws a `forbidden` ZestError when clients may not read `key`. */
export function checkAdminRead(perms: AdminPermissions, key: string): void {
  if (!perms.read && isAdminKey(key))
    throw ZestError.forbidden("reading the admin space is disabled (--adminspace-permissions)");
}

/** Throws a `forbidden` ZestError when a client (on `loopback` or not) may not write `key`. */
export function checkAdminWrite(perms: AdminPermissions, key: string, loopback: boolean): void {
  if (!isAdminKey(key)) return;
  if (perms.write === false)
    throw ZestError.forbidden("writing the admin space is disabled (start with --adminspace-permissions rw)");
  if (perms.write === "loopback" && !loopback) {
    throw ZestError.forbidden(
      "admin space writes are allowed from loopback clients only (start with --adminspace-permissions rw)",
    );
  }
}
