"""One zenoh-python client session on the router side of test/zenoh/join.netns.test.ts.

    client.py tcp/127.0.0.1:<port>

Driven over stdio, one JSON object per line. Commands: `{"op": "put", "key", "value"}`,
`{"op": "delete", "key"}`, `{"op": "sub", "key"}`, `{"op": "queryable", "key", "value"}` (answers
every query with `value` on the query's key), `{"op": "get", "selector"}`,
`{"op": "putmany", "key", "count"}` (puts `<key>/<i>` for i from 0, congestion control block, as
fast as the session takes them), `{"op": "sub", "key", "quiet": true}` (keeps the keys instead of
printing them) and `{"op": "collected"}` (`{"done": "collected", "keys": [...]}`: the keys the
quiet subscribers got, in order; `{"op": "count", "prefix"}`: how many, of those starting with `prefix` when given, as `n`),
`{"op": "unsub", "key"}` (undeclares the subscriber on `key`), `{"op": "pub", "key"}` (declares a publisher) and `{"op": "matching", "key"}` (its matching
status now, `{"done": "matching", "matching": bool}`). Each is answered with `{"done": op}` (a get with
`{"done": "get", "replies": [...]}`); a subscriber prints `{"sample": {"key", "kind", "value"}}`
per sample. Prints `{"ready": zid}` once open; exits
when stdin closes or after 120 s.
"""

import json
import os
import sys
import threading

import zenoh

lock = threading.Lock()


def emit(obj):
    with lock:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


conf = zenoh.Config()
conf.insert_json5("mode", '"client"')
conf.insert_json5("connect/endpoints", json.dumps([sys.argv[1]]))
conf.insert_json5("scouting/multicast/enabled", "false")
conf.insert_json5("scouting/gossip/enabled", "false")
session = zenoh.open(conf)
keep = []
collected = []
publishers = {}
subscribers = {}


def on_sample(s):
    emit({"sample": {"key": str(s.key_expr), "kind": str(s.kind).split(".")[-1], "value": s.payload.to_bytes().decode(errors="replace")}})


def run(cmd):
    op = cmd["op"]
    if op == "put":
        session.put(cmd["key"], cmd["value"])
    elif op == "delete":
        session.delete(cmd["key"])
    elif op == "sub" and cmd.get("quiet"):
        keep.append(session.declare_subscriber(cmd["key"], lambda s: collected.append(str(s.key_expr))))
    elif op == "sub":
        subscribers[cmd["key"]] = session.declare_subscriber(cmd["key"], on_sample)
    elif op == "unsub":
        subscribers.pop(cmd["key"]).undeclare()
    elif op == "pub":
        publishers[cmd["key"]] = session.declare_publisher(cmd["key"])
    elif op == "matching":
        emit({"done": "matching", "matching": publishers[cmd["key"]].matching_status.matching})
        return
    elif op == "putmany":
        key = cmd["key"]
        block = zenoh.CongestionControl.BLOCK
        for i in range(int(cmd["count"])):
            session.put(f"{key}/{i}", str(i), congestion_control=block)
    elif op == "collected":
        emit({"done": "collected", "keys": list(collected)})
        return
    elif op == "count":
        prefix = cmd.get("prefix", "")
        emit({"done": "count", "n": sum(1 for k in collected if k.startswith(prefix))})
        return
    elif op == "queryable":
        value = cmd["value"]
        keep.append(session.declare_queryable(cmd["key"], lambda q: q.reply(q.key_expr, value)))
    elif op == "get":
        replies = []
        for r in session.get(cmd["selector"], timeout=5.0):
            if r.ok is not None:
                replies.append({"key": str(r.ok.key_expr), "value": r.ok.payload.to_bytes().decode(errors="replace")})
            else:
                replies.append({"err": r.err.payload.to_bytes().decode(errors="replace")})
        emit({"done": "get", "replies": replies})
        return
    emit({"done": op})


emit({"ready": str(session.info.zid())})
# Never left behind by a test that died: gone after 120 s (or $JOIN_CLIENT_LIFETIME_S) whatever happens.
reaper = threading.Timer(float(os.environ.get("JOIN_CLIENT_LIFETIME_S", "120")), lambda: os._exit(0))
reaper.daemon = True
reaper.start()
for line in sys.stdin:
    if line.strip():
        try:
            run(json.loads(line))
        except Exception as e:  # reported, the session goes on
            emit({"error": str(e)})
session.close()
