import { ZestError } from "../core/errors.js";

/**
 * Percent-decodes a URL path, so `demo/a%20b` names the key `demo/a b` (keys written through
 * the library API are reachable over HTTP). Malformed escapes are a 400.
 */
export function decodePath(path: string): string {
  if (!path.includes("%")) return path;
  try {
    return decodeURIComponent(path);
  } catch {
    throw ZestError.badRequest(`malformed percent-encoding in path "${path}"`);
  }
}
