//! `mrcache sim`: replay a synthetic workload or a trace through the real engine under a logical clock,
//! at one memory size or a sweep, and report numbers, JSON, CSV and figures.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use mrcache_engine::config::DEFAULT_MEMORY_LIMIT_BYTES;
use mrcache_engine::{EngineConfig, LogPolicy, MemoryLayout, Ranking, TenantId};
use mrcache_policy::arbitrate::ArbitratedTenant;
use mrcache_sim::sweep::{parse_bytes, parse_range, sweep, SweepPoint};
use mrcache_sim::upper_bound::{oracle_windows, UpperBoundProfiler};
use mrcache_sim::{
    SimConfig, SimDefaults, SimError, SimReport, Simulator, SlabPolicy, TenantSetup,
};
use mrcache_units::format_size;
use mrcache_workload::synth::WORKLOAD_HELP;

use crate::figures::{draw, Chart, Series};
use crate::input::{take_trace_error, SlabArgs, SourceArgs, Stream, TraceErrorSlot};
use crate::progress::{self, Counted, Progress};

mod plots;
use plots::{draw_pages, plot_tenants};

#[derive(Args, Debug)]
#[command(after_help = WORKLOAD_HELP)]
pub struct SimArgs {
    #[command(flatten)]
    source: SourceArgs,
    /// Cache memory (memcached's -m), e.g. 64MiB, 1GiB; or P% of the workload's distinct-object bytes
    /// under the --item-accounting (every distinct item in its slab chunk), found by a first pass.
    #[arg(long, default_value_t = format_size(DEFAULT_MEMORY_LIMIT_BYTES))]
    memory: String,
    /// Memory sweep FROM..TO:STEP, e.g. 128MiB..1GiB:64MiB (replaces --memory).
    #[arg(long)]
    sweep: Option<String>,
    /// Slab policies, comma-separated, each NAME[:key=value,...]: memcached (demand-filled, no moves),
    /// automove and automove2 (memcached 1.6's slab_automove=1 and 2), twemcache (random page eviction),
    /// psa (periodic slab allocation), facebook (age balancing), lama-mr and lama-art (LAMA, minimising
    /// misses or response time), dynacache (Dynacache: each pool's hits maximised over concave fits of its
    /// classes' hit curves, only while its miss entropy is at least min_entropy bits), upper-bound (LAMA
    /// §5.6: the optimal fixed allocation from exact curves of a first pass), oracle (the dynamic oracle:
    /// at the start of every window of N requests, default --window-requests, pages move to that
    /// window's best allocation by the exact curves of a first pass; a clairvoyant reference, not a
    /// policy a server can run; its report adds model_miss_ratio, the curves' own total). Parameters:
    /// automove:window=,ratio=; psa:misses=; facebook:misses=,ratio=;
    /// lama-*:interval=auto|N,min_interval=,max_interval=,moves=,granularity=auto|r,threshold=,period=,pace=true|false;
    /// lama-art also hit_us=,miss_us=,miss_us_per_kib=;
    /// dynacache:interval=N,period=,moves=,threshold=,min_entropy=BITS,objective=hits|bytes,guard=noise|model;
    /// oracle:window=N,horizon=H (each window's allocation minimises misses over it and the H-1
    /// windows after it, the warm-up of gained pages counted; default 4),past=P (the online oracle:
    /// each allocation from the exact curves of the P windows before it, none after, the first window
    /// demand-filled: what a policy with perfect curves of the past could reach).
    /// Repeat the flag or separate with commas. Default: lama-mr, the server's slab policy (memcached
    /// with --memcached-defaults). The policies run in the slab layout only, so --policy needs
    /// --layout slab (or slab,log) unless --memcached-defaults makes slab the default.
    #[arg(long)]
    policy: Vec<String>,
    /// Memory layouts to compare, comma-separated: slab (memcached's slab classes, run with every
    /// --policy) and log (Memshare's log-structured memory: segments per tenant, a cleaner, no classes;
    /// run once per tenant arbiter, reported as policy `log`). E.g. --layout slab,log. Default: log,
    /// the server's (slab with --memcached-defaults).
    #[arg(long)]
    layout: Vec<String>,
    /// Log layout: how the cleaner ranks items: density (the default: accesses per byte, so it keeps
    /// the items that earn the most hits for their memory; items unused for eight cleaning cycles go
    /// first), lru, lfu or slru (segmented LRU).
    #[arg(long, default_value_t = Ranking::default().name().to_string())]
    ranking: String,
    /// Log layout: segments one cleaning pass takes (Memshare's n; survivors go into n - 1), 2-16.
    #[arg(long, default_value_t = mrcache_engine::config::DEFAULT_LOG_CLEAN_SEGMENTS)]
    clean_segments: usize,
    /// Log layout: remember evicted keys (a ghost), so a key written again soon after its eviction
    /// starts with one access counted and outranks keys written once: on or off (the default, as the
    /// server).
    #[arg(long, default_value = "off", value_parser = ["on", "off"])]
    log_ghost: String,
    /// Log layout: the share of each pool's segments where keys written for the first time wait on
    /// probation (S3-FIFO's small queue): cleaning it keeps only the keys read since, moving them to
    /// the main queue; the rest are evicted into the ghost, and a key the ghost recalls enters the
    /// main queue directly. 0 (the default) for none; S3-FIFO uses 0.1. Turns the ghost on.
    #[arg(long, default_value_t = 0.0)]
    log_probation: f64,
    /// Log layout: let the cache choose its eviction policy among these, separated by , or / (each a
    /// ranking, or a ranking with `+p` for a tenth of the segments on probation, `+p0.05` for another
    /// share): it runs a miniature simulation of each on a sample of the keys and switches to the one
    /// that misses least. The first is the starting policy (it replaces --ranking and
    /// --log-probation). E.g. density,clock+p.
    #[arg(long, value_delimiter = ',')]
    log_choose: Vec<String>,
    /// The share of keys (and of memory, each) the chooser's miniatures take.
    #[arg(long, default_value_t = mrcache_engine::config::DEFAULT_LOG_CHOOSE_RATE)]
    log_choose_rate: f64,
    /// Tenant arbiters (the upper memory level), each NAME[:key=value,...]: static (reserve plus a share
    /// of the rest by weight), pooled (one LRU per class for everyone), memshare (shadow-queue credits;
    /// credit=,shadow=,tax=,idle=,interval=,seed=), mpart (DP over tenant MRCs; interval=,step=,
    /// max_change=,min_requests=), lama-qos (least memory meeting each target, the rest optimised;
    /// interval=,max_change=,margin=). Needs --tenant; every arbiter runs with every slab policy.
    /// Default with --tenant: mpart, the server's (none with --memcached-defaults: name one).
    #[arg(long)]
    tenant_policy: Vec<String>,
    /// A tenant with memory of its own: ID[:reserved=BYTES,max=BYTES,initial=BYTES,target=HIT_RATIO,
    /// weight=W], e.g. 1:reserved=64MiB,target=0.85. Repeat for each; workload tenants not given share
    /// pool 0. Tenants start from their `initial` memory when all give one, else from their reserve plus
    /// a share of the rest by weight.
    #[arg(long)]
    tenant: Vec<String>,
    /// Initial sampling rate of the per-class MRC profilers that curve-driven policies read (default:
    /// the server's, 1: every key the profilers can hold). Each class's sampler lowers its rate where
    /// its keys outgrow its share of the profilers' memory (--mrc-memory-share).
    #[arg(long)]
    mrc_sample_rate: Option<f64>,
    /// Share of the memory the profilers may hold, divided among the classes in use. Default: 0.01,
    /// the server's, to see the curves a live server has (0.1 with --memcached-defaults, which
    /// profiles every class of a cache of a few MiB).
    #[arg(long)]
    mrc_memory_share: Option<f64>,
    /// The simulator's former defaults, memcached's model, in one flag: --layout slab --policy
    /// memcached --item-accounting memcached --mrc-memory-share 0.1, and no default --tenant-policy.
    /// Without it every default is the server's (mrcached with no flags). Flags given override either.
    #[arg(long)]
    memcached_defaults: bool,
    /// Requests per reported window.
    #[arg(long, default_value_t = 1_000_000)]
    window_requests: u64,
    /// Requests per logical second (drives expiry and once-a-second policies).
    #[arg(long, default_value_t = 100_000)]
    requests_per_second: u64,
    #[command(flatten)]
    slab: SlabArgs,
    /// Print one JSON object (per run) instead of text.
    #[arg(long)]
    json: bool,
    /// With --sweep: write policy,memory_bytes,miss_ratio,steady_state_miss_ratio,page_moves here.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Figure (.svg/.png): miss ratio vs memory for a sweep, miss ratio over time otherwise.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Figure (.svg/.png) of pages per slab class over time (single memory size, first policy).
    #[arg(long)]
    plot_allocation: Option<PathBuf>,
    /// Figures (.svg/.png) of each tenant's pages over time, one per run with tenants: FILE's name with
    /// the arbiter's appended (pages-mpart.svg, pages-memshare.svg, ...; a second run of one arbiter
    /// is pages-mpart-2.svg).
    #[arg(long)]
    plot_tenants: Option<PathBuf>,
    /// Parallel runs for a sweep (default: the machine's cores).
    #[arg(long)]
    threads: Option<usize>,
    /// No progress bar (it is drawn on stderr only when stderr is a terminal).
    #[arg(long, short)]
    quiet: bool,
}

