//! What a simulation reports: totals, per-window series and the allocation over time, serialisable as the
//! JSON object `mrcache sim --json` prints.

use serde::Serialize;

/// Pages held by one slab class.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClassAllocation {
    /// The class id (1-based, as memcached numbers them).
    pub class: u8,
    /// Its chunk size.
    pub chunk_size_bytes: usize,
    /// Pages it holds.
    pub pages: usize,
    /// Items it holds.
    pub items: usize,
}

/// One window of `window_requests` requests.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Window {
    /// Requests before the window ended.
    pub end_request: u64,
    /// GETs in the window.
    pub gets: u64,
    /// GET misses in the window.
    pub misses: u64,
    /// GET misses over GETs in this window.
    pub miss_ratio: f64,
    /// Pages per class (index = class - 1) at the end of the window.
    pub pages: Vec<usize>,
    /// Pages moved between classes in the window.
    pub page_moves: u64,
    /// Per workload tenant, when the run has tenants with memory of their own.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tenants: Vec<TenantWindow>,
}

/// One tenant in one window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TenantWindow {
    /// The workload's tenant index.
    pub tenant: u16,
    /// Its GETs.
    pub gets: u64,
    /// Its GET misses.
    pub misses: u64,
    /// Misses over GETs.
    pub miss_ratio: f64,
    /// Pages of its own pool at the end of the window (none when it shares pool 0 with others).
    pub pages: Option<usize>,
    /// The arbiter's target for its pool.
    pub target_pages: Option<usize>,
}

/// One tenant over the whole run: its counts over the run and pages at the end, and its reserve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TenantReport {
    /// Its counts over the whole run and its pages at the end.
    #[serde(flatten)]
    pub totals: TenantWindow,
    /// Its reserve, when it has memory of its own.
    pub reserved_pages: Option<usize>,
    /// Dynacache's miss entropy (bits) of its own pool over the run: misses (stores of absent keys) per
    /// slab class as a distribution; `None` when it shares pool 0.
    pub miss_entropy: Option<f64>,
}

/// The whole run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimReport {
    /// The slab policy's spec.
    pub policy: String,
    /// Dynacache's miss entropy (bits) over the run: misses (stores of absent keys) per slab class, all
    /// pools together.
    pub miss_entropy: f64,
    /// The memory limit.
    pub memory_bytes: u64,
    /// Requests replayed.
    pub requests: u64,
    /// GETs among them.
    pub gets: u64,
    /// GET misses (the papers' misses).
    pub misses: u64,
    /// GET misses over GETs.
    pub miss_ratio: f64,
    /// SETs, the workload's and those after a miss.
    pub sets: u64,
    /// Items evicted.
    pub evictions: u64,
    /// Pages moved between classes.
    pub page_moves: u64,
    /// Rounds the slab policy ran.
    pub rounds: u64,
    /// For curve-driven policies: mean |predicted - observed| miss ratio of the windows between rounds
    /// (the prediction a round makes for the allocation it chose, against what the next window saw).
    pub mean_prediction_error: Option<f64>,
    /// For the upper bound and the dynamic oracle: the GET miss ratio the exact curves of the first pass
    /// predict for the allocation(s) replayed (the oracle's: every window at its best allocation, with
    /// no warm-up cost): the model's bound, beside the replay's `miss_ratio`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_miss_ratio: Option<f64>,
    /// Mean modelled response time of a GET (hit time or miss penalty by item size), µs.
    pub mean_response_us: f64,
    /// Every window, in order.
    pub windows: Vec<Window>,
    /// Final pages per class, for classes that hold any.
    pub allocation: Vec<ClassAllocation>,
    /// The tenant arbiter with its parameters, when the run has tenants with memory of their own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant_policy: Option<String>,
    /// Rounds the tenant arbiter ran.
    pub arbiter_rounds: u64,
    /// Per workload tenant, final (when the run has tenants with memory of their own).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tenants: Vec<TenantReport>,
    /// Log layout with `--log-choose`: the chooser's state at the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chooser: Option<ChooserSummary>,
}

/// The log's policy chooser at the end of a run (`mrcache_engine::ChooserReport`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChooserSummary {
    /// The policy running at the end.
    pub current: String,
    /// Switches over the run.
    pub switches: u64,
    /// Each candidate: its name, its miniature's sampled GETs and miss ratio.
    pub candidates: Vec<(String, u64, f64)>,
}

impl SimReport {
    /// Miss ratio over the last `fraction` of the windows: the steady state.
    pub fn steady_state_miss_ratio(&self, fraction: f64) -> f64 {
        let n = self.windows.len();
        let skip = n - ((n as f64 * fraction).ceil() as usize).clamp(1, n.max(1));
        let (gets, misses) = self.windows[skip..]
            .iter()
            .fold((0u64, 0u64), |(g, m), w| (g + w.gets, m + w.misses));
        if gets == 0 {
            0.0
        } else {
            misses as f64 / gets as f64
        }
    }
}

/// The index of the first request of [`SimReport::steady_state_miss_ratio`]'s last `fraction` of the
/// windows, for a run of `requests` in windows of `window_requests` (the last one possibly partial).
pub fn steady_state_first_request(requests: u64, window_requests: u64, fraction: f64) -> u64 {
    let n = requests.div_ceil(window_requests.max(1)).max(1) as usize;
    let skip = n - ((n as f64 * fraction).ceil() as usize).clamp(1, n);
    skip as u64 * window_requests
}

pub(crate) fn ratio(num: u64, den: u64) -> f64 {
    if den == 0 {
        0.0
    } else {
        num as f64 / den as f64
    }
}
