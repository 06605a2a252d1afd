/**
 * The text half of the credential filter (the option-name half is in config/redact.ts): user
 * information in URLs never leaves the router, in replies or in logs.
 */

/** What a hidden value is replaced by. */
export const REDACTED = "***";

/** `scheme://user:pass@host` → `scheme://***@host`, anywhere in a text (error messages, URLs). */
export function redactText(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@"']*@/gi, `$1${REDACTED}@`);
}

/**
 * The fields of a log line with URL user information hidden in every string, down to a few
 * levels of nesting (log fields are small; deeper values are left as they are).
 */
export function redactLogFields(fields: Record<string, unknown>): Record<string, unknown> {
  return scrub(fields, 0) as Record<string, unknown>;
}

function scrub(value: unknown, depth: number): unknown {
  if (typeof value === "string") return redactText(value);
  if (depth >= 4 || typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) return value.map((v) => scrub(v, depth + 1));
  if (value instanceof Error) {
    const err = value;
    err.message = redactText(err.message);
    return err;
  }
  if (Object.getPrototypeOf(value) !== Object.prototype && Object.getPrototypeOf(value) !== null) return value;
  const out = Object.create(null) as Record<string, unknown>;
  for (const [k, v] of Object.entries(value)) out[k] = scrub(v, depth + 1);
  return out;
}
