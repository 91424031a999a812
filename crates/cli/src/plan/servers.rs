//! Reading each node's curves from a live `mrcached`, from one of two places:
//!
//! - `HOST:PORT`, the memcached port an operator (and twemproxy) already has: `stats settings` for the
//!   page size, then `stats mrc` for every slab class's curve (`STAT <class>:mrc_pages
//!   pages:miss_ratio,...`) and request count. Those curves stop at the node's memory (`page_limit`).
//! - `http://HOST:PORT`, the admin port: `GET /mrc` (JSON), whose `curve_items` run to each class's whole
//!   working set, converted to pages by the class's chunks per page. Past its end a curve is flat for
//!   certain, so plans beyond today's memory are predictions, not lower bounds.
//!
//! Tenant curves are left out: the class curves cover every tenant's traffic.
//!
//! Every read and write has a timeout, so a node that stops answering ends the plan with an error naming
//! it, never a hang.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use mrcache_engine::EngineConfig;

use super::cluster::{ClassCurve, NodeCurves};

/// How long to wait to connect, and for each reply.
const TIMEOUT: Duration = Duration::from_secs(10);
/// A `stats` reply longer than this is not a memcached server's.
const MAX_REPLY_BYTES: usize = 16 << 20;

/// Reads node `address`: `HOST:PORT` (memcached port) or `http://HOST:PORT` (admin port).
pub fn read_node(address: &str) -> Result<NodeCurves, String> {
    let fail = |e: std::io::Error| format!("{address}: {e}");
    if let Some(admin) = address.strip_prefix("http://") {
        let admin = admin.trim_end_matches('/');
        let body = http_get(&connect(admin).map_err(fail)?, admin, "/mrc").map_err(fail)?;
        let report: serde_json::Value =
            serde_json::from_str(&body).map_err(|e| format!("{address}/mrc: {e}"))?;
        return parse_report(address, &report).map_err(|e| format!("{address}/mrc: {e}"));
    }
    let mut conn = BufReader::new(connect(address).map_err(fail)?);
    let settings = stats(&mut conn, "stats settings").map_err(fail)?;
    let mrc = stats(&mut conn, "stats mrc").map_err(fail)?;
    let _ = conn.get_mut().write_all(b"quit\r\n");
    parse_node(address, &settings, &mrc).map_err(|e| format!("{address}: {e}"))
}

fn connect(address: &str) -> std::io::Result<TcpStream> {
    let addr = address
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| std::io::Error::other("no address"))?;
    let stream = TcpStream::connect_timeout(&addr, TIMEOUT)?;
    stream.set_read_timeout(Some(TIMEOUT))?;
    stream.set_write_timeout(Some(TIMEOUT))?;
    Ok(stream)
}