impl SimArgs {
    /// The preset the flags not given take: the server's, or memcached's model.
    fn defaults(&self) -> SimDefaults {
        if self.memcached_defaults {
            SimDefaults::MEMCACHED
        } else {
            SimDefaults::MRCACHED
        }
    }

    /// `--mrc-memory-share`, or the preset's.
    fn mrc_memory_share(&self) -> f64 {
        self.mrc_memory_share
            .unwrap_or(self.defaults().profile_memory_share)
    }

    fn base_config(&self) -> Result<SimConfig, String> {
        if self.window_requests == 0 || self.requests_per_second == 0 {
            return Err("--window-requests and --requests-per-second must be positive".into());
        }
        let memory = match self.memory_share()? {
            // Resolved by `run` after a first pass; a placeholder until then.
            Some(_) => DEFAULT_MEMORY_LIMIT_BYTES,
            None => parse_bytes(&self.memory).map_err(|e| format!("--memory {e}"))?,
        };
        let log_ranking = Ranking::parse(&self.ranking)
            .ok_or_else(|| format!("--ranking {}: expected {}", self.ranking, Ranking::EXPECTED))?;
        let mut log_choose = Vec::new();
        for s in &self.log_choose {
            log_choose.extend(LogPolicy::parse_list(s).ok_or_else(|| {
                format!(
                    "--log-choose {s}: expected rankings ({}), each with +p or +pSHARE for probation",
                    Ranking::EXPECTED
                )
            })?);
        }
        Ok(SimConfig {
            engine: EngineConfig {
                profile_sample_rate: self.mrc_sample_rate,
                log_ranking,
                log_clean_segments: self.clean_segments,
                log_ghost: self.log_ghost == "on",
                log_probation: self.log_probation,
                log_choose,
                log_choose_rate: self.log_choose_rate,
                ..self
                    .slab
                    .engine_config(memory, self.defaults().item_accounting)?
            },
            window_requests: self.window_requests,
            requests_per_second: self.requests_per_second,
            profile_memory_share: self.mrc_memory_share(),
            ..SimConfig::with_memory(0)
        })
    }

