/**
 * Volume and storage options, described by their driver: a closed zod schema per level (volume,
 * storage), with defaults, and what the options make the router reach (files, hosts), so the
 * storage manager can refuse a misspelled option and check run-time volumes against
 * `allowed_paths`/`allowed_hosts` without knowing any driver. See docs/adding-a-volume.md.
 */
import { closest, distance } from "fastest-levenshtein";
import { z } from "zod";
import type { HostRef, Reach } from "../config/admission.js";
import { describeIssue } from "../config/closed-schema.js";
import { ZestError } from "../core/errors.js";

/** Options as a config gives them. */
export type RawOptions = Readonly<Record<string, unknown>>;

export type { HostRef, Reach } from "../config/admission.js";

/** `options` as they are, typed (lets TypeScript infer a driver's option types from its schemas). */
export function driverOptions<V extends object, S extends object>(options: DriverOptions<V, S>): DriverOptions<V, S> {
  return options;
}

/** One level of a driver's options (a volume's, or a storage's). */
export interface OptionsSpec<T extends object = object> {
  /** A closed object schema: an unknown key is refused with the closest known one. */
  readonly schema: z.ZodType<T>;
  /** The files and hosts these (parsed) options make the router reach; nothing when absent. */
  reaches?(options: NoInfer<T>): Reach;
  /** Options honoured only from the configuration file, never from the admin space. */
  readonly configFileOnly?: readonly string[];
}

/** The options a volume driver takes, on its volumes and on their storages. */
export interface DriverOptions<V extends object = object, S extends object = object> {
  readonly volume: OptionsSpec<V>;
  readonly storage: OptionsSpec<S>;
}

/**
 * The keys of a volume's config that the storage manager reads (`backend`, Variant B's `lib`):
 * every volume schema accepts them, so a driver can parse a volume's config as it is given.
 */
export const VOLUME_KEYS = {
  backend: z.string().optional().describe("driver name or alias (default: the volume's name)"),
  lib: z.string().optional().describe("Variant B's name for `backend` (`sqlite3`, `influxdb`...)"),
};

/** The label of an option's type in the configuration reference (`docs/configuration.md`). */
const TYPE_LABELS = new WeakMap<z.ZodType, string>();

/** The type label the option readers below gave `schema`, if any. */
export function optionType(schema: z.ZodType): string | undefined {
  return TYPE_LABELS.get(schema);
}

/** `schema` with its description and type label (in that order: `describe` makes a new schema). */
function labelled<T extends z.ZodType>(schema: T, label: string, description: string): T {
  const described = schema.describe(description) as T;
  TYPE_LABELS.set(described, label);
  return described;
}

/**
 * A closed object of options. An unknown key is an issue whose message is a hint: the closest
 * known key when it is close enough to be a typo (`did you mean "path"?`), otherwise the known
 * keys; `parseOptions` words it as `unknown option "pth" of volume v (did you mean "path"?)`.
 */
export function optionsObject<T extends z.ZodRawShape>(shape: T) {
  const known = Object.keys(shape);
  return z.strictObject(shape, {
    error: (iss) => (iss.code === "unrecognized_keys" ? unknownKeyHint(String(iss.keys[0]), known) : undefined),
  });
}

/** The hint for an unknown key `key` among `known`. */
function unknownKeyHint(key: string, known: readonly string[]): string {
  if (known.length === 0) return "this level takes no option";
  const near = closest(key, known as string[]);
  // Within half the key's length (at least 2 edits) it reads as a typo; further, it is a guess.
  if (distance(key, near) <= Math.max(2, Math.ceil(key.length / 2))) return `did you mean "${near}"?`;
  return `known options: ${known.join(", ")}`;
}

/** The longest string option (a path, a URL, a name): longer is refused before any check. */
export const MAX_OPTION_LENGTH = 4096;
/** The most items a list option holds. */
export const MAX_OPTION_ITEMS = 64;

/**
 * A string option, at most `MAX_OPTION_LENGTH` long; `check` (optional) refuses some strings
 * with the reason it returns.
 */
export function stringOpt(description: string, check?: (v: string) => string | undefined) {
  const base = z
    .string({
      error: (iss) => (iss.input === undefined ? "is required" : `must be a string (got ${shown(iss.input)})`),
    })
    .max(MAX_OPTION_LENGTH, { error: `must be at most ${MAX_OPTION_LENGTH} characters long` });
  return labelled(
    check
      ? base.superRefine((v, ctx) => {
          if (v.length > MAX_OPTION_LENGTH) return; // already refused
          const why = check(v);
          if (why !== undefined) ctx.addIssue({ code: "custom", message: why });
        })
      : base,
    "string",
    description,
  );
}

/** A boolean option: `true`/`false`, or those words as strings (Variant B's properties are strings). */
export function booleanOpt(description: string) {
  return labelled(
    z
      .union([z.boolean(), z.enum(["true", "false"])], {
        error: (iss) => `must be true or false (got ${shown(iss.input)})`,
      })
      .transform((v) => v === true || v === "true"),
    "boolean",
    description,
  );
}