/// The body of `GET path` (HTTP/1.0: the server closes the connection after the body).
fn http_get(stream: &TcpStream, host: &str, path: &str) -> std::io::Result<String> {
    use std::io::Read;
    let mut stream = stream;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n")?;
    let mut reply = Vec::new();
    stream
        .take(MAX_REPLY_BYTES as u64 + 1)
        .read_to_end(&mut reply)?;
    let reply = String::from_utf8(reply).map_err(std::io::Error::other)?;
    let (head, body) = reply
        .split_once("\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("not an HTTP reply"))?;
    let status = head.lines().next().unwrap_or("");
    if status.split(' ').nth(1) != Some("200") {
        return Err(std::io::Error::other(format!("GET {path}: {status}")));
    }
    Ok(body.to_owned())
}

/// A node from the admin port's `/mrc` report.
fn parse_report(name: &str, report: &serde_json::Value) -> Result<NodeCurves, String> {
    let field = |v: &serde_json::Value, key: &str| {
        v.get(key)
            .and_then(serde_json::Value::as_f64)
            .ok_or_else(|| format!("no number `{key}`"))
    };
    if report.get("profiling") != Some(&serde_json::Value::Bool(true)) {
        return Err(
            "profiling is off (`-o mrc_sample_rate=0`): it has no curves to plan from".into(),
        );
    }
    let mut classes = Vec::new();
    for class in report
        .get("classes")
        .and_then(serde_json::Value::as_array)
        .ok_or("no `classes`")?
    {
        let chunks_per_page = field(class, "chunks_per_page")?.max(1.0);
        let mut points: Vec<(f64, f64)> = Vec::new();
        for point in class
            .get("curve_items")
            .and_then(serde_json::Value::as_array)
            .ok_or("a class without `curve_items`")?
        {
            let pair = point.as_array().filter(|p| p.len() == 2);
            let (items, ratio) = pair
                .and_then(|p| Some((p[0].as_f64()?, p[1].as_f64()?)))
                .ok_or_else(|| format!("bad curve point {point}"))?;
            let pages = items / chunks_per_page;
            if pages <= 0.0 || points.last().is_some_and(|&(p, _)| p >= pages) {
                return Err(format!("curve sizes not ascending at {point}"));
            }
            points.push((pages, ratio));
        }
        classes.push(ClassCurve {
            requests: field(class, "requests")? as u64,
            points,
        });
    }
    Ok(NodeCurves {
        name: name.to_owned(),
        page_size_bytes: field(report, "page_size_bytes")? as u64,
        page_limit: field(report, "page_limit")? as usize,
        classes,
        curves_reach_working_set: true,
    })
}

/// `STAT name value` pairs of one `stats` command, up to `END`.
fn stats(conn: &mut BufReader<TcpStream>, command: &str) -> std::io::Result<Vec<(String, String)>> {
    conn.get_mut()
        .write_all(format!("{command}\r\n").as_bytes())?;
    let mut pairs = Vec::new();
    let mut read = 0;
    loop {
        let mut line = String::new();
        let n = conn.read_line(&mut line)?;
        read += n;
        let line = line.trim_end();
        if n == 0 || read > MAX_REPLY_BYTES {
            return Err(std::io::Error::other(format!(
                "`{command}`: the reply ended before END"
            )));
        }
        if line == "END" {
            return Ok(pairs);
        }
        let Some(stat) = line.strip_prefix("STAT ") else {
            return Err(std::io::Error::other(format!(
                "`{command}` answered {line:?}: is this an mrcached memcached port?"
            )));
        };
        let (name, value) = stat.split_once(' ').unwrap_or((stat, ""));
        pairs.push((name.to_owned(), value.to_owned()));
    }
}

/// A node from its `stats settings` and `stats mrc` replies.
fn parse_node(
    name: &str,
    settings: &[(String, String)],
    mrc: &[(String, String)],
) -> Result<NodeCurves, String> {
    let lookup = |pairs: &[(String, String)], key: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .ok_or_else(|| format!("no `{key}` in its stats"))
    };
    let item_size_max_bytes: usize = number(&lookup(settings, "item_size_max")?)?;
    // The page size rule of the server itself (1 MiB, or -I when larger).
    let page_size_bytes = EngineConfig {
        item_size_max_bytes,
        ..EngineConfig::default()
    }
    .page_size_bytes() as u64;
    if lookup(mrc, "profiling")? != "1" {
        return Err(
            "profiling is off (`-o mrc_sample_rate=0`): it has no curves to plan from".into(),
        );
    }
    let page_limit: usize = number(&lookup(mrc, "page_limit")?)?;
    // Class lines come grouped by class, `requests` before `mrc_pages`.
    let mut classes = Vec::new();
    let mut requests = None;
    for (key, value) in mrc {
        let Some((class, field)) = key.split_once(':') else {
            continue;
        };
        if class.parse::<u8>().is_err() {
            continue; // tenant:<name>:<field>
        }
        match field {
            "requests" => requests = Some(number::<u64>(value)?),
            "mrc_pages" => classes.push(ClassCurve {
                requests: requests
                    .take()
                    .ok_or_else(|| format!("class {class}: a curve without `requests`"))?,
                points: parse_curve(value).map_err(|e| format!("class {class}: {e}"))?,
            }),
            _ => {}
        }
    }
    Ok(NodeCurves {
        name: name.to_owned(),
        page_size_bytes,
        page_limit,
        classes,
        curves_reach_working_set: false,
    })
}

