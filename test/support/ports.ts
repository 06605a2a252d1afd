/** Free loopback ports for servers a test starts (and, for a restart, starts again on the same port). */
import { createServer } from "node:net";

/** A TCP port free on 127.0.0.1 now (bound, then released: good enough for tests). */
export async function freePort(): Promise<number> {
  const s = createServer();
  s.unref();
  await new Promise<void>((resolve, reject) => {
    s.once("error", reject);
    s.listen(0, "127.0.0.1", resolve);
  });
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}
