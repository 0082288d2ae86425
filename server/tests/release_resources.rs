//! Every stored resource of the release, table-driven from the catalog: with
//! `--runtime-config=api/all=true`, each resource that supports create, list and watch is
//! created, read back, listed, watched and deleted, once with JSON bodies and once with
//! protobuf bodies, from one minimal valid object per group/version
//! (`fixtures/release-objects.yaml`). A resource of the catalog without a fixture fails the
//! test by name, so a resource added to the catalog must come with an object.
//!
//! One server serves the whole file; requests go over one kept-alive TLS connection, and each watch on a connection of its own that is dropped as soon
//! as it showed the object.

mod common;

use common::Server;
use keel_catalog::{Catalog, ResourceInfo};
use rustls::{ClientConnection, StreamOwned};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const PROTO: &str = "application/vnd.kubernetes.protobuf";
const JSON: &str = "application/json";
/// The namespace the namespaced objects are created in.
const NAMESPACE: &str = "release";
/// Longest a single response or a watch may take to show what it must.
const IO_TIMEOUT: Duration = Duration::from_secs(20);
/// Longest a deleted object may take to disappear (a namespace is finalized by the
/// namespace controller).
const GONE_TIMEOUT: Duration = Duration::from_secs(30);

/// Resources keel does not serve in protobuf yet, with why: their round trip is JSON only,
/// and the test fails once protobuf supports them (then remove them here).
const NO_PROTOBUF: &[(&str, &str)] = &[];

/// Resources whose stored JSON lacks the zero-valued status Go prints for a new object
/// (upstream v1.36.2 answers a create with it; keel's protobuf form, decoded as Go prints it,
/// has it): their protobuf get is not compared with their JSON get. The test fails once the
/// two agree (then remove them here).
const STATUS_ZERO_VALUES_MISSING: &[(&str, &str)] = &[];

fn listed(list: &[(&str, &str)], r: &ResourceInfo) -> bool {
    let key = format!("{} {}", r.api_version(), r.kind);
    list.iter().any(|(k, _)| *k == key)
}

fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| Server::start(&["--runtime-config=api/all=true"]))
}

fn catalog() -> Catalog {
    Catalog::new("api/all=true").expect("catalog with api/all=true")
}

/// The fixtures by (apiVersion, kind).
fn fixtures() -> BTreeMap<(String, String), Value> {
    let text = include_str!("fixtures/release-objects.yaml");
    let mut out = BTreeMap::new();
    for doc in serde_yaml_ng::Deserializer::from_str(text) {
        let v: Value = serde::Deserialize::deserialize(doc).expect("fixture YAML");
        if v.is_null() {
            continue;
        }
        let key = (
            v["apiVersion"].as_str().expect("apiVersion").to_string(),
            v["kind"].as_str().expect("kind").to_string(),
        );
        assert!(out.insert(key.clone(), v).is_none(), "two fixtures {key:?}");
    }
    out
}

fn round_trip_resources(cat: &Catalog) -> Vec<&ResourceInfo> {
    cat.resources()
        .map(|r| &**r)
        .filter(|r| {
            ["create", "get", "list", "watch", "delete"]
                .iter()
                .all(|v| r.supports(v))
        })
        .collect()
}

fn id(r: &ResourceInfo) -> String {
    format!("{}/{} {}", r.api_version(), r.plural, r.kind)
}

/// One HTTP/1.1 response.
struct Response {
    status: u16,
    content_type: String,
    body: Vec<u8>,
}

impl Response {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON, decoding protobuf when it is protobuf.
    fn object(&self) -> Result<Value, String> {
        if self.content_type.starts_with(PROTO) {
            keel_proto::decode(&self.body).map_err(|e| format!("protobuf body: {e}"))
        } else {
            serde_json::from_slice(&self.body)
                .map_err(|e| format!("JSON body ({e}): {}", self.text()))
        }
    }
}

/// A TLS connection to the server, kept alive across requests.
struct Conn {
    reader: BufReader<StreamOwned<ClientConnection, TcpStream>>,
    token: String,
}

impl Conn {
    fn open(s: &Server) -> Conn {
        let config = keel_http::tls::client_config(&s.ca_file(), None).unwrap();
        let name = keel_http::tls::server_name("127.0.0.1").unwrap();
        let tcp = TcpStream::connect(("127.0.0.1", s.port)).expect("connect");
        tcp.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        tcp.set_nodelay(true).unwrap();
        let tls = StreamOwned::new(ClientConnection::new(config, name).unwrap(), tcp);
        Conn {
            reader: BufReader::new(tls),
            token: s.token.clone(),
        }
    }