/// `pages:miss_ratio,...`, pages ascending.
fn parse_curve(text: &str) -> Result<Vec<(f64, f64)>, String> {
    let mut points = Vec::new();
    for pair in text.split(',').filter(|p| !p.is_empty()) {
        let (pages, ratio) = pair
            .split_once(':')
            .ok_or_else(|| format!("bad curve point {pair:?}"))?;
        let point: (f64, f64) = (number(pages)?, number(ratio)?);
        if points
            .last()
            .is_some_and(|&(p, _): &(f64, f64)| p >= point.0)
            || point.0 <= 0.0
        {
            return Err(format!("curve pages not ascending at {pair:?}"));
        }
        points.push(point);
    }
    Ok(points)
}

fn number<T: std::str::FromStr>(text: &str) -> Result<T, String> {
    text.parse().map_err(|_| format!("not a number: {text:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(text: &str) -> Vec<(String, String)> {
        text.lines()
            .map(|l| {
                let (k, v) = l.split_once(' ').unwrap();
                (k.to_owned(), v.to_owned())
            })
            .collect()
    }

    #[test]
    fn a_stats_mrc_reply_becomes_class_curves() {
        let settings = pairs("maxbytes 67108864\nitem_size_max 2097152");
        let mrc = pairs(
            "profiling 1\nprofiler_memory_bytes 100\npage_limit 32\n\
             3:chunk_size 152\n3:pages 4\n3:items 100\n3:requests 500\n3:sampling_rate 1\n\
             3:mrc_pages 1:0.5000,2:0.2500,32:0.1000\n\
             7:chunk_size 600\n7:requests 0\n7:mrc_pages 1:1.0000\n\
             tenant:a:requests 9\ntenant:a:mrc_pages 1:0.1",
        );
        let node = parse_node("n1", &settings, &mrc).unwrap();
        assert_eq!(
            node.page_size_bytes,
            2 << 20,
            "-I above 1 MiB sets the page"
        );
        assert_eq!(node.page_limit, 32);
        assert_eq!(node.classes.len(), 2);
        assert_eq!(node.classes[0].requests, 500);
        assert_eq!(
            node.classes[0].points,
            vec![(1.0, 0.5), (2.0, 0.25), (32.0, 0.1)]
        );
        assert_eq!(node.classes[1].requests, 0);
    }

    #[test]
    fn an_admin_report_becomes_class_curves_in_pages() {
        let report: serde_json::Value = serde_json::from_str(
            r#"{"profiling":true,"shards":1,"page_size_bytes":1048576,"page_limit":16,
                "profiler_memory_bytes":0,"tenants":[],
                "classes":[{"class":5,"chunk_size_bytes":240,"chunks_per_page":100,"pages":2,
                  "items":150,"requests":900,"sampling_rate":1.0,
                  "curve_items":[[50,0.8],[100,0.5],[4000,0.1]],"curve_pages":[[1,0.5]]}]}"#,
        )
        .unwrap();
        let node = parse_report("http://n", &report).unwrap();
        assert_eq!((node.page_size_bytes, node.page_limit), (1 << 20, 16));
        assert!(node.curves_reach_working_set);
        assert_eq!(node.classes[0].requests, 900);
        assert_eq!(
            node.classes[0].points,
            vec![(0.5, 0.8), (1.0, 0.5), (40.0, 0.1)]
        );
        let off: serde_json::Value = serde_json::from_str(r#"{"profiling":false}"#).unwrap();
        assert!(parse_report("n", &off).is_err());
    }

    #[test]
    fn bad_replies_are_errors() {
        let settings = pairs("item_size_max 1048576");
        let off = pairs("profiling 0\npage_limit 8");
        assert!(parse_node("n", &settings, &off)
            .unwrap_err()
            .contains("profiling is off"));
        let unordered = pairs("profiling 1\npage_limit 8\n1:requests 3\n1:mrc_pages 2:0.5,1:0.7");
        assert!(parse_node("n", &settings, &unordered).is_err());
        assert!(parse_node("n", &[], &off).is_err());
    }
}
