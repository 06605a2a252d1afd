/**
 * A GET body as a list: an opening, the entries with a separator between them, a closing. Both
 * ways of writing it out, one string (`layoutBody`) or a stream of chunks (`streamLayout`), go
 * through this one description, so a streamed answer has exactly the bytes of a buffered one.
 */
import { Slice } from "../core/slices.js";

/** A rendered HTTP response body with its content type. */
export interface Rendered {
  readonly contentType: string | undefined;
  readonly body: string;
}

/** A rendered body as a list of entries (what a codec makes of the replies of a GET). */
export interface Layout {
  readonly contentType: string | undefined;
  /** Text before the first entry. */
  readonly open: string;
  /** Text between two entries. */
  readonly separator: string;
  /** Text after the last entry. */
  readonly close: string;
  /** The whole body when there is no entry at all (default: `open` then `close`). */
  readonly empty?: string;
  /** Number of entries. */
  readonly count: number;
  /** Entry `i` (0 ≤ i < count), rendered. */
  entry(i: number): string;
}

/** Below this many entries a body is built in one go: slicing would cost more than it spares. */
const SMALL = 2048;

/** The body as one string, built in slices for a large answer (other requests run meanwhile). */
export async function layoutBody(layout: Layout): Promise<string> {
  const n = layout.count;
  if (n === 0) return layout.empty ?? layout.open + layout.close;
  const parts = new Array<string>(n);
  const slice = n > SMALL ? new Slice() : undefined;
  for (let i = 0; i < n; i++) {
    parts[i] = layout.entry(i);
    if (slice?.due()) await slice.next();
  }
  return layout.open + parts.join(layout.separator) + layout.close;
}

/** The body as one string, with its content type. */
export async function renderLayout(layout: Layout): Promise<Rendered> {
  return { contentType: layout.contentType, body: await layoutBody(layout) };
}

/** Where `streamLayout` writes: a response, or anything that takes chunks the same way. */
export interface ChunkSink {
  /** Writes a chunk; false when the sink's buffer is full (wait for `drain`). */
  write(chunk: string): boolean;
  /** True once the sink cannot take more (the client went away). */
  readonly destroyed: boolean;
  once(event: "drain" | "close", listener: () => void): unknown;
  off(event: "drain" | "close", listener: () => void): unknown;
}

/** Characters gathered before a chunk is written: large enough that framing and syscalls are cheap. */
export const CHUNK_CHARS = 64 * 1024;

/**
 * Writes the body to `sink` in chunks of about `CHUNK_CHARS` characters, rendering each only
 * when the previous ones are taken: at most one chunk of the body is held at a time, the event
 * loop is given back every few milliseconds, and a full sink is waited for (`drain`), at most
 * `idleMs` each time. Returns false when the sink was destroyed before the end, or did not
 * drain in time (the rest is not rendered), true otherwise. Does not end the sink.
 */
export function streamLayout(layout: Layout, sink: ChunkSink, idleMs = Number.POSITIVE_INFINITY): Promise<boolean> {
  return streamLayouts(layout, noMore, sink, idleMs);
}

const noMore = (): Promise<undefined> => Promise.resolve(undefined);

/**
 * `streamLayout` for a body that comes in parts: the entries of `first`, then those of each
 * layout `more` resolves with until it resolves with undefined, as one list (the opening,
 * separators and closing of `first`). `more` is called only when everything before is written.
 */
export async function streamLayouts(
  first: Layout,
  more: () => Promise<Layout | undefined>,
  sink: ChunkSink,
  idleMs = Number.POSITIVE_INFINITY,
): Promise<boolean> {
  const slice = new Slice();
  let chunk = first.open;
  let written = 0;
  for (let layout: Layout | undefined = first; layout !== undefined; layout = await more()) {
    const n = layout.count;
    for (let i = 0; i < n; i++) {
      if (written++ > 0) chunk += first.separator;
      chunk += layout.entry(i);
      // A chunk goes out when it is full, or when the slice has run its time (what is rendered so
      // far need not wait for the next turn).
      const due = slice.due();
      if (due || chunk.length >= CHUNK_CHARS) {
        if (sink.destroyed) return false;
        const taken = sink.write(chunk);
        chunk = "";
        if (!taken && !(await drained(sink, idleMs))) return false;
        // Waiting for `drain` need not give the event loop back: a socket that took the chunk at
        // once says so on the next tick, before any timer or I/O runs. The clock decides.
        if (due || slice.over()) await slice.next();
      }
    }
  }
  if (sink.destroyed) return false;
  // Nothing was written before an empty answer: it is written whole.
  sink.write(written === 0 ? (first.empty ?? first.open + first.close) : chunk + first.close);
  return true;
}

/** Resolves true once `sink` drains, false if it closes first or `idleMs` pass. */
function drained(sink: ChunkSink, idleMs: number): Promise<boolean> {
  if (sink.destroyed) return Promise.resolve(false);
  return new Promise((resolve) => {
    const settle = (ok: boolean): void => {
      clearTimeout(timer);
      sink.off("drain", onDrain);
      sink.off("close", onClose);
      resolve(ok);
    };
    const onDrain = (): void => settle(true);
    const onClose = (): void => settle(false);
    const timer = Number.isFinite(idleMs) ? setTimeout(onClose, idleMs) : undefined;
    sink.once("drain", onDrain);
    sink.once("close", onClose);
  });
}