    fn send(&mut self, method: &str, path: &str, accept: &str, body: Option<(&str, &[u8])>) {
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\nAccept: {accept}\r\n",
            self.token
        );
        let bytes = body.map_or(&[][..], |(_, b)| b);
        if let Some((ct, b)) = body {
            head.push_str(&format!(
                "Content-Type: {ct}\r\nContent-Length: {}\r\n",
                b.len()
            ));
        }
        head.push_str("\r\n");
        let tls = self.reader.get_mut();
        tls.write_all(head.as_bytes()).unwrap();
        tls.write_all(bytes).unwrap();
        tls.flush().unwrap();
    }

    /// Status, content type and whether the body is chunked (else its length).
    fn read_head(&mut self) -> (u16, String, Option<usize>) {
        let mut line = String::new();
        self.reader.read_line(&mut line).expect("status line");
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("no status line: {line:?}"));
        let (mut content_type, mut length) = (String::new(), Some(0));
        loop {
            line.clear();
            self.reader.read_line(&mut line).expect("header line");
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            let (k, v) = l.split_once(':').expect("header");
            match k.trim().to_ascii_lowercase().as_str() {
                "content-type" => content_type = v.trim().to_string(),
                "content-length" => length = Some(v.trim().parse().unwrap()),
                "transfer-encoding" if v.trim().eq_ignore_ascii_case("chunked") => length = None,
                _ => {}
            }
        }
        (status, content_type, length)
    }

    /// The next chunk of a chunked body; empty at its end.
    fn read_chunk(&mut self) -> std::io::Result<Vec<u8>> {
        let mut line = String::new();
        self.reader.read_line(&mut line)?;
        let size_text = line.trim().split(';').next().unwrap_or("");
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| std::io::Error::other(format!("bad chunk size {line:?}")))?;
        let mut chunk = vec![0; size];
        self.reader.read_exact(&mut chunk)?;
        let mut crlf = [0; 2];
        // After the last (empty) chunk: the empty line that ends the (absent) trailers.
        self.reader.read_exact(&mut crlf)?;
        Ok(chunk)
    }

    fn request(
        &mut self,
        method: &str,
        path: &str,
        accept: &str,
        body: Option<(&str, &[u8])>,
    ) -> Response {
        self.send(method, path, accept, body);
        let (status, content_type, length) = self.read_head();
        let body = match length {
            Some(n) => {
                let mut b = vec![0; n];
                self.reader.read_exact(&mut b).expect("body");
                b
            }
            None => {
                let mut b = Vec::new();
                loop {
                    let chunk = self.read_chunk().expect("chunk");
                    if chunk.is_empty() {
                        break;
                    }
                    b.extend(chunk);
                }
                b
            }
        };
        Response {
            status,
            content_type,
            body,
        }
    }

    /// Opens a watch on a connection of its own and reads events until `want` accepts one
    /// (that event) or the stream ends or times out (the events seen, as the error).
    fn watch_until(
        s: &Server,
        path: &str,
        accept: &str,
        mut want: impl FnMut(&str, &Value) -> bool,
    ) -> Result<(String, Value), String> {
        let mut c = Conn::open(s);
        c.send("GET", path, accept, None);
        let (status, content_type, length) = c.read_head();
        if status != 200 || length.is_some() {
            let mut b = vec![0; length.unwrap_or(0)];
            let _ = c.reader.read_exact(&mut b);
            return Err(format!(
                "watch {path}: {status}: {}",
                String::from_utf8_lossy(&b)
            ));
        }
        let proto = content_type.starts_with(PROTO);
        let (mut buf, mut seen) = (Vec::<u8>::new(), Vec::new());
        let deadline = Instant::now() + IO_TIMEOUT;
        while Instant::now() < deadline {
            let chunk = match c.read_chunk() {
                Ok(chunk) if !chunk.is_empty() => chunk,
                Ok(_) => break,
                Err(e) => return Err(format!("watch {path}: {e}; saw {seen:?}")),
            };
            buf.extend(chunk);
            while let Some((event, used)) = next_event(&buf, proto)? {
                buf.drain(..used);
                if want(&event.0, &event.1) {
                    return Ok(event);
                }
                seen.push(format!("{} {}", event.0, event.1["metadata"]["name"]));
            }
        }
        Err(format!(
            "watch {path}: ended without the object; saw {seen:?}"
        ))
    }
}

