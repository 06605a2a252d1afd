/**
 * Readers for volume and storage options, shared by every driver: each returns the typed value
 * or undefined when the option is absent, and throws a `bad_input` ZestError naming the option
 * and where it was given otherwise.
 */
import { ZestError } from "../core/errors.js";

/** Options as a config gives them. */
export type RawOptions = Readonly<Record<string, unknown>>;

/** A string option. */
export function stringOption(options: RawOptions, key: string, where: string): string | undefined {
  const v = options[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string") throw ZestError.badRequest(`\`${key}\` of ${where} must be a string`);
  return v;
}

/** A boolean option (`true`/`false`, or those words as strings, as Variant B's properties are). */
export function booleanOption(options: RawOptions, key: string, where: string): boolean | undefined {
  const v = options[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v === "boolean") return v;
  if (v === "true" || v === "false") return v === "true";
  throw ZestError.badRequest(`\`${key}\` of ${where} must be true or false`);
}

/** A positive integer option (a number, or its decimal string). */
export function positiveIntOption(options: RawOptions, key: string, where: string): number | undefined {
  const v = options[key];
  if (v === undefined || v === null) return undefined;
  const n = typeof v === "string" ? Number(v) : v;
  if (typeof n !== "number" || !Number.isInteger(n) || n <= 0)
    throw ZestError.badRequest(`\`${key}\` of ${where} must be a positive integer`);
  return n;
}

/** A nested object option (`private: { ... }`). */
export function objectOption(options: RawOptions, key: string, where: string): RawOptions | undefined {
  const v = options[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "object" || Array.isArray(v)) throw ZestError.badRequest(`\`${key}\` of ${where} must be an object`);
  return v as RawOptions;
}

/**
 * A string option taking one of a few words, case-insensitively: `choices` maps each accepted
 * word (lowercase) to its meaning; anything else is a `bad_input` listing `expected`.
 */
export function choiceOption<T>(
  options: RawOptions,
  key: string,
  where: string,
  choices: ReadonlyMap<string, T>,
  expected: string,
): T | undefined {
  const v = stringOption(options, key, where);
  if (v === undefined) return undefined;
  const meaning = choices.get(v.toLowerCase());
  if (meaning === undefined) throw ZestError.badRequest(`\`${key}\` of ${where} must be ${expected} (got "${v}")`);
  return meaning;
}

/** `username`/`password`, given directly or under `private` (as zenoh's volume configs hide them). */
export function credentialsOption(
  options: RawOptions,
  where: string,
): { username: string; password: string } | undefined {
  const priv = objectOption(options, "private", where);
  const username =
    stringOption(options, "username", where) ?? (priv && stringOption(priv, "username", `${where} (private)`));
  const password =
    stringOption(options, "password", where) ?? (priv && stringOption(priv, "password", `${where} (private)`));
  if (username === undefined && password === undefined) return undefined;
  if (username === undefined) throw ZestError.badRequest(`${where}: \`password\` is given without \`username\``);
  return { username, password: password ?? "" };
}
