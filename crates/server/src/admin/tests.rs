//! The admin routes and the dashboard's history, on a server context without sockets.

use super::*;
use crate::settings::Settings;
use mrcache_engine::{Engine, Key, StoreArgs};

fn ctx() -> ServerContext {
    let settings = Settings::default();
    let engine = Engine::new(settings.engine_config()).unwrap();
    ServerContext::new(engine, settings, 1)
}

fn get(ctx: &ServerContext, history: &History, url: &str) -> (u16, &'static str, String) {
    route(ctx, history, "GET", url)
}

#[test]
fn the_dashboard_is_served_whole_and_fetches_nothing_from_elsewhere() {
    let ctx = ctx();
    let history = History::new();
    let (status, kind, page) = get(&ctx, &history, "/");
    assert_eq!((status, kind), (200, "text/html; charset=utf-8"));
    assert!(page.contains("/dashboard.js") && page.contains("/dashboard.css"));
    assert_eq!(get(&ctx, &history, "/dashboard.js").0, 200);
    assert_eq!(get(&ctx, &history, "/dashboard.css").0, 200);
    for text in [DASHBOARD_HTML, DASHBOARD_JS, DASHBOARD_CSS] {
        // The one absolute URL is SVG's namespace name, which is never fetched.
        let rest = text.replace("http://www.w3.org/2000/svg", "");
        for outside in ["http://", "https://", "//cdn", "@import", "url("] {
            assert!(!rest.contains(outside), "{outside} in the dashboard");
        }
    }
    for endpoint in ["/mrc", "/history"] {
        assert!(DASHBOARD_JS.contains(endpoint), "the page reads {endpoint}");
    }
    assert_eq!(route(&ctx, &history, "POST", "/").0, 405);
}

#[test]
fn history_keeps_a_bounded_ring_of_deltas() {
    let ctx = ctx();
    let mut history = History::new();
    let clock = ctx.clock();
    history.sample(&ctx);
    let key = Key::default_tenant(b"k");
    ctx.engine.store(&StoreArgs::set(key, b"value"), clock);
    for _ in 0..3 {
        ctx.engine.get(key, clock, |_| ());
    }
    ctx.engine
        .get(Key::default_tenant(b"absent"), clock, |_| ());
    history.sample(&ctx);
    let last = history.samples().back().unwrap();
    assert_eq!((last.hits, last.misses), (3, 1));
    assert_eq!(last.hit_ratio, Some(0.75));
    assert_eq!(last.tenants.len(), 1, "the default tenant");
    assert_eq!((last.tenants[0].hits, last.tenants[0].misses), (3, 1));
    assert!(
        !last.class_pages.is_empty(),
        "the stored item's class holds a page"
    );
    history.sample(&ctx);
    let quiet = history.samples().back().unwrap();
    assert_eq!((quiet.hits, quiet.misses, quiet.hit_ratio), (0, 0, None));
    for _ in 0..history::CAPACITY + 10 {
        history.sample(&ctx);
    }
    assert_eq!(history.samples().len(), history::CAPACITY);
    let (status, kind, json) = get(&ctx, &history, "/history");
    assert_eq!((status, kind), (200, "application/json"));
    let parsed: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(parsed["capacity"], history::CAPACITY);
    assert_eq!(
        parsed["samples"].as_array().unwrap().len(),
        history::CAPACITY
    );
}

#[test]
fn history_samples_once_an_interval() {
    let ctx = ctx();
    let mut history = History::new();
    let start = Instant::now();
    history.poll(&ctx, start);
    history.poll(&ctx, start + history::INTERVAL / 2);
    assert_eq!(history.samples().len(), 1);
    history.poll(&ctx, start + history::INTERVAL);
    assert_eq!(history.samples().len(), 2);
}