/// A watch event: its type and object.
type Event = (String, Value);

/// The first complete event in a watch stream's bytes and how many bytes it took.
fn next_event(buf: &[u8], proto: bool) -> Result<Option<(Event, usize)>, String> {
    if proto {
        if buf.len() < 4 {
            return Ok(None);
        }
        let len = u32::from_be_bytes(buf[..4].try_into().unwrap()) as usize;
        if buf.len() < 4 + len {
            return Ok(None);
        }
        let event = keel_proto::decode_watch_event(&buf[..4 + len])
            .map_err(|e| format!("protobuf watch frame: {e}"))?;
        Ok(Some((event, 4 + len)))
    } else {
        let Some(end) = buf.iter().position(|&b| b == b'\n') else {
            return Ok(None);
        };
        let v: Value = serde_json::from_slice(&buf[..end])
            .map_err(|e| format!("watch line ({e}): {}", String::from_utf8_lossy(&buf[..end])))?;
        let t = v["type"].as_str().unwrap_or_default().to_string();
        Ok(Some(((t, v["object"].clone()), end + 1)))
    }
}

/// Whether `got` is the object `created`: the same, or a later version of it in which only
/// the status changed (an in-process controller, such as the flow-control one marking a
/// FlowSchema dangling, may write status between two requests, as upstream's do).
fn same_object(got: &Value, created: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.as_object_mut() {
            m.remove("status");
            // A controller's status write moves the version and adds its managedFields entry.
            if let Some(meta) = m.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("resourceVersion");
                meta.remove("managedFields");
            }
        }
        v
    };
    got == created || strip(got) == strip(created)
}

/// Whether every field `want` sets has that value in `got` (objects may hold more keys,
/// such as defaults; lists must have the same length).
fn contains(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => w
            .iter()
            .all(|(k, wv)| g.get(k).is_some_and(|gv| contains(gv, wv))),
        (Value::Array(g), Value::Array(w)) => {
            g.len() == w.len() && g.iter().zip(w).all(|(gv, wv)| contains(gv, wv))
        }
        (Value::Number(g), Value::Number(w)) => g.as_f64() == w.as_f64(),
        _ => got == want,
    }
}

fn collection_path(r: &ResourceInfo) -> String {
    let root = if r.group.is_empty() {
        "/api/v1".to_string()
    } else {
        format!("/apis/{}/{}", r.group, r.version)
    };
    if r.namespaced {
        format!("{root}/namespaces/{NAMESPACE}/{}", r.plural)
    } else {
        format!("{root}/{}", r.plural)
    }
}

/// Which representation a round trip sends and asks for.
#[derive(Clone, Copy, Debug)]
enum Wire {
    Json,
    Protobuf,
}

impl Wire {
    fn media_type(self) -> &'static str {
        match self {
            Wire::Json => JSON,
            Wire::Protobuf => PROTO,
        }
    }

    fn encode(self, obj: &Value) -> Result<Vec<u8>, String> {
        match self {
            Wire::Json => Ok(obj.to_string().into_bytes()),
            Wire::Protobuf => keel_proto::encode(obj).map_err(|e| format!("encode: {e}")),
        }
    }
}

