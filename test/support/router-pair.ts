/**
 * Two `zest` routers (child processes) over one real `nats-server`, for the tests of the enclosing
 * `describe`: started before them (and met, by `ready`), stopped after them.
 */
import { after, before } from "node:test";
import { type NatsCluster, startNatsCluster } from "./nats-cluster.js";
import { startRouters, type ZestProcess } from "./zest-process.js";

/** `argsOf(natsUrl)`: the arguments of router a and of router b; `ready` resolves once they have met. */
export function routerPairOverNats(
  argsOf: (natsUrl: string) => [string[], string[]],
  ready: (a: ZestProcess, b: ZestProcess) => Promise<void>,
): { readonly a: ZestProcess; readonly b: ZestProcess } {
  let cluster: NatsCluster | undefined;
  let routers: ZestProcess[] = [];
  before(async () => {
    cluster = await startNatsCluster({ size: 1, jetstream: false });
    routers = await startRouters(argsOf(cluster.urls[0]!));
    await ready(routers[0]!, routers[1]!);
  });
  after(async () => {
    await Promise.all(routers.map((r) => r.stop()));
    await cluster?.stop();
  });
  const router = (i: number): ZestProcess => {
    const r = routers[i];
    if (r === undefined) throw new Error("the routers have not started");
    return r;
  };
  return {
    get a() {
      return router(0);
    },
    get b() {
      return router(1);
    },
  };
}