    /// The layouts of `--layout`, in order, each once; the preset's without it.
    fn layouts(&self) -> Result<Vec<MemoryLayout>, String> {
        if self.layout.is_empty() {
            let layout = self.defaults().layout;
            if !self.policy.is_empty() && layout != MemoryLayout::Slab {
                return Err(format!(
                    "--policy names slab policies, and the default layout is {} (the server's): \
                     add --layout slab (or slab,log), or --memcached-defaults for the simulator's \
                     former defaults",
                    layout.name()
                ));
            }
            return Ok(vec![layout]);
        }
        let mut out = Vec::new();
        for name in self.layout.iter().flat_map(|l| l.split(',')).map(str::trim) {
            if name.is_empty() {
                continue;
            }
            let layout = MemoryLayout::parse(name)
                .ok_or_else(|| format!("--layout {name}: expected slab or log"))?;
            if !out.contains(&layout) {
                out.push(layout);
            }
        }
        if out.is_empty() {
            return Err("--layout: name slab, log or both".into());
        }
        Ok(out)
    }

    /// `--memory P%` as a fraction, or `None` for a size.
    fn memory_share(&self) -> Result<Option<f64>, String> {
        let Some(percent) = self.memory.trim().strip_suffix('%') else {
            return Ok(None);
        };
        match percent.trim().parse::<f64>() {
            Ok(p) if p > 0.0 && p.is_finite() => Ok(Some(p / 100.0)),
            _ => Err(format!(
                "--memory {}: expected a size or a positive percentage",
                self.memory
            )),
        }
    }

