"""zenoh-python throughput pair for bench/suites/zenoh-python-thr.ts (the project's own, in the
manner of zenoh's z_pub_thr / z_sub_thr):

    zenoh-python-thr.py sub <client|peer> <connect endpoint | -l listen endpoint>
    zenoh-python-thr.py pub <client|peer> <connect endpoint> <payload bytes>

`sub` counts the samples on `bench/thr` and prints, once a second, the samples per second of
that window; `pub` puts a payload there as fast as it can (congestion control BLOCK, as
z_pub_thr). Multicast scouting and gossip are off. Both run until killed, inside a loopback-only
namespace only.
"""

import json
import sys
import time

import zenoh

KEY = "bench/thr"


def open_session(mode, args):
    conf = zenoh.Config()
    conf.insert_json5("mode", json.dumps(mode))
    if args[0] == "-l":
        conf.insert_json5("listen/endpoints", json.dumps([args[1]]))
    else:
        conf.insert_json5("connect/endpoints", json.dumps([args[0]]))
        if mode == "peer":
            conf.insert_json5("listen/endpoints", json.dumps(["tcp/127.0.0.1:0"]))
    conf.insert_json5("scouting/multicast/enabled", "false")
    conf.insert_json5("scouting/gossip/enabled", "false")
    return zenoh.open(conf)


def sub(mode, args):
    session = open_session(mode, args)
    count = [0]

    def on_sample(_sample):
        count[0] += 1

    session.declare_subscriber(KEY, on_sample)
    print("ready", flush=True)
    last, start = 0, time.monotonic()
    while True:
        time.sleep(1)
        now, n = time.monotonic(), count[0]
        print(round((n - last) / (now - start)), flush=True)
        last, start = n, now


def pub(mode, args):
    session = open_session(mode, args[:1])
    payload = bytes(i % 10 for i in range(int(args[1])))
    publisher = session.declare_publisher(KEY, congestion_control=zenoh.CongestionControl.BLOCK)
    print("ready", flush=True)
    put = publisher.put
    while True:
        put(payload)


if __name__ == "__main__":
    role, mode, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
    (sub if role == "sub" else pub)(mode, rest)
