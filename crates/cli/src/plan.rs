//! `mrcache plan`: from one profiling pass over a workload or trace, predict at each memory size the miss
//! ratio of memcached's default (demand-filled) allocation (LAMA §3.5 eq. 6) and of the optimal allocation
//! over the exact per-class curves (LAMA Algorithm 1, the theoretical upper bound of §5.6), without
//! replaying the cache once per size.
//!
//! With `--server HOST:PORT ...` it plans a cluster instead, from the curves the live nodes report
//! ([`servers`]), under the model in [`cluster`]: the hit ratio at other total memory sizes and node
//! counts, and the memory a target hit ratio needs ([`cluster_plan`] prints and draws it).

mod cluster;
mod cluster_plan;
mod servers;

use std::io::Write;

use clap::Args;
use mrcache_engine::config::DEFAULT_MEMORY_LIMIT_BYTES;
use mrcache_engine::ItemAccounting;
use mrcache_sim::sweep::{parse_bytes, parse_range};
use mrcache_sim::{steady_state_first_request, MemoryPlan, UpperBoundProfiler};
use mrcache_units::format_size;
use mrcache_workload::synth::WORKLOAD_HELP;

use crate::input::{take_trace_error, SlabArgs, SourceArgs, TraceErrorSlot};

/// The item accounting without `--item-accounting`: memcached's, whose default allocation the plan
/// models.
const PLAN_ITEM_ACCOUNTING: ItemAccounting = ItemAccounting::Memcached;

/// The share of the run `mrcache sim` calls its steady state: the last half of the windows.
const STEADY_STATE_FRACTION: f64 = 0.5;

#[derive(Args, Debug)]
#[command(
    after_help = WORKLOAD_HELP,
    mut_arg("workload", |a| a.required_unless_present_any(["trace", "servers"]))
)]
pub struct PlanArgs {
    #[command(flatten)]
    source: SourceArgs,
    #[command(flatten)]
    cluster: cluster_plan::ClusterArgs,
    /// Memory sizes: one size (64MiB) or FROM..TO:STEP (32MiB..256MiB:32MiB). With --server, the
    /// cluster's total memory (default: a quarter of today's total to twice it, in quarters).
    #[arg(long)]
    memory: Option<String>,
    /// Requests per window; the steady state is the last half of the windows, as in `mrcache sim`.
    #[arg(long, default_value_t = 1_000_000)]
    window_requests: u64,
    #[command(flatten)]
    slab: SlabArgs,
    /// Also print the pages per slab class of both allocations.
    #[arg(long)]
    allocation: bool,
    /// Print one JSON array of per-size plans (allocations included) instead of text; with --server, one
    /// JSON object of the cluster's predictions.
    #[arg(long)]
    json: bool,
}

pub(crate) fn parse_memories(text: &str) -> Result<Vec<u64>, String> {
    if text.contains("..") {
        parse_range(text)
    } else {
        parse_bytes(text).map(|m| vec![m])
    }
    .map_err(|e| format!("--memory {e}"))
}

pub fn run(args: &PlanArgs) -> Result<(), String> {
    if !args.cluster.servers.is_empty() {
        let memories = args.memory.as_deref().map(parse_memories).transpose()?;
        return cluster_plan::run(&args.cluster, memories, args.json);
    }
    if let Some(option) = args.cluster.stray_option() {
        return Err(format!(
            "{option} plans a cluster: give the nodes with --server"
        ));
    }
    let memories = parse_memories(
        args.memory
            .as_deref()
            .unwrap_or(&format_size(DEFAULT_MEMORY_LIMIT_BYTES)),
    )?;
    if args.window_requests == 0 {
        return Err("--window-requests must be positive".into());
    }
    for &memory in &memories {
        args.slab
            .engine_config(memory, PLAN_ITEM_ACCOUNTING)?
            .validate()
            .map_err(|e| e.to_string())?;
    }
    let trace_error = TraceErrorSlot::default();
    // A first pass only counts the requests, to place the steady state before profiling.
    let requests = args.source.stream(&trace_error)?.count() as u64;
    take_trace_error(&trace_error)?;
    let steady_state_from =
        steady_state_first_request(requests, args.window_requests, STEADY_STATE_FRACTION);
    let config = args.slab.engine_config(memories[0], PLAN_ITEM_ACCOUNTING)?;
    let profile = UpperBoundProfiler::profile(
        &config,
        steady_state_from,
        args.source.stream(&trace_error)?,
    );
    take_trace_error(&trace_error)?;
    let plans: Vec<MemoryPlan> = memories.iter().map(|&m| profile.plan(m)).collect();
    let out = &mut std::io::stdout().lock();
    let io = |e: std::io::Error| e.to_string();
    if args.json {
        let text = serde_json::to_string(&plans).map_err(|e| e.to_string())?;
        writeln!(out, "{text}").map_err(io)?;
        return Ok(());
    }
    writeln!(
        out,
        "# {}: {requests} requests, steady state from request {steady_state_from}",
        args.source.name()
    )
    .map_err(io)?;
    writeln!(out, "memory_mib  pages  cold_start_requests  default_miss_ratio  default_steady_state  upper_bound_miss_ratio  upper_bound_steady_state").map_err(io)?;
    for p in &plans {
        let cold_start = p
            .cold_start_accesses
            .map_or_else(|| "never-full".to_string(), |m| format!("{m:.0}"));
        writeln!(
            out,
            "{:>10}  {:>5}  {:>19}  {:>18.4}  {:>20.4}  {:>22.4}  {:>24.4}",
            p.memory_bytes >> 20,
            p.total_pages,
            cold_start,
            p.default.miss_ratio,
            p.default.steady_state_miss_ratio,
            p.upper_bound.miss_ratio,
            p.upper_bound.steady_state_miss_ratio
        )
        .map_err(io)?;
    }
    if args.allocation {
        writeln!(
            out,
            "pages per class (class:pages, classes with none left out)"
        )
        .map_err(io)?;
        for p in &plans {
            for (name, pages) in [
                ("default", &p.default.pages),
                ("upper_bound", &p.upper_bound.pages),
            ] {
                let listed: Vec<String> = pages
                    .iter()
                    .enumerate()
                    .filter(|(_, &n)| n > 0)
                    .map(|(i, n)| format!("{}:{n}", i + 1))
                    .collect();
                writeln!(
                    out,
                    "{:>6} MiB  {name:<11}  {}",
                    p.memory_bytes >> 20,
                    listed.join(" ")
                )
                .map_err(io)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_memories;

    #[test]
    fn memory_is_one_size_or_a_range() {
        assert_eq!(parse_memories("64MiB").unwrap(), vec![64 << 20]);
        assert_eq!(
            parse_memories("32MiB..96MiB:32MiB").unwrap(),
            vec![32 << 20, 64 << 20, 96 << 20]
        );
        assert!(parse_memories("lots").is_err());
    }
}