    /// The tenant setups to run: one per `--tenant-policy` (the preset's with `--tenant` alone), or
    /// none (one memory) without tenants.
    fn tenant_setups(&self) -> Result<Vec<Option<TenantSetup>>, String> {
        if self.tenant.is_empty() {
            if !self.tenant_policy.is_empty() {
                return Err("--tenant-policy needs at least one --tenant".into());
            }
            return Ok(vec![None]);
        }
        let tenants = self
            .tenant
            .iter()
            .map(|t| parse_tenant(t))
            .collect::<Result<Vec<_>, _>>()?;
        if self.tenant_policy.is_empty() {
            let Some(arbiter) = self.defaults().tenant_policy else {
                return Err(
                    "--tenant needs --tenant-policy (static, pooled, memshare, mpart, lama-qos)"
                        .into(),
                );
            };
            return Ok(vec![Some(TenantSetup { arbiter, tenants })]);
        }
        split_specs(&self.tenant_policy, "--tenant-policy")?
            .into_iter()
            .map(|arbiter| {
                let arbiter = arbiter
                    .parse()
                    .map_err(|e| format!("--tenant-policy: {e}"))?;
                Ok(Some(TenantSetup {
                    arbiter,
                    tenants: tenants.clone(),
                }))
            })
            .collect()
    }

    /// The policies asked for: `--policy` values split at commas, where a `key=value` piece continues
    /// the previous policy's parameters (`lama-mr:moves=20,threshold=0.02,psa` is two policies).
    /// Without `--policy`, the preset's.
    fn policies(&self) -> Result<Vec<SlabPolicy>, String> {
        let out = if self.policy.is_empty() {
            vec![self.defaults().slab_policy()]
        } else {
            split_specs(&self.policy, "--policy")?
                .iter()
                .map(|p| SlabPolicy::by_name(p).map_err(|e| format!("--policy: {e}")))
                .collect::<Result<Vec<_>, _>>()?
        };
        if let Some(rate) = self.mrc_sample_rate {
            if !(rate > 0.0 && rate <= 1.0) {
                return Err("--mrc-sample-rate must be in (0, 1]".into());
            }
        }
        let share = self.mrc_memory_share();
        if !(share > 0.0 && share <= 1.0) {
            return Err(format!("--mrc-memory-share {share}: must be in (0, 1]"));
        }
        Ok(out)
    }
}

