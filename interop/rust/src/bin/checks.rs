//! zenoh-rust (the `zenoh` crate, pinned to the version of the eclipse-zenoh wheel) against zest:
//! the core patterns, with two sessions connected to zest only, in client mode and in peer mode
//! (a peer connects to zest; multicast scouting and gossip off, so every message goes through
//! zest). One line per check, `ok` or `not ok`, then a count; exits 1 when any check failed.
//!
//!     zest-rust-checks <zest's zenoh endpoint, e.g. tcp/127.0.0.1:7447> [client|peer ...]
//!
//! Run by scripts/test-rust.sh (`npm run test:rust`) inside a loopback-only network namespace,
//! against a fresh zest with a memory storage on `demo/**`.
use std::{future::Future, time::Duration};

use zenoh::{
    bytes::{Encoding, ZBytes},
    handlers::FifoChannelHandler,
    matching::{MatchingListener, MatchingStatus},
    pubsub::Subscriber,
    sample::{Sample, SampleKind},
    Session,
};

type Res<T = ()> = Result<T, zenoh::Error>;

/// How long one check may take, and one awaited sample or reply.
const CHECK_TIMEOUT: Duration = Duration::from_secs(20);
const WAIT: Duration = Duration::from_secs(5);
/// Time for a declaration to reach zest (and, through it, the other session) before it is used.
const SETTLE: Duration = Duration::from_millis(400);
/// zenoh fragments a value this large (its batch is 64 KiB) on every hop.
const BIG: usize = 128 * 1024;

fn ensure(cond: bool, what: impl FnOnce() -> String) -> Res {
    if cond {
        Ok(())
    } else {
        Err(what().into())
    }
}

/// The bytes of a large test value: `(i + seed) % 251`, so a shifted or truncated copy differs.
fn pattern(size: usize, seed: usize) -> Vec<u8> {
    (0..size).map(|i| ((i + seed) % 251) as u8).collect()
}

async fn settle() {
    tokio::time::sleep(SETTLE).await;
}

async fn next_sample(sub: &Subscriber<FifoChannelHandler<Sample>>, what: &str) -> Res<Sample> {
    match tokio::time::timeout(WAIT, sub.recv_async()).await {
        Ok(Ok(s)) => Ok(s),
        Ok(Err(e)) => Err(format!("{what}: subscriber closed: {e}").into()),
        Err(_) => Err(format!("{what}: no sample within {WAIT:?}").into()),
    }
}

fn text(b: &ZBytes) -> String {
    String::from_utf8_lossy(&b.to_bytes()).into_owned()
}

