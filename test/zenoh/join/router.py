"""zenoh's own router (the zenoh-rust runtime of the eclipse-zenoh wheel in router mode, wire-
identical to zenohd without plugins), for the tests of zest joining a zenoh network
(test/zenoh/join.netns.test.ts):

    router.py tcp/127.0.0.1:<port>[,udp/127.0.0.1:<port>...] [<endpoint to connect to>]

Multicast scouting and gossip are off. Prints `ready` once listening; runs until stdin closes.
"""

import json
import sys

import zenoh

conf = zenoh.Config()
conf.insert_json5("mode", '"router"')
conf.insert_json5("listen/endpoints", json.dumps(sys.argv[1].split(",")))
if len(sys.argv) > 2:
    conf.insert_json5("connect/endpoints", json.dumps([sys.argv[2]]))
conf.insert_json5("scouting/multicast/enabled", "false")
conf.insert_json5("scouting/gossip/enabled", "false")
session = zenoh.open(conf)
print("ready", str(session.info.zid()), flush=True)
try:
    sys.stdin.read()
except KeyboardInterrupt:
    pass
session.close()
