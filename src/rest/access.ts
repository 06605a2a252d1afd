import type { IncomingMessage } from "node:http";
import { ZestError } from "../core/errors.js";

/** Who may read and write the admin space over HTTP. */
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

/** True for a key in the admin space (`@` and below). */
export function isAdmin(key: string): boolean {
  return key === "@" || key.startsWith("@/");
}

/** True when the request comes from this machine. */
export function isLoopback(req: IncomingMessage): boolean {
  const a = req.socket.remoteAddress ?? "";
  return a === "::1" || a.startsWith("127.") || a.startsWith("::ffff:127.");
}

/** Throws a 403 when an HTTP client may not read `key`. */
export function checkRead(perms: AdminPermissions, key: string): void {
  if (!perms.read && isAdmin(key))
    throw ZestError.forbidden("reading the admin space is disabled (--adminspace-permissions)");
}

/** Throws a 403 when this HTTP client may not write `key`. */
export function checkWrite(perms: AdminPermissions, key: string, req: IncomingMessage): void {
  if (!isAdmin(key)) return;
  if (perms.write === false)
    throw ZestError.forbidden("writing the admin space is disabled (start with --adminspace-permissions rw)");
  if (perms.write === "loopback" && !isLoopback(req)) {
    throw ZestError.forbidden(
      "admin space writes are allowed from loopback clients only (start with --adminspace-permissions rw)",
    );
  }
}