pub fn run(args: &SimArgs) -> Result<(), String> {
    let base = args.base_config()?;
    let policies = args.policies()?;
    let layouts = args.layouts()?;
    let trace_error = TraceErrorSlot::default();
    let check_trace = || take_trace_error(&trace_error);
    let out = &mut std::io::stdout().lock();
    if let Some(range) = &args.sweep {
        if args.memory_share()?.is_some() {
            return Err("--memory P% is for one size, not with --sweep".into());
        }
        let memories = parse_range(range).map_err(|e| format!("--sweep {e}"))?;
        let threads = args
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        // One pass per (policy, memory), and one exact profiling pass if a policy is the upper bound.
        let runs: usize = layouts
            .iter()
            .map(|&l| layout_policies(l, &policies).len())
            .sum();
        let mut passes = (runs * memories.len()) as u64;
        if policies.iter().any(SlabPolicy::needs_profile) {
            passes += 1;
        }
        let progress = Progress::requests(
            progress::wanted(args.quiet),
            &format!("sim sweep ({passes} runs)"),
            passes,
            progress::source_requests(&args.source),
        );
        let counter = progress.counter();
        let mut points = Vec::new();
        let mut labels = Vec::new();
        for layout in &layouts {
            let mut base = base.clone();
            base.engine.memory_layout = *layout;
            let run_policies = layout_policies(*layout, &policies);
            let mut got = sweep(&base, &memories, &run_policies, threads, || {
                args.source
                    .stream(&trace_error)
                    .map(|s| Box::new(Counted::on(counter.clone(), s)) as Stream)
                    .map_err(SimError::Stream)
            })
            .map_err(|e| e.to_string())?;
            for p in &mut got {
                p.policy = p.report.policy.clone();
                if !labels.contains(&p.policy) {
                    labels.push(p.policy.clone());
                }
            }
            points.extend(got);
        }
        progress.finish();
        check_trace()?;
        report_sweep(args, &labels, &points, out)?;
        return Ok(());
    }
    let setups = args.tenant_setups()?;
    // One pass per run, and one exact profiling pass, shared by `--memory P%` and the upper bound.
    let memory_share = args.memory_share()?;
    let needs_profile = memory_share.is_some() || policies.iter().any(SlabPolicy::needs_profile);
    if setups.iter().any(Option::is_some) && policies.iter().any(|p| p.oracle().is_some()) {
        return Err(
            "--policy oracle plans one memory's classes: it does not run with --tenant-policy"
                .into(),
        );
    }
    let jobs: Vec<(MemoryLayout, SlabPolicy)> = layouts
        .iter()
        .flat_map(|&l| {
            layout_policies(l, &policies)
                .into_iter()
                .map(move |p| (l, p))
        })
        .collect();
    let passes = (jobs.len() * setups.len() + usize::from(needs_profile)) as u64;
    let mut progress = Progress::requests(
        progress::wanted(args.quiet),
        &format!("sim ({} runs)", jobs.len() * setups.len()),
        passes,
        progress::source_requests(&args.source),
    );
    let profile = if needs_profile {
        let stream = progress.track(args.source.stream(&trace_error)?);
        let mut profiler = UpperBoundProfiler::new(&base.engine, 0)
            .with_windows(&oracle_windows(&policies, base.window_requests));
        for a in stream {
            profiler.record(&a);
        }
        check_trace()?;
        Some(profiler.finish())
    } else {
        None
    };
    let mut base = base;
    if let (Some(share), Some(ub)) = (memory_share, &profile) {
        let distinct = ub.distinct_bytes();
        let (asked, limit) = ub.memory_for_share(share, &base.engine);
        base.engine.memory_limit_bytes = limit;
        progress.suspend(|| {
            eprintln!(
                "memory {} bytes: {} of {distinct} distinct-object bytes{}",
                base.engine.memory_limit_bytes,
                args.memory,
                if asked < limit {
                    format!(" ({asked}), raised to the engine's least memory (2 x -I)")
                } else {
                    String::new()
                }
            )
        });
    }
    let mut reports = Vec::new();
    for ((layout, policy), setup) in jobs.iter().flat_map(|j| setups.iter().map(move |s| (j, s))) {
        let mut config = base.clone();
        config.engine.memory_layout = *layout;
        config.tenants = setup.clone();
        // The upper bound (LAMA §5.6: exact curves from a first pass, Algorithm 1, the allocation
        // replayed fixed) and the dynamic oracle (each window's best allocation) from the first pass.
        let model = match &profile {
            Some(ub) => ub
                .configure(&mut config, policy)
                .map_err(|e| e.to_string())?,
            None => None,
        };
        let stream = progress.track(args.source.stream(&trace_error)?);
        let mut report =
            Simulator::run(config, policy.clone(), stream).map_err(|e| e.to_string())?;
        report.model_miss_ratio = model.or(report.model_miss_ratio);
        check_trace()?;
        // The bar steps aside while the run's report goes to stdout (often the same terminal).
        progress.suspend(|| {
            if args.json {
                writeln!(
                    out,
                    "{}",
                    serde_json::to_string(&report).map_err(|e| e.to_string())?
                )
                .map_err(|e| e.to_string())
            } else {
                write_text(out, &report).map_err(|e| e.to_string())
            }
        })?;
        reports.push(report);
    }
    progress.finish();
    if let Some(path) = &args.plot {
        let series = reports
            .iter()
            .map(|r| Series {
                label: run_label(r),
                points: r
                    .windows
                    .iter()
                    .map(|w| (w.end_request as f64 / 1e6, w.miss_ratio))
                    .collect(),
            })
            .collect();
        draw(
            path,
            &Chart {
                title: &format!("Miss ratio over time, {}", args.source.name()),
                x_label: "requests (millions)",
                y_label: "miss ratio",
                y_range: Some((0.0, 1.0)),
                y_log: false,
                styles: Vec::new(),
                series,
            },
        )?;
    }
    if let Some(path) = &args.plot_tenants {
        plot_tenants(args, path, &reports)?;
    }
    if let Some(path) = &args.plot_allocation {
        let r = &reports[0];
        let classes = r.windows.last().map_or(0, |w| w.pages.len());
        let series = (0..classes)
            .filter(|&c| r.windows.iter().any(|w| w.pages[c] > 0))
            .map(|c| Series {
                label: format!("class {}", c + 1),
                points: r
                    .windows
                    .iter()
                    .map(|w| (w.end_request as f64 / 1e6, w.pages[c] as f64))
                    .collect(),
            })
            .collect();
        draw_pages(
            path,
            &format!(
                "Pages per slab class, {} ({})",
                args.source.name(),
                r.policy
            ),
            series,
        )?;
    }
    Ok(())
}

