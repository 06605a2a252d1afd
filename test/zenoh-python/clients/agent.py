"""One zenoh-python session, driven over stdio by zest's tests (test/support/zenoh-python.ts).

    agent.py --mode client|peer --connect tcp/127.0.0.1:<port>

The session connects to zest only: multicast scouting and gossip are off, and a peer listens
nowhere, so two agents never meet each other and all their traffic goes through zest.

Protocol, one JSON object per line both ways:
- stdin: commands `{"id": <n>, "op": "<name>", ...arguments}`.
- stdout: the answer to each command, `{"id": <n>, "ok": true, ...results}` or
  `{"id": <n>, "ok": false, "error": "..."}`, and events, `{"ev": "<kind>", "name": ..., ...}`,
  for what subscribers, queryables, matching and liveliness listeners see.
- The first line is `{"ev": "ready", "zid": ...}` once the session is open.

Each command runs on a thread of its own, so a get in progress never stops the agent from
declaring or putting; the test sends the next command after the answer to the previous one
when order matters. Every wait here is bounded (gets by their timeout). The agent exits when
stdin closes, or after `--lifetime` seconds at most, so that no test can leave it behind.
"""

import argparse
import base64
import hashlib
import json
import os
import sys
import threading
import time
import traceback

import zenoh
from zenoh import ext

_out = threading.Lock()


def emit(obj):
    line = json.dumps(obj)
    with _out:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def name_of(enum_value):
    """`Priority.DATA_HIGH` -> `DATA_HIGH` (zenoh's enums have no `.name`)."""
    return str(enum_value).split(".")[-1]


def enum_arg(enum_type, value):
    return None if value is None else getattr(enum_type, value)