/// Create, get, list, watch and delete one resource's fixture in one representation.
fn round_trip(
    conn: &mut Conn,
    r: &ResourceInfo,
    fixture: &Value,
    wire: Wire,
) -> Result<(), String> {
    let s = server();
    let base = collection_path(r);
    let name = fixture["metadata"]["name"].as_str().unwrap();
    let item = format!("{base}/{name}");
    let mt = wire.media_type();
    let expect_type = |resp: &Response, what: &str| -> Result<(), String> {
        if resp.content_type != mt {
            return Err(format!(
                "{what}: content type {:?}, asked for {mt}",
                resp.content_type
            ));
        }
        Ok(())
    };

    // The collection's revision before the create: the watch starts there.
    let before = conn.request("GET", &base, mt, None);
    if before.status != 200 {
        return Err(format!(
            "list before create: {}: {}",
            before.status,
            before.text()
        ));
    }
    expect_type(&before, "list")?;
    let before_rv = before.object()?["metadata"]["resourceVersion"]
        .as_str()
        .ok_or("list without resourceVersion")?
        .to_string();

    let body = wire.encode(fixture)?;
    let resp = conn.request("POST", &base, mt, Some((mt, &body)));
    if resp.status != 201 {
        return Err(format!(
            "create: {}: {}",
            resp.status,
            resp.object().map_or_else(|e| e, |v| v.to_string())
        ));
    }
    expect_type(&resp, "create")?;
    let created = resp.object()?;
    for (field, want) in [
        ("apiVersion", r.api_version()),
        ("kind", r.kind.to_string()),
    ] {
        if created[field] != json!(want) {
            return Err(format!(
                "create answered {field} {}: {created}",
                created[field]
            ));
        }
    }
    let meta = &created["metadata"];
    let namespace_ok = if r.namespaced {
        meta["namespace"] == NAMESPACE
    } else {
        meta.get("namespace").is_none()
    };
    if meta["name"] != name
        || !namespace_ok
        || !meta["uid"].is_string()
        || !meta["resourceVersion"].is_string()
    {
        return Err(format!("created metadata: {meta}"));
    }
    for (k, v) in fixture.as_object().unwrap() {
        if !["apiVersion", "kind", "metadata"].contains(&k.as_str()) && !contains(&created[k], v) {
            return Err(format!(
                "created object lost {k}: sent {v}, got {}",
                created[k]
            ));
        }
    }
    let uid = meta["uid"].clone();

    // Get: the same object, in this representation and in JSON.
    let got = conn.request("GET", &item, mt, None);
    if got.status != 200 {
        return Err(format!("get: {}: {}", got.status, got.text()));
    }
    expect_type(&got, "get")?;
    let got = got.object()?;
    if !same_object(&got, &created) {
        return Err(format!(
            "get differs from create:\n  created {created}\n  got     {got}"
        ));
    }
    if let Wire::Protobuf = wire {
        // The two reads of one version: a controller may write in between (the definitions
        // controller establishes a CustomResourceDefinition just after its create), so both
        // are read again until they show the same resourceVersion.
        let mut got = got;
        let mut as_json = conn.request("GET", &item, JSON, None).object()?;
        for _ in 0..50 {
            let rv = |v: &Value| v["metadata"]["resourceVersion"].clone();
            if rv(&got) == rv(&as_json) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
            got = conn.request("GET", &item, mt, None).object()?;
            as_json = conn.request("GET", &item, JSON, None).object()?;
        }
        let known_gap = listed(STATUS_ZERO_VALUES_MISSING, r);
        match (as_json == got, known_gap) {
            (true, false) | (false, true) => {}
            (false, false) => {
                return Err(format!(
                    "protobuf get differs from JSON get:\n  protobuf {got}\n  JSON     {as_json}"
                ))
            }
            (true, true) => {
                return Err(
                    "protobuf and JSON agree now: remove it from STATUS_ZERO_VALUES_MISSING".into(),
                )
            }
        }
    }

    // List: the collection's kind, holding the object.
    let list = conn.request("GET", &base, mt, None);
    if list.status != 200 {
        return Err(format!("list: {}: {}", list.status, list.text()));
    }
    expect_type(&list, "list")?;
    let list = list.object()?;
    if list["kind"] != json!(format!("{}List", r.kind))
        || list["apiVersion"] != json!(r.api_version())
    {
        return Err(format!("list is a {} {}", list["apiVersion"], list["kind"]));
    }
    let items = list["items"].as_array().ok_or("list without items")?;
    // Items of a protobuf list carry no apiVersion and kind (their messages have no TypeMeta).
    let mut want_item = created.clone();
    if let Wire::Protobuf = wire {
        let m = want_item.as_object_mut().unwrap();
        m.remove("apiVersion");
        m.remove("kind");
    }
    match items.iter().find(|i| i["metadata"]["uid"] == uid) {
        Some(i) if same_object(i, &want_item) => {}
        Some(i) => return Err(format!("listed item differs: {i}")),
        None => return Err(format!("list lacks the object: {list}")),
    }

    // Watch from before the create (JSON) or from any state (`resourceVersion=0`, protobuf):
    // the object ADDED, as created.
    let from = match wire {
        Wire::Json => before_rv,
        Wire::Protobuf => "0".to_string(),
    };
    let watch = format!("{base}?watch=1&resourceVersion={from}&timeoutSeconds=20");
    let (kind, obj) = Conn::watch_until(s, &watch, mt, |_, o| o["metadata"]["uid"] == uid)?;
    if kind != "ADDED" || !same_object(&obj, &created) {
        return Err(format!("watch from {from}: {kind} {obj}"));
    }

    // Delete, then gone.
    let resp = conn.request("DELETE", &item, mt, None);
    if !matches!(resp.status, 200 | 202) {
        return Err(format!("delete: {}: {}", resp.status, resp.text()));
    }
    let deadline = Instant::now() + GONE_TIMEOUT;
    loop {
        let resp = conn.request("GET", &item, JSON, None);
        match resp.status {
            404 => return Ok(()),
            200 if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            status => return Err(format!("after delete: {status}: {}", resp.text())),
        }
    }
}

