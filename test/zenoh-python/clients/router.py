"""zenoh's own router (the Rust runtime of the eclipse-zenoh wheel in router mode, as zenohd
runs it without plugins), for checking by hand that a test marked `todo` passes against zenoh,
and as the zenoh router the benchmarks measure zest beside (bench/lib/zenoh.ts):

    python router.py tcp/127.0.0.1:7448 [<config path>=<json5 value> ...]
    ZENOH_PYTHON_ROUTER=tcp/127.0.0.1:7448 node --test .test-build/test/zenoh-python/<file>.js

(both inside one loopback-only namespace: scripts/in-netns.sh). Each further argument sets one
config value, as zenohd's `--cfg` (e.g. `transport/unicast/max_sessions=2000`). Prints `ready`
once listening and runs until stdin closes or it is killed.
"""

import json
import sys

import zenoh

conf = zenoh.Config()
conf.insert_json5("mode", '"router"')
conf.insert_json5("listen/endpoints", json.dumps([sys.argv[1]]))
conf.insert_json5("scouting/multicast/enabled", "false")
conf.insert_json5("scouting/gossip/enabled", "false")
for arg in sys.argv[2:]:
    path, _, value = arg.partition("=")
    conf.insert_json5(path, value)
session = zenoh.open(conf)
print("ready", flush=True)
try:
    sys.stdin.read()
except KeyboardInterrupt:
    pass
session.close()