def pattern(size, seed=0):
    """The bytes of a large test value: a period of 251 (a prime), so that a fragment lost,
    doubled or reordered changes the digest. test/support/zenoh-python.ts builds the same."""
    period = bytes((i + seed) % 251 for i in range(251))
    return (period * (size // 251 + 1))[:size]


def payload_arg(args, prefix="payload"):
    """A payload from a command: text, base64, or a generated pattern of `<prefix>_size` bytes."""
    if args.get(prefix + "_size") is not None:
        return pattern(args[prefix + "_size"], args.get(prefix + "_seed", 0))
    if args.get(prefix + "_b64") is not None:
        return base64.b64decode(args[prefix + "_b64"])
    value = args.get(prefix)
    return None if value is None else value.encode()


def bytes_json(zbytes, inline_limit=4096):
    """A payload as JSON: its length and digest always, its bytes when small."""
    if zbytes is None:
        return None
    data = zbytes.to_bytes()
    d = {"len": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    if len(data) <= inline_limit:
        d["b64"] = base64.b64encode(data).decode()
        try:
            d["text"] = data.decode()
        except UnicodeDecodeError:
            pass
    return d


def timestamp_json(ts):
    if ts is None:
        return None
    return {"str": str(ts), "id": bytes(ts.get_id()).hex(), "ntp64": ts.get_time_as_ntp64().as_nanos()}


def source_info_json(si):
    if si is None:
        return None
    return {"zid": str(si.source_id.zid), "eid": int(si.source_id.eid), "sn": int(si.source_sn)}


def stack_json(stack):
    if stack is None:
        return None
    records = []
    for r in stack.records:
        rec = {"point": name_of(r.point), "custom": r.is_custom}
        t = r.timestamp()
        rec["timestamp"] = t.hex() if isinstance(t, bytes) else str(t)
        records.append(rec)
    return {"records": records}


def sample_json(s):
    d = {
        "key": str(s.key_expr),
        "kind": name_of(s.kind),
        "payload": bytes_json(s.payload),
        "encoding": str(s.encoding),
        "priority": name_of(s.priority),
        "congestion": name_of(s.congestion_control),
        "express": s.express,
        "timestamp": timestamp_json(s.timestamp),
        "attachment": bytes_json(s.attachment),
    }
    try:
        d["source_info"] = source_info_json(s.source_info)
    except Exception:  # noqa: BLE001 - unstable API
        d["source_info"] = None
    try:
        d["timestamp_stack"] = stack_json(s.timestamp_stack)
    except Exception:  # noqa: BLE001 - unstable API
        d["timestamp_stack"] = None
    return d


def reply_json(r):
    ok = r.ok
    if ok is not None:
        d = {"ok": sample_json(ok)}
    else:
        err = r.err
        d = {"err": {"payload": bytes_json(err.payload), "encoding": str(err.encoding)}}
    try:
        rid = r.replier_id
        d["replier"] = None if rid is None else {"zid": str(rid.zid), "eid": int(rid.eid)}
    except Exception:  # noqa: BLE001 - unstable API
        pass
    return d


def matching_of(obj):
    """A publisher's or querier's matching status as a bool (1.10 returns a MatchingStatus)."""
    status = obj.matching_status
    return status if isinstance(status, bool) else status.matching


def qos_kwargs(args):
    kw = {}
    if args.get("priority") is not None:
        kw["priority"] = enum_arg(zenoh.Priority, args["priority"])
    if args.get("congestion") is not None:
        kw["congestion_control"] = enum_arg(zenoh.CongestionControl, args["congestion"])
    if args.get("express") is not None:
        kw["express"] = args["express"]
    return kw


def instrumentation(args):
    points = args.get("instrument")
    if not points:
        return None
    b = zenoh.TimestampInstrumentationBuilder()
    b = b.set_send("SEND" in points).set_route("ROUTE" in points).set_receive("RECEIVE" in points)
    return b.build()


class Agent:
    def __init__(self, session):
        self.session = session
        self.objects = {}

    # -- writing ------------------------------------------------------------------------

    def op_put(self, a):
        kw = qos_kwargs(a)
        if a.get("encoding") is not None:
            kw["encoding"] = a["encoding"]
        att = payload_arg(a, "attachment")
        if att is not None:
            kw["attachment"] = att
        if a.get("timestamp"):
            kw["timestamp"] = self.session.new_timestamp()
        inst = instrumentation(a)
        if inst is not None:
            kw["timestamp_instrumentation"] = inst
        if a.get("source_sn") is not None:
            kw["source_info"] = zenoh.SourceInfo(self.session.id, a["source_sn"])
        payload = payload_arg(a)
        for i in range(a.get("count", 1)):
            self.session.put(a["key"], str(i).encode() if a.get("numbered") else payload, **kw)
        return {}

    def op_delete(self, a):
        kw = qos_kwargs(a)
        att = payload_arg(a, "attachment")
        if att is not None:
            kw["attachment"] = att
        self.session.delete(a["key"], **kw)
        return {}

    def op_pub(self, a):
        kw = qos_kwargs(a)
        if a.get("encoding") is not None:
            kw["encoding"] = a["encoding"]
        self.objects[a["name"]] = self.session.declare_publisher(a["key"], **kw)
        return {}

    def op_pub_put(self, a):
        pub = self.objects[a["name"]]
        kw = {}
        att = payload_arg(a, "attachment")
        if att is not None:
            kw["attachment"] = att
        if a.get("encoding") is not None:
            kw["encoding"] = a["encoding"]
        for _ in range(a.get("count", 1)):
            pub.put(payload_arg(a), **kw)
        return {}

    def op_matching_listen(self, a):
        name = a["name"]
        obj = self.objects[name]
        listener = obj.declare_matching_listener(
            lambda status: emit({"ev": "matching", "name": name, "matching": status.matching})
        )
        self.objects[name + "#matching"] = listener
        return {"matching": matching_of(obj)}

    def op_matching_status(self, a):
        return {"matching": matching_of(self.objects[a["name"]])}

    # -- subscribing --------------------------------------------------------------------

    def op_sub(self, a):
        name = a["name"]
        if a.get("ring") is not None:
            handler = zenoh.handlers.RingChannel(a["ring"])
            self.objects[name] = self.session.declare_subscriber(a["key"], handler)
        else:
            self.objects[name] = self.session.declare_subscriber(
                a["key"], lambda s: emit({"ev": "sample", "name": name, **sample_json(s)})
            )
        return {}

    def op_drain(self, a):
        """Takes what a ring-channel subscriber holds now."""
        sub = self.objects[a["name"]]
        samples = []
        while True:
            s = sub.try_recv()
            if s is None:
                break
            samples.append(sample_json(s))
        return {"samples": samples}

    def op_undeclare(self, a):
        obj = self.objects.pop(a["name"])
        obj.undeclare()
        return {}

    # -- querying -----------------------------------------------------------------------

    def op_queryable(self, a):
        name = a["name"]
        replies = a.get("replies", [])
        delay = a.get("delay_ms", 0) / 1000

        def answer(q):
            try:
                if delay:
                    time.sleep(delay)
                for r in replies:
                    kw = qos_kwargs(r)
                    att = payload_arg(r, "attachment")
                    if att is not None:
                        kw["attachment"] = att
                    key = r.get("key") or str(q.key_expr)
                    if r.get("err"):
                        enc = {"encoding": r["encoding"]} if r.get("encoding") else {}
                        q.reply_err(payload_arg(r), **enc)
                    elif r.get("delete"):
                        q.reply_del(key, **kw)
                    else:
                        if r.get("encoding") is not None:
                            kw["encoding"] = r["encoding"]
                        if r.get("timestamp"):
                            kw["timestamp"] = self.session.new_timestamp()
                        q.reply(key, payload_arg(r), **kw)
            except Exception as e:  # noqa: BLE001 - reported to the test, which fails on it
                emit({"ev": "error", "name": name, "error": repr(e)})
            finally:
                q.drop()

        def on_query(q):
            ev = {
                "ev": "query",
                "name": name,
                "key": str(q.key_expr),
                "parameters": str(q.parameters),
                "payload": bytes_json(q.payload),
                "encoding": None if q.encoding is None else str(q.encoding),
                "attachment": bytes_json(q.attachment),
            }
            try:
                ev["timestamp_stack"] = stack_json(q.timestamp_stack)
            except Exception:  # noqa: BLE001 - unstable API
                pass
            emit(ev)
            if delay:
                threading.Thread(target=answer, args=(q,), daemon=True).start()
            else:
                answer(q)

        kw = {}
        if a.get("complete") is not None:
            kw["complete"] = a["complete"]
        self.objects[name] = self.session.declare_queryable(a["key"], on_query, **kw)
        return {}

    def _get_kwargs(self, a):
        kw = qos_kwargs(a)
        if a.get("target") is not None:
            kw["target"] = enum_arg(zenoh.QueryTarget, a["target"])
        if a.get("consolidation") is not None:
            kw["consolidation"] = enum_arg(zenoh.ConsolidationMode, a["consolidation"])
        if a.get("timeout") is not None:
            kw["timeout"] = a["timeout"]
        if a.get("accept_any"):
            kw["accept_replies"] = zenoh.ReplyKeyExpr.ANY
        return kw

    def _collect(self, handler, started):
        replies = []
        for r in handler:
            replies.append(reply_json(r))
        return {"replies": replies, "ms": round((time.monotonic() - started) * 1000)}

    def _payload_kwargs(self, a, kw):
        payload = payload_arg(a)
        if payload is not None:
            kw["payload"] = payload
        if a.get("encoding") is not None:
            kw["encoding"] = a["encoding"]
        att = payload_arg(a, "attachment")
        if att is not None:
            kw["attachment"] = att
        inst = instrumentation(a)
        if inst is not None:
            kw["timestamp_instrumentation"] = inst
        if a.get("cancel_after_ms") is not None:
            token = zenoh.CancellationToken()
            kw["cancellation_token"] = token
            threading.Timer(a["cancel_after_ms"] / 1000, token.cancel).start()
        return kw

    def op_get(self, a):
        kw = self._payload_kwargs(a, self._get_kwargs(a))
        started = time.monotonic()
        return self._collect(self.session.get(a["selector"], **kw), started)

    def op_get_many(self, a):
        """`count` gets sent at once, without waiting for any reply; counts what comes back."""
        kw = self._get_kwargs(a)
        lock = threading.Lock()
        done = threading.Event()
        tally = {"oks": 0, "errs": 0, "finished": 0, "errors": []}
        count = a["count"]

        def on_reply(r):
            with lock:
                if r.ok is not None:
                    tally["oks"] += 1
                else:
                    tally["errs"] += 1
                    if len(tally["errors"]) < 3:
                        tally["errors"].append(bytes_json(r.err.payload))

        def on_final():
            with lock:
                tally["finished"] += 1
                if tally["finished"] == count:
                    done.set()

        started = time.monotonic()
        for i in range(count):
            self.session.get(
                f"{a['selector']}?i={i}", zenoh.handlers.Callback(on_reply, on_final, indirect=False), **kw
            )
        done.wait(a.get("wait", 30))
        with lock:
            return {**tally, "ms": round((time.monotonic() - started) * 1000)}

    def op_querier(self, a):
        self.objects[a["name"]] = self.session.declare_querier(a["key"], **self._get_kwargs(a))
        return {}

    def op_querier_get(self, a):
        querier = self.objects[a["name"]]
        kw = self._payload_kwargs(a, {})
        if a.get("parameters") is not None:
            kw["parameters"] = a["parameters"]
        started = time.monotonic()
        return self._collect(querier.get(**kw), started)

    # -- liveliness ---------------------------------------------------------------------

    def op_token(self, a):
        self.objects[a["name"]] = self.session.liveliness().declare_token(a["key"])
        return {}

    def op_liveliness_sub(self, a):
        name = a["name"]
        self.objects[name] = self.session.liveliness().declare_subscriber(
            a["key"],
            lambda s: emit({"ev": "liveliness", "name": name, "key": str(s.key_expr), "kind": name_of(s.kind)}),
            history=bool(a.get("history")),
        )
        return {}

    def op_liveliness_get(self, a):
        kw = {}
        if a.get("timeout") is not None:
            kw["timeout"] = a["timeout"]
        started = time.monotonic()
        return self._collect(self.session.liveliness().get(a["key"], **kw), started)

    # -- advanced pub/sub ---------------------------------------------------------------

    def op_adv_pub(self, a):
        kw = {"publisher_detection": bool(a.get("detection", True))}
        if a.get("cache") is not None:
            kw["cache"] = ext.CacheConfig(a["cache"])
        if a.get("heartbeat") is not None:
            kw["sample_miss_detection"] = ext.MissDetectionConfig(heartbeat=a["heartbeat"], sporadic_heartbeat=None)
        self.objects[a["name"]] = ext.declare_advanced_publisher(self.session, a["key"], **kw)
        return {}

    def op_adv_sub(self, a):
        name = a["name"]
        kw = {"subscriber_detection": bool(a.get("detection", True))}
        if a.get("history") is not None:
            h = a["history"]
            kw["history"] = ext.HistoryConfig(
                detect_late_publishers=h.get("late", True), max_samples=h.get("max_samples")
            )
        if a.get("recovery") == "heartbeat":
            kw["recovery"] = ext.RecoveryConfig(periodic_queries=None, heartbeat=True)
        elif a.get("recovery") is not None:
            kw["recovery"] = ext.RecoveryConfig(periodic_queries=a["recovery"], heartbeat=None)
        sub = ext.declare_advanced_subscriber(
            self.session, a["key"], lambda s: emit({"ev": "sample", "name": name, **sample_json(s)}), **kw
        )
        self.objects[name] = sub
        self.objects[name + "#miss"] = sub.sample_miss_listener(
            lambda m: emit({"ev": "miss", "name": name, "source": str(m.source.zid), "nb": m.nb})
        )
        return {}

    # -- the session --------------------------------------------------------------------

    def op_info(self, _a):
        info = self.session.info
        return {
            "zid": str(info.zid()),
            "routers": [str(z) for z in info.routers_zid()],
            "peers": [str(z) for z in info.peers_zid()],
        }

    def op_close(self, _a):
        self.session.close()
        return {}


# After these, the agent answers only once zest has read what they sent (see `barrier`).
DECLARING = {"sub", "pub", "queryable", "querier", "token", "liveliness_sub", "adv_pub", "adv_sub", "undeclare"}


def barrier(session):
    """A get that no queryable answers, sent after a declaration on the same link: its final
    reply comes back once the router has read the declaration too. Without it, what the test
    does next through another session could reach zest first (two TCP connections race)."""
    for _ in session.get("py/barrier/none", timeout=5):
        pass


def run_command(agent, cmd):
    cid = cmd.get("id")
    try:
        handler = getattr(agent, "op_" + cmd["op"], None)
        if handler is None:
            raise ValueError("unknown op " + repr(cmd.get("op")))
        result = handler(cmd)
        if cmd["op"] in DECLARING:
            barrier(agent.session)
        emit({"id": cid, "ok": True, **result})
    except Exception as e:  # noqa: BLE001 - every failure goes back to the test
        emit({"id": cid, "ok": False, "error": repr(e), "trace": traceback.format_exc(limit=3)})


def open_session(mode, connect, config=()):
    conf = zenoh.Config()
    conf.insert_json5("mode", json.dumps(mode))
    conf.insert_json5("connect/endpoints", json.dumps([connect]))
    conf.insert_json5("connect/exit_on_failure", "true")
    conf.insert_json5("scouting/multicast/enabled", "false")
    conf.insert_json5("scouting/gossip/enabled", "false")
    if mode == "peer":
        conf.insert_json5("listen/endpoints", "[]")
    # `--config path=json5`: a setting a test's agents need (e.g. their congestion control).
    for item in config:
        path, _, value = item.partition("=")
        conf.insert_json5(path, value)
    return zenoh.open(conf)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=["client", "peer"], required=True)
    p.add_argument("--connect", required=True)
    p.add_argument("--lifetime", type=float, default=120.0)
    p.add_argument("--config", action="append", default=[], help="path=json5, applied to the session's config")
    args = p.parse_args()

    # However the test ends, the agent does not outlive it for long.
    killer = threading.Timer(args.lifetime, lambda: os._exit(3))
    killer.daemon = True
    killer.start()

    session = open_session(args.mode, args.connect, args.config)
    agent = Agent(session)
    emit({"ev": "ready", "zid": str(session.zid())})
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            cmd = json.loads(line)
        except json.JSONDecodeError as e:
            emit({"ev": "error", "error": "bad command: " + repr(e)})
            continue
        if cmd.get("op") == "exit":
            break
        threading.Thread(target=run_command, args=(agent, cmd), daemon=True).start()
    session.close()


if __name__ == "__main__":
    main()