/** A whole number option from `min` to `max` (a number, or its decimal string). */
export function intOpt(description: string, min: number, max: number = Number.MAX_SAFE_INTEGER) {
  const range = max === Number.MAX_SAFE_INTEGER ? `a whole number of at least ${min}` : `between ${min} and ${max}`;
  const error = (iss: { input?: unknown }) => `must be ${range} (got ${shown(iss.input)})`;
  return labelled(
    z
      .union([z.number(), z.string().regex(/^\s*\d+\s*$/, { error })], { error })
      .transform((v) => Number(v))
      .pipe(z.number().int({ error }).min(min, { error }).max(max, { error })),
    "integer",
    description,
  );
}

/**
 * A word among a few, case-insensitively: `choices` maps each accepted word (lower case) to its
 * meaning; `expected` names them for the message.
 */
export function choiceOpt<T>(description: string, choices: ReadonlyMap<string, T>, expected: string) {
  return labelled(
    z.string({ error: (iss) => `must be ${expected} (got ${shown(iss.input)})` }).transform((v, ctx) => {
      const meaning = choices.get(v.toLowerCase());
      if (meaning !== undefined) return meaning;
      ctx.addIssue({ code: "custom", message: `must be ${expected} (got "${v}")` });
      return z.NEVER;
    }),
    "string",
    description,
  );
}

/**
 * A list of strings, or one comma-separated string (NATS server lists); `check` (optional)
 * refuses an item with the reason it returns.
 */
export function stringListOpt(description: string, check?: (item: string) => string | undefined) {
  const message = "must be a list of strings or a comma-separated string";
  const item = z
    .string({ error: message })
    .max(MAX_OPTION_LENGTH, { error: `must be at most ${MAX_OPTION_LENGTH} characters long` });
  return labelled(
    z.union([z.array(item), item], { error: () => message }).transform((v, ctx) => {
      const list = (typeof v === "string" ? v.split(",") : v).map((s) => s.trim()).filter((s) => s !== "");
      if (list.length === 0) ctx.addIssue({ code: "custom", message: "must not be empty" });
      if (list.length > MAX_OPTION_ITEMS) {
        ctx.addIssue({ code: "custom", message: `must hold at most ${MAX_OPTION_ITEMS} items` });
        return list;
      }
      for (const item of list) {
        const why = check?.(item);
        if (why !== undefined) ctx.addIssue({ code: "custom", message: why });
      }
      return list;
    }),
    "list of strings",
    description,
  );
}

/** `username`/`password` under `private` (as zenoh's volume configs hide them). */
export function privateCredentialsOpt(description: string) {
  return labelled(
    optionsObject({
      username: stringOpt("user name").optional(),
      password: stringOpt("password").optional(),
    }),
    "object",
    description,
  );
}

/** The credential options of a level: `username`/`password`, given directly or under `private`. */
export function credentialOpts() {
  return {
    username: stringOpt("user name (or under `private`)").optional(),
    password: stringOpt("password (or under `private`)").optional(),
    private: privateCredentialsOpt("`{ username, password }`, as zenoh's configs hide them").optional(),
  };
}

/** The credentials given by `credentialOpts` options, if any; a password without a user is a `bad_input`. */
export function credentialsOf(
  o: { username?: string; password?: string; private?: { username?: string; password?: string } },
  where: string,
): { username: string; password: string } | undefined {
  const username = o.username ?? o.private?.username;
  const password = o.password ?? o.private?.password;
  if (username === undefined && password === undefined) return undefined;
  if (username === undefined) throw ZestError.badRequest(`${where}: \`password\` is given without \`username\``);
  return { username, password: password ?? "" };
}

function shown(v: unknown): string {
  if (v === undefined) return "nothing";
  const s = JSON.stringify(v);
  return s === undefined ? typeof v : s.length > 40 ? `${s.slice(0, 40)}...` : s;
}

/**
 * Parses `raw` with a driver's schema; an unknown or bad option is a `bad_input` ZestError naming
 * it and `where` it was given (`volume v`, `sqlite storage s`). A null value counts as absent.
 */
export function parseOptions<T>(schema: z.ZodType<T>, raw: RawOptions, where: string): T {
  const given = Object.create(null) as Record<string, unknown>;
  for (const [k, v] of Object.entries(raw)) if (v !== null) given[k] = v;
  const r = schema.safeParse(given);
  if (r.success) return r.data;
  // A misspelled key first: its value's absence is then no surprise (`ur:` for a required `url:`).
  const issue = r.error.issues.find((i) => i.code === "unrecognized_keys") ?? r.error.issues[0]!;
  throw ZestError.badRequest(describeIssue(issue, [], where));
}

/** The host of `url`, with `defaultPort` when the URL names none (and the scheme has no known default). */
export function hostOf(url: URL, defaultPort = ""): HostRef {
  return { hostname: url.hostname.toLowerCase(), port: url.port || DEFAULT_PORT.get(url.protocol) || defaultPort };
}

/** Ports of the schemes whose default `URL` leaves out. */
const DEFAULT_PORT: ReadonlyMap<string, string> = new Map([
  ["http:", "80"],
  ["https:", "443"],
  ["ws:", "80"],
  ["wss:", "443"],
]);