fn write_text(out: &mut impl Write, r: &SimReport) -> std::io::Result<()> {
    writeln!(out, "policy {}  memory {} MiB  requests {}  gets {}  misses {}  miss ratio {:.4}  evictions {}  page moves {}  rounds {}  mean response {:.1} us", r.policy, r.memory_bytes >> 20, r.requests, r.gets, r.misses, r.miss_ratio, r.evictions, r.page_moves, r.rounds, r.mean_response_us)?;
    if let Some(model) = r.model_miss_ratio {
        writeln!(
            out,
            "model miss ratio {model:.4} (the exact curves' prediction for the allocation replayed)"
        )?;
    }
    writeln!(
        out,
        "window  end_request  gets  misses  miss_ratio  page_moves"
    )?;
    for (i, w) in r.windows.iter().enumerate() {
        writeln!(
            out,
            "{i:>6}  {:>11}  {}  {}  {:.4}  {}",
            w.end_request, w.gets, w.misses, w.miss_ratio, w.page_moves
        )?;
    }
    writeln!(out, "allocation (class chunk_bytes pages items):")?;
    for a in &r.allocation {
        writeln!(
            out,
            "  {:>3} {:>7} {:>6} {:>9}",
            a.class, a.chunk_size_bytes, a.pages, a.items
        )?;
    }
    if let Some(arbiter) = &r.tenant_policy {
        writeln!(
            out,
            "tenants under {arbiter} ({} rounds): tenant gets misses miss_ratio pages target reserved",
            r.arbiter_rounds
        )?;
        let show = |v: Option<usize>| v.map_or("-".to_string(), |n| n.to_string());
        for t in &r.tenants {
            let w = &t.totals;
            writeln!(
                out,
                "  {:>5} {:>10} {:>9} {:.4} {:>6} {:>6} {:>6}",
                w.tenant,
                w.gets,
                w.misses,
                w.miss_ratio,
                show(w.pages),
                show(w.target_pages),
                show(t.reserved_pages)
            )?;
        }
    }
    Ok(())
}

fn report_sweep(
    args: &SimArgs,
    policies: &[String],
    points: &[SweepPoint],
    out: &mut impl Write,
) -> Result<(), String> {
    let io = |e: std::io::Error| e.to_string();
    if args.json {
        writeln!(
            out,
            "{}",
            serde_json::to_string(points).map_err(|e| e.to_string())?
        )
        .map_err(io)?;
    } else {
        writeln!(
            out,
            "policy  memory_mib  miss_ratio  steady_state_miss_ratio  page_moves"
        )
        .map_err(io)?;
        for p in points {
            writeln!(
                out,
                "{}  {}  {:.4}  {:.4}  {}",
                p.policy,
                p.memory_bytes >> 20,
                p.miss_ratio,
                p.steady_state_miss_ratio,
                p.page_moves
            )
            .map_err(io)?;
        }
    }
    if let Some(path) = &args.csv {
        let mut text =
            String::from("policy,memory_bytes,miss_ratio,steady_state_miss_ratio,page_moves\n");
        for p in points {
            text += &format!(
                "{},{},{:.6},{:.6},{}\n",
                p.policy, p.memory_bytes, p.miss_ratio, p.steady_state_miss_ratio, p.page_moves
            );
        }
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if let Some(path) = &args.plot {
        let series = policies
            .iter()
            .map(|policy| Series {
                label: policy.clone(),
                points: points
                    .iter()
                    .filter(|p| &p.policy == policy)
                    .map(|p| ((p.memory_bytes >> 20) as f64, p.steady_state_miss_ratio))
                    .collect(),
            })
            .collect();
        draw(
            path,
            &Chart {
                title: &format!("Steady-state miss ratio vs memory, {}", args.source.name()),
                x_label: "memory (MiB)",
                y_label: "miss ratio",
                y_range: None,
                y_log: false,
                styles: Vec::new(),
                series,
            },
        )?;
    }
    Ok(())
}

/// The class policies a layout runs: all of them on slab; on log only the demand-filled default, as
/// the log has no classes to move pages between (it is reported as `log`).
fn layout_policies(layout: MemoryLayout, policies: &[SlabPolicy]) -> Vec<SlabPolicy> {
    match layout {
        MemoryLayout::Slab => policies.to_vec(),
        MemoryLayout::Log => vec![SlabPolicy::memcached()],
    }
}

/// Specs given to a repeatable flag, split at commas, where a `key=value` piece continues the previous
/// spec's parameters (`lama-mr:moves=20,threshold=0.02,psa` is two specs).
fn split_specs(values: &[String], flag: &str) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for piece in values.iter().flat_map(|p| p.split(',')) {
        let piece = piece.trim();
        if piece.is_empty() {
            continue;
        }
        let parameter = piece.contains('=') && !piece.contains(':');
        match out.last_mut() {
            Some(last) if parameter => {
                last.push(',');
                last.push_str(piece);
            }
            _ if parameter => return Err(format!("{flag}: parameter `{piece}` follows no name")),
            _ => out.push(piece.to_string()),
        }
    }
    Ok(out)
}

