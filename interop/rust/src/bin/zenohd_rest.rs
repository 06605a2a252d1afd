//! zenohd with its REST plugin and storage manager linked in statically: the zenoh router a user
//! would run instead of zest's REST gateway, for the REST benchmark beside zest
//! (bench/suites/zenohd-rest.ts). Linking the plugins into one binary avoids loading plugin
//! libraries into a separately built zenohd, which needs the very same compiler and versions.
//!
//!     zenohd-rest <zenoh listen endpoint> <http address, e.g. 127.0.0.1:8000> [storage key expr]
//!
//! A memory storage named `demo` on the key expression (default `demo/**`). Multicast scouting
//! and gossip are off. Prints `ready` once the runtime and its plugins have started, and runs
//! until stdin closes or it is killed.
use std::io::Read;

use zenoh::{
    internal::{plugins::PluginsManager, runtime::RuntimeBuilder},
    Config,
};

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("zenohd-rest: {msg}");
    std::process::exit(2)
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        fail("usage: zenohd-rest <listen endpoint> <http address> [storage key expr]");
    }
    let storage = args.get(3).map(String::as_str).unwrap_or("demo/**");
    let json = |v: &str| serde_json::to_string(v).unwrap_or_else(|e| fail(e));

    let mut config = Config::default();
    for (key, value) in [
        ("mode", json("router")),
        ("listen/endpoints", format!("[{}]", json(&args[1]))),
        ("scouting/multicast/enabled", "false".to_string()),
        ("scouting/gossip/enabled", "false".to_string()),
        ("plugins/rest/http_port", json(&args[2])),
        ("plugins/storage_manager/storages/demo", format!("{{key_expr:{},volume:\"memory\"}}", json(storage))),
    ] {
        if let Err(e) = config.insert_json5(key, &value) {
            fail(format!("config {key}: {e}"));
        }
    }

    // The plugins zenohd would load from libzenoh_plugin_*.so, declared as static ones under
    // the names their config sections have.
    let mut plugins = PluginsManager::static_plugins_only();
    plugins.declare_static_plugin::<zenoh_plugin_rest::RestPlugin, &str>("rest", true);
    plugins.declare_static_plugin::<zenoh_plugin_storage_manager::StoragesPlugin, &str>("storage_manager", true);
    let mut runtime = RuntimeBuilder::new(config)
        .plugins_manager(plugins)
        .build()
        .await
        .unwrap_or_else(|e| fail(format!("runtime: {e}")));
    runtime.start().await.unwrap_or_else(|e| fail(format!("start: {e}")));
    println!("ready {}", runtime.zid());

    // Runs until stdin closes (the parent went away) or a signal ends the process.
    let _ = tokio::task::spawn_blocking(|| {
        let mut sink = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut sink);
    })
    .await;
}