/// Opens a session in `mode` connected to `endpoint` only.
async fn open(mode: &str, endpoint: &str) -> Res<Session> {
    let mut c = zenoh::Config::default();
    c.insert_json5("mode", &serde_json::to_string(mode)?)?;
    c.insert_json5("connect/endpoints", &serde_json::to_string(&[endpoint])?)?;
    c.insert_json5("scouting/multicast/enabled", "false")?;
    c.insert_json5("scouting/gossip/enabled", "false")?;
    if mode == "peer" {
        // A peer listens too; on loopback only.
        c.insert_json5("listen/endpoints", r#"["tcp/127.0.0.1:0"]"#)?;
    }
    zenoh::open(c).await
}

/// put and delete reach a subscriber with key, payload and kind unchanged.
async fn put_sub(a: &Session, b: &Session, p: &str) -> Res {
    let sub = a.declare_subscriber(format!("{p}/ps/**")).await?;
    settle().await;
    b.put(format!("{p}/ps/one"), "hello").await?;
    let s = next_sample(&sub, "put").await?;
    ensure(s.key_expr().as_str() == format!("{p}/ps/one"), || format!("key {}", s.key_expr()))?;
    ensure(s.kind() == SampleKind::Put, || format!("kind {:?}", s.kind()))?;
    ensure(text(s.payload()) == "hello", || format!("payload {:?}", text(s.payload())))?;
    b.delete(format!("{p}/ps/one")).await?;
    let d = next_sample(&sub, "delete").await?;
    ensure(d.kind() == SampleKind::Delete, || format!("kind {:?}", d.kind()))?;
    ensure(d.key_expr().as_str() == format!("{p}/ps/one"), || format!("key {}", d.key_expr()))
}

/// A declared publisher sees matching go true and false as a subscriber comes and goes, and its
/// samples arrive in order.
async fn publisher_matching(a: &Session, b: &Session, p: &str) -> Res {
    let publisher = b.declare_publisher(format!("{p}/pub/x")).await?;
    let listener = publisher.matching_listener().await?;
    settle().await;
    ensure(!publisher.matching_status().await?.matching(), || "matching before any subscriber".into())?;
    let sub = a.declare_subscriber(format!("{p}/pub/*")).await?;
    wait_matching(&listener, true).await?;
    for i in 0..20 {
        publisher.put(i.to_string()).await?;
    }
    for i in 0..20 {
        let s = next_sample(&sub, "published").await?;
        ensure(text(s.payload()) == i.to_string(), || format!("sample {i}: {:?}", text(s.payload())))?;
    }
    sub.undeclare().await?;
    wait_matching(&listener, false).await
}

/// The first matching status `want` a listener reports.
async fn wait_matching(listener: &MatchingListener<FifoChannelHandler<MatchingStatus>>, want: bool) -> Res {
    loop {
        match tokio::time::timeout(WAIT, listener.recv_async()).await {
            Ok(Ok(s)) if s.matching() == want => return Ok(()),
            Ok(Ok(_)) => continue,
            Ok(Err(e)) => return Err(format!("matching listener closed: {e}").into()),
            Err(_) => return Err(format!("no matching={want} within {WAIT:?}").into()),
        }
    }
}

/// Encoding (with a schema) and attachment arrive unchanged.
async fn encoding_attachment(a: &Session, b: &Session, p: &str) -> Res {
    let sub = a.declare_subscriber(format!("{p}/enc/**")).await?;
    settle().await;
    let enc = Encoding::APPLICATION_JSON.with_schema("v1");
    b.put(format!("{p}/enc/a"), r#"{"x":1}"#).encoding(enc.clone()).attachment("att-1").await?;
    let s = next_sample(&sub, "put").await?;
    ensure(*s.encoding() == enc, || format!("encoding {}", s.encoding()))?;
    let att = s.attachment().map(text);
    ensure(att.as_deref() == Some("att-1"), || format!("attachment {att:?}"))?;
    b.put(format!("{p}/enc/b"), "plain").await?;
    let s = next_sample(&sub, "put without attachment").await?;
    ensure(s.attachment().is_none(), || "an attachment appeared".into())?;
    ensure(*s.encoding() == Encoding::default(), || format!("encoding {}", s.encoding()))
}

/// A 128 KiB value reaches a subscriber byte for byte (fragmented both ways).
async fn big_value(a: &Session, b: &Session, p: &str) -> Res {
    let sub = a.declare_subscriber(format!("{p}/big")).await?;
    settle().await;
    let value = pattern(BIG, 7);
    b.put(format!("{p}/big"), value.clone()).await?;
    let s = next_sample(&sub, "128 KiB put").await?;
    let got = s.payload().to_bytes();
    ensure(got.as_ref() == value.as_slice(), || format!("{} bytes, not the {BIG} put", got.len()))
}

/// Declares on `a` a queryable on `<p>/q/**` that answers `<parameters>|<payload>` (with the
/// query's attachment), a 128 KiB value on `<p>/q/big`, and an error on `<p>/q/err`.
async fn serve_queries(a: &Session, p: &str) -> Res<zenoh::query::Queryable<()>> {
    let big = format!("{p}/q/big");
    let err = format!("{p}/q/err");
    let q = a
        .declare_queryable(format!("{p}/q/**"))
        .complete(true)
        .callback(move |query| {
            use zenoh::Wait;
            let key = query.key_expr().clone();
            let r = if key.as_str() == big {
                query.reply(key, pattern(BIG, 3)).wait()
            } else if key.as_str() == err {
                query.reply_err("nope").wait()
            } else {
                let body = query.payload().map(text).unwrap_or_default();
                let mut reply = query.reply(key, format!("{}|{body}", query.parameters()));
                if let Some(att) = query.attachment() {
                    reply = reply.attachment(att.clone());
                }
                reply.wait()
            };
            if let Err(e) = r {
                eprintln!("queryable: reply failed: {e}");
            }
        })
        .await?;
    Ok(q)
}

/// Every reply of a get: the samples, and the error payloads.
async fn collect(replies: FifoChannelHandler<zenoh::query::Reply>) -> Res<(Vec<Sample>, Vec<String>)> {
    let mut ok = Vec::new();
    let mut err = Vec::new();
    loop {
        match tokio::time::timeout(WAIT * 2, replies.recv_async()).await {
            Ok(Ok(r)) => match r.into_result() {
                Ok(s) => ok.push(s),
                Err(e) => err.push(text(e.payload())),
            },
            Ok(Err(_)) => return Ok((ok, err)),
            Err(_) => return Err("the get never ended (no final)".into()),
        }
    }
}

/// get reaches a queryable with parameters, payload and attachment, and its replies come back:
/// a plain one, a 128 KiB one, and an error.
async fn get_queryable(a: &Session, b: &Session, p: &str) -> Res {
    let _q = serve_queries(a, p).await?;
    settle().await;
    let (ok, err) =
        collect(b.get(format!("{p}/q/a?x=1")).payload("body").attachment("ga").timeout(WAIT).await?).await?;
    ensure(err.is_empty() && ok.len() == 1, || format!("{} replies, {} errors", ok.len(), err.len()))?;
    ensure(ok[0].key_expr().as_str() == format!("{p}/q/a"), || format!("key {}", ok[0].key_expr()))?;
    ensure(text(ok[0].payload()) == "x=1|body", || format!("payload {:?}", text(ok[0].payload())))?;
    let att = ok[0].attachment().map(text);
    ensure(att.as_deref() == Some("ga"), || format!("reply attachment {att:?}"))?;

    let (ok, _) = collect(b.get(format!("{p}/q/big")).timeout(WAIT).await?).await?;
    ensure(ok.len() == 1, || format!("{} replies to the 128 KiB get", ok.len()))?;
    let got = ok[0].payload().to_bytes();
    ensure(got.as_ref() == pattern(BIG, 3).as_slice(), || format!("{} bytes, not {BIG}", got.len()))?;

    let (ok, err) = collect(b.get(format!("{p}/q/err")).timeout(WAIT).await?).await?;
    ensure(ok.is_empty() && err == ["nope"], || format!("replies {} errors {err:?}", ok.len()))
}

/// A declared querier matches the complete queryable and its gets are answered.
async fn querier(a: &Session, b: &Session, p: &str) -> Res {
    let _q = serve_queries(a, p).await?;
    let querier = b.declare_querier(format!("{p}/q/qq")).timeout(WAIT).await?;
    let mut matched = false;
    for _ in 0..25 {
        if querier.matching_status().await?.matching() {
            matched = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    ensure(matched, || "the querier never matched the queryable".into())?;
    for i in 0..3 {
        let (ok, _) = collect(querier.get().parameters(format!("n={i}")).await?).await?;
        ensure(ok.len() == 1, || format!("get {i}: {} replies", ok.len()))?;
        ensure(text(ok[0].payload()) == format!("n={i}|"), || format!("payload {:?}", text(ok[0].payload())))?;
    }
    Ok(())
}

/// A liveliness token is seen by a get and by a subscriber with history, and its undeclaration
/// reaches the subscriber as a delete.
async fn liveliness(a: &Session, b: &Session, p: &str) -> Res {
    let token = a.liveliness().declare_token(format!("{p}/lv/a")).await?;
    settle().await;
    let (ok, _) = collect(b.liveliness().get(format!("{p}/lv/**")).timeout(WAIT).await?).await?;
    let keys: Vec<String> = ok.iter().map(|s| s.key_expr().to_string()).collect();
    ensure(keys == [format!("{p}/lv/a")], || format!("liveliness get: {keys:?}"))?;
    let sub = b.liveliness().declare_subscriber(format!("{p}/lv/**")).history(true).await?;
    let s = next_sample(&sub, "token from history").await?;
    ensure(s.kind() == SampleKind::Put && s.key_expr().as_str() == format!("{p}/lv/a"), || {
        format!("{:?} {}", s.kind(), s.key_expr())
    })?;
    token.undeclare().await?;
    let s = next_sample(&sub, "token undeclared").await?;
    ensure(s.kind() == SampleKind::Delete, || format!("kind {:?}", s.kind()))
}

/// A put into zest's memory storage on `demo/**` is what a later get reads.
async fn storage(b: &Session, p: &str) -> Res {
    let key = format!("demo/{p}/k");
    b.put(key.clone(), "stored").encoding(Encoding::TEXT_PLAIN).await?;
    settle().await;
    let (ok, _) = collect(b.get(key.clone()).timeout(WAIT).await?).await?;
    ensure(ok.len() == 1, || format!("{} replies", ok.len()))?;
    ensure(text(ok[0].payload()) == "stored", || format!("payload {:?}", text(ok[0].payload())))?;
    ensure(*ok[0].encoding() == Encoding::TEXT_PLAIN, || format!("encoding {}", ok[0].encoding()))?;
    ensure(ok[0].timestamp().is_some(), || "a stored value without a timestamp".into())
}

struct Tally {
    passed: usize,
    failed: Vec<String>,
}

impl Tally {
    async fn run(&mut self, name: String, check: impl Future<Output = Res>) {
        let outcome = match tokio::time::timeout(CHECK_TIMEOUT, check).await {
            Ok(r) => r,
            Err(_) => Err(format!("timed out after {CHECK_TIMEOUT:?}").into()),
        };
        match outcome {
            Ok(()) => {
                self.passed += 1;
                println!("ok - {name}");
            }
            Err(e) => {
                println!("not ok - {name}: {e}");
                self.failed.push(name);
            }
        }
    }
}

async fn mode_checks(t: &mut Tally, endpoint: &str, mode: &str) -> Res {
    let a = open(mode, endpoint).await?;
    let b = open(mode, endpoint).await?;
    let p = format!("rust/{mode}");
    let p = p.as_str();
    t.run(format!("{mode}: put and delete reach a subscriber"), put_sub(&a, &b, p)).await;
    t.run(format!("{mode}: publisher matching and ordered samples"), publisher_matching(&a, &b, p)).await;
    t.run(format!("{mode}: encoding and attachment unchanged"), encoding_attachment(&a, &b, p)).await;
    t.run(format!("{mode}: a 128 KiB value byte for byte"), big_value(&a, &b, p)).await;
    t.run(format!("{mode}: get and queryable (plain, 128 KiB, error)"), get_queryable(&a, &b, p)).await;
    t.run(format!("{mode}: querier"), querier(&a, &b, p)).await;
    t.run(format!("{mode}: liveliness token, get and subscriber"), liveliness(&a, &b, p)).await;
    t.run(format!("{mode}: zest's storage keeps a put"), storage(&b, p)).await;
    a.close().await?;
    b.close().await?;
    Ok(())
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(endpoint) = args.first() else {
        eprintln!("usage: zest-rust-checks <zest's zenoh endpoint> [client|peer ...]");
        std::process::exit(2);
    };
    let modes: Vec<&str> =
        if args.len() > 1 { args[1..].iter().map(String::as_str).collect() } else { vec!["client", "peer"] };
    let mut t = Tally { passed: 0, failed: Vec::new() };
    for mode in modes {
        if let Err(e) = mode_checks(&mut t, endpoint, mode).await {
            println!("not ok - {mode}: sessions: {e}");
            t.failed.push(format!("{mode}: sessions"));
        }
    }
    println!("zenoh-rust against zest: {} passed, {} failed", t.passed, t.failed.len());
    std::process::exit(if t.failed.is_empty() { 0 } else { 1 });
}
