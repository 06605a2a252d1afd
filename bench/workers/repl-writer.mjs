// Writes for the `replication` benchmark (suites/replication.ts), as a plugin loaded by
// `zest -P bench/workers/repl-writer.mjs`: HTTP PUTs from the bench process would take minutes for
// 100,000 keys, so the keys are written from inside the router through `session.put` and
// `session.delete`, what the REST gateway calls. A PUT on `bench/repl/cmd` with a JSON body
// starts one job: `{"op":"fill","n":N}` puts `r/k/0` .. `r/k/<N-1>` (100-byte values);
// `{"op":"churn","change":C,"delete":D}` changes the first C keys and deletes the next D. The
// queryable `bench/repl/state` answers `{"jobs":<finished jobs>,"seconds":<last job's time>}`.

const FILLER = "v".repeat(100);
/** Writes in flight at once: the fabric batches them, so a fill runs at the router's pace. */
const WINDOW = 500;

/** @param {{ session: import("../../dist/core/session.js").Session }} ctx */
export default function replWriter({ session }) {
  let jobs = 0;
  let seconds = 0;
  let running = Promise.resolve();

  async function windowed(count, write) {
    const t0 = performance.now();
    let pending = [];
    for (let i = 0; i < count; i++) {
      pending.push(write(i));
      if (pending.length >= WINDOW) {
        await Promise.all(pending);
        pending = [];
      }
    }
    await Promise.all(pending);
    seconds = (performance.now() - t0) / 1000;
    jobs++;
  }

  const sub = session.declareSubscriber("bench/repl/cmd", (sample) => {
    const job = JSON.parse(sample.payload.toString("utf8"));
    running = running.then(() =>
      job.op === "fill"
        ? windowed(job.n, (i) =>
            session.put(`r/k/${i}`, String(i) + FILLER.slice(String(i).length), { encoding: "text/plain" }),
          )
        : windowed(job.change + job.delete, (i) =>
            i < job.change
              ? session.put(`r/k/${i}`, `changed ${i}`, { encoding: "text/plain" })
              : session.delete(`r/k/${i}`),
          ),
    );
  });
  const state = session.declareQueryable("bench/repl/state", (q) => {
    q.reply("bench/repl/state", JSON.stringify({ jobs, seconds }), { encoding: "application/json" });
  });
  return {
    close: () => {
      sub.undeclare();
      state.undeclare();
    },
  };
}