/// `ID[:reserved=BYTES,max=BYTES,initial=BYTES,target=HIT_RATIO,weight=W]`.
fn parse_tenant(text: &str) -> Result<ArbitratedTenant, String> {
    let bad = |what: String| format!("--tenant `{text}`: {what}");
    let (id, params) = text.split_once(':').unwrap_or((text, ""));
    let id: u16 = id
        .trim()
        .parse()
        .map_err(|_| bad(format!("`{id}` is not a tenant id (0-65535)")))?;
    let mut spec = ArbitratedTenant::new(TenantId(id));
    for piece in params.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = piece
            .split_once('=')
            .ok_or_else(|| bad(format!("`{piece}` is not key=value")))?;
        let number = |v: &str| -> Result<f64, String> {
            v.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| bad(format!("{key}={v} is not a non-negative number")))
        };
        match key {
            "reserved" => {
                spec.reserved_bytes =
                    parse_bytes(value).map_err(|e| bad(format!("reserved: {e}")))?
            }
            "max" => {
                spec.max_bytes = Some(parse_bytes(value).map_err(|e| bad(format!("max: {e}")))?)
            }
            "initial" => {
                spec.initial_bytes =
                    Some(parse_bytes(value).map_err(|e| bad(format!("initial: {e}")))?)
            }
            "target" => {
                let t = number(value)?;
                if t > 1.0 {
                    return Err(bad(format!("target={value} is not a hit ratio in [0, 1]")));
                }
                spec.target_hit_ratio = Some(t);
            }
            "weight" => {
                spec.weight = number(value)?;
                if spec.weight == 0.0 {
                    return Err(bad("weight must be positive".into()));
                }
            }
            other => {
                return Err(bad(format!(
                    "unknown setting `{other}` (reserved, max, initial, target, weight)"
                )))
            }
        }
    }
    Ok(spec)
}

/// A run's name in figures: the slab policy, and the tenant arbiter when there is one.
fn run_label(r: &SimReport) -> String {
    match &r.tenant_policy {
        Some(arbiter) => format!(
            "{} / {}",
            arbiter.split(':').next().unwrap_or(arbiter),
            r.policy
        ),
        None => r.policy.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_tenant;

    #[test]
    fn tenants_parse_and_bad_settings_name_themselves() {
        let t = parse_tenant("3:reserved=64MiB,max=1GiB,target=0.85,weight=2").unwrap();
        assert_eq!(t.tenant.0, 3);
        assert_eq!(t.reserved_bytes, 64 << 20);
        assert_eq!(t.max_bytes, Some(1 << 30));
        assert_eq!(t.target_hit_ratio, Some(0.85));
        assert_eq!(t.weight, 2.0);
        assert_eq!(parse_tenant("0").unwrap().reserved_bytes, 0);
        assert!(parse_tenant("x").unwrap_err().contains("tenant id"));
        assert!(parse_tenant("1:reserve=1MiB")
            .unwrap_err()
            .contains("reserve"));
        assert!(parse_tenant("1:target=1.5")
            .unwrap_err()
            .contains("target=1.5"));
        assert!(parse_tenant("1:weight=0").unwrap_err().contains("weight"));
    }
}
