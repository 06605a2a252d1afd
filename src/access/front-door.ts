/**
 * The front-door contract (docs/adding-a-front-door.md). A front door turns its wire into
 * Session calls and zest's errors into its own wire; everything that is policy it asks the
 * `EdgePolicy`. A door is registered, not wired: a descriptor in the list of doors
 * (`builtinDoors` in `src/zest-config.ts`), the way a volume driver is one entry in the list of drivers.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { z } from "zod";
import type { Logger } from "../core/log.js";
import type { Connectivity } from "../core/ports.js";
import type { Session } from "../core/session.js";
import type { EdgePolicy } from "./edge-policy.js";

/** Counts a door reports for the metrics (`zest_door_*{door}`), read on scrape. */
export interface DoorCounters {
  /** Connections open now. */
  readonly connections: number;
  /** Connections refused by the caps so far. */
  readonly refused: number;
  /** Requests (or operations) handled so far, when the door counts them. */
  readonly requests?: number;
}

/** What an SSE hub counts (the metrics' `zest_sse_*`). */
export interface SseCounters {
  readonly streams: number;
  readonly logEntries: number;
  readonly opened: number;
  readonly dropped: number;
  readonly resumed: number;
  readonly resets: number;
  readonly eventsSent: number;
  readonly bytesSent: number;
}

/** What a long-poll hub counts (the metrics' `zest_long_polls*`). */
export interface LongPollCounters {
  readonly waiting: number;
  readonly parked: number;
  readonly woken: number;
  readonly refused: number;
}

/** The HTTP request series of the router's metrics, for doors that answer HTTP requests. */
export interface HttpRequestMetrics {
  /** Counts a request answered later, when its response closes. */
  track(req: IncomingMessage, res: ServerResponse): void;
  /** Counts a request answered now; `start` is `performance.now()` taken when it came. */
  served(req: IncomingMessage, res: ServerResponse, start: number): void;
  /** Registers what is read on scrape: bytes written to HTTP clients, and the SSE hub's counters. */
  reportHttp(source: {
    /** The REST variant served, the `variant` label of the HTTP series. */
    readonly variant: string;
    responseBytes(): number;
    sse?(): SseCounters;
    longPoll?(): LongPollCounters | undefined;
  }): void;
}

/** What a door is handed when it starts. */
export interface DoorContext<Config> {
  /** Its config section (`plugins.<name>`), parsed once with the door's schema: defaults applied. */
  readonly config: Config;
  /** The router's id (hex). */
  readonly zid: string;
  /** zest's version, for what a door tells its clients (the OpenAPI document's `info.version`). */
  readonly version: string;
  /** A logger already tagged with the door's name. */
  readonly logger: Logger;
  /** The shared edge policy: access control, admin permissions, TLS, protected mode, caps. */
  readonly edge: EdgePolicy;
  /** The routers this one reaches, and when that changes. */
  readonly connectivity: Connectivity;
  /** The router's HTTP request metrics (for a door that answers HTTP requests). */
  readonly httpMetrics: HttpRequestMetrics;
  /** A new session on the router, named `name` in logs (one per door, or one per connection). */
  openSession(name: string): Session;
}

/** A running door. */
export interface FrontDoorInstance {
  /** Where clients reach it: URLs such as `http://127.0.0.1:8000`, `ws://127.0.0.1:10000`. */
  locators(): readonly string[];
  /** What the admin space shows under the door's plugin status (JSON-safe). */
  status(): Record<string, unknown>;
  /** Counts for the metrics. */
  counters(): DoorCounters;
  /**
   * The sessions of clients and peers this door holds, as the admin space lists them beside the
   * fabric's routers (`peer`, `whatami`, and what else the door knows), for doors that have them.
   */
  sessions?(): ReadonlyArray<Record<string, unknown>>;
  /** Stops listening and closes every connection. */
  close(): Promise<void>;
}

/**
 * A front door's descriptor. `name` is also where its config lives: `plugins.<name>`. `schema`
 * checks that section (closed objects, defaults in the schema); `start` gets the parsed section
 * and answers the running door, or undefined when the config leaves the door off.
 */
export interface FrontDoor<Name extends string = string, Schema extends z.ZodType = z.ZodType> {
  readonly name: Name;
  /** How logs, the banner and errors name it ("REST gateway"). */
  readonly title: string;
  /** The schema of `plugins.<name>`. */
  readonly schema: Schema;
  /** Its command-line flags, each setting one key (`--remote-api-port` sets `plugins.remote_api.websocket_port`). */
  readonly flags?: readonly DoorFlag[];
  /**
   * True for a door whose schema is an object of root sections rather than `plugins.<name>`:
   * the zenoh door keeps zenohd's names (`listen`, `scouting`) at the root of the configuration.
   */
  readonly atRoot?: boolean;
  start(ctx: DoorContext<z.output<Schema>>): Promise<FrontDoorInstance | undefined>;
}

/**
 * A command-line flag of a door (docs/adding-a-front-door.md, "Flags"): the door says how it reads
 * and where its value goes, and the command line only registers it and hands the value on.
 */
export interface DoorFlag {
  /**
   * The flag as the help writes it, without its value: `--remote-api-port`, `-l, --listen`, or
   * `--no-multicast-scouting` for a flag that turns something off (it takes no value).
   */
  readonly flag: string;
  /** The name of its value in the help (`port`); absent for a `--no-...` flag. */
  readonly value?: string;
  readonly description: string;
  /** The values it may take, checked by the command line and listed in the help. */
  readonly choices?: readonly string[];
  /** Given more than once, every value is kept (`-l a -l b`), and `parse` gets the list. */
  readonly repeatable?: boolean;
  /**
   * Where the value goes, from the root of the configuration: `["plugins", "remote_api",
   * "websocket_port"]`, or a root section of zenohd's (`["listen", "endpoints"]`).
   */
  readonly path: readonly string[];
  /**
   * The config value for what was given: the text, the list of texts of a repeatable flag, or
   * false for a `--no-...` flag. Throws an Error whose message the user reads (exit 2). Absent:
   * the value as given (the schema checks it).
   */
  parse?(given: string | readonly string[] | false): unknown;
}

/** Any door, whatever its name and schema (for lists of doors; `start` is a method, so it is bivariant). */
export type AnyFrontDoor = FrontDoor<string, z.ZodType>;