/// Every resource of the release that stores objects: create, get, list, watch and delete
/// in JSON, then in protobuf. Failures are collected and reported together, by resource.
#[test]
fn every_stored_resource_round_trips_in_json_and_protobuf() {
    let s = server();
    let cat = catalog();
    let fixtures = fixtures();
    let mut conn = Conn::open(s);
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}});
    let resp = conn.request(
        "POST",
        "/api/v1/namespaces",
        JSON,
        Some((JSON, ns.to_string().as_bytes())),
    );
    assert_eq!(resp.status, 201, "{}", resp.text());

    let resources = round_trip_resources(&cat);
    assert!(
        resources.len() >= 80,
        "only {} resources round trip",
        resources.len()
    );
    let mut failures = Vec::new();
    for r in &resources {
        let Some(fixture) = fixtures.get(&(r.api_version(), r.kind.to_string())) else {
            failures.push(format!(
                "{}: no object in fixtures/release-objects.yaml",
                id(r)
            ));
            continue;
        };
        let proto = keel_proto::supports(&r.api_version(), r.kind);
        if proto == listed(NO_PROTOBUF, r) {
            failures.push(format!(
                "{}: keel_proto::supports says {proto}: update NO_PROTOBUF",
                id(r)
            ));
        }
        let wires: &[Wire] = if proto {
            &[Wire::Json, Wire::Protobuf]
        } else {
            &[Wire::Json]
        };
        for &wire in wires {
            if let Err(e) = round_trip(&mut conn, r, fixture, wire) {
                failures.push(format!("{} ({wire:?}): {e}", id(r)));
                // What a failed round trip left must not fail the next one.
                let item = format!(
                    "{}/{}",
                    collection_path(r),
                    fixture["metadata"]["name"].as_str().unwrap()
                );
                conn.request("DELETE", &item, JSON, None);
                common::eventually(GONE_TIMEOUT, || {
                    conn.request("GET", &item, JSON, None).status == 404
                });
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} resources failed:\n{}",
        failures.len(),
        resources.len(),
        failures.join("\n")
    );
}

/// Each fixture is an object of a resource the release serves (none is left over from a
/// resource the catalog dropped).
#[test]
fn every_fixture_is_a_served_resource() {
    let cat = catalog();
    let served: Vec<(String, String)> = round_trip_resources(&cat)
        .iter()
        .map(|r| (r.api_version(), r.kind.to_string()))
        .collect();
    let stale: Vec<_> = fixtures()
        .into_keys()
        .filter(|k| !served.contains(k))
        .collect();
    assert!(
        stale.is_empty(),
        "fixtures of no served resource: {stale:?}"
    );
}

/// Discovery (`/api/v1`, `/apis/<group>/<version>`) lists every resource of the catalog with
/// the catalog's kind, scope and verbs.
#[test]
fn discovery_matches_the_catalog() {
    let s = server();
    let cat = catalog();
    let mut conn = Conn::open(s);
    let mut documents: BTreeMap<String, Value> = BTreeMap::new();
    let mut failures = Vec::new();
    for r in cat.resources() {
        let path = if r.group.is_empty() {
            "/api/v1".to_string()
        } else {
            format!("/apis/{}/{}", r.group, r.version)
        };
        let doc = documents.entry(path.clone()).or_insert_with(|| {
            let resp = conn.request("GET", &path, JSON, None);
            assert_eq!(resp.status, 200, "{path}: {}", resp.text());
            resp.object().unwrap()
        });
        let Some(entry) = doc["resources"]
            .as_array()
            .and_then(|rs| rs.iter().find(|e| e["name"] == r.plural))
        else {
            failures.push(format!("{}: not in {path}", id(r)));
            continue;
        };
        let want = json!({"kind": r.kind, "namespaced": r.namespaced, "verbs": r.verbs});
        let got = json!({"kind": entry["kind"], "namespaced": entry["namespaced"], "verbs": entry["verbs"]});
        if got != want {
            failures.push(format!("{}: discovery {got}, catalog {want}", id(r)));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
