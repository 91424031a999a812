//! Latency isolation of the server's threads (Leverich & Kozyrakis, "Managing Interference for
//! Latency-sensitive Workloads"): where the threads run (`-o worker_cpus`, `-o service_cpus`) and under
//! which scheduling policy the workers run (`-o sched`).
//!
//! The paper's findings this module turns into options:
//! - memcached's tail collapses as soon as the OS makes it time-share a hardware thread with another
//!   process (§3.2.1, CPU/ST: -46% QoS throughput), and pinning each thread to its own hardware thread
//!   removes the scheduler's migrations that make threads time-share with each other (§2.5). So
//!   `worker_cpus=LIST` pins worker *i* to the *i*-th CPU of the list (round-robin when `-t` is larger,
//!   which then makes workers time-share; start-up warns about it).
//! - A real-time policy for memcached (`chrt`, SCHED_FIFO) keeps it from time-sharing with a batch job
//!   on the same core (Table 3, CPU.fifo: -2.1% instead of -46%; §4.1 Fig. 6). `sched=fifo:PRIO` or
//!   `rr:PRIO` gives the workers that policy; `other` puts them back under the normal scheduler. The
//!   listener and maintenance threads stay under the normal policy.
//!
//! The listener and maintenance threads (the "service" threads) accept connections and move pages once
//! a second. Decision: by default they run on the workers' CPUs (the whole server stays where the
//! operator put it, as `taskset` would keep it); `service_cpus=LIST` gives them CPUs of their own, and
//! `service_cpus=any` leaves them wherever the process may run.
//!
//! Invariants: a [`CpuList`] is non-empty, sorted, without duplicates, every CPU below `CPU_SETSIZE`;
//! the settings only hold lists whose CPUs are all in the process's allowed set at start-up
//! ([`allowed_cpus`]). A placement that cannot be applied (no privilege for a real-time policy) is an
//! error at start-up that names the option, never a silent fallback.
//!
//! With a real-time policy a worker that never blocks would starve every normal thread of its CPU; the
//! workers block in `epoll_wait` when idle, and the kernel's real-time throttling
//! (`/proc/sys/kernel/sched_rt_runtime_us`, 95% by default) leaves the rest a share under overload.
//! Shard locks are `parking_lot` mutexes, which park rather than spin, so a worker waiting for a lock
//! held by the maintenance thread lets it run.

use std::fmt;
use std::io;

/// One CPU list as taskset(1) and cpuset(7) write it: `0`, `0-3`, `0,2,4-7`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuList(Vec<usize>);

/// The largest CPU number a `cpu_set_t` holds, plus one.
const CPU_SETSIZE: usize = libc::CPU_SETSIZE as usize;

impl CpuList {
    /// Parses `0,2,4-7`; the error says what is wrong (the caller names the option).
    pub fn parse(text: &str) -> Result<CpuList, String> {
        let mut cpus = Vec::new();
        for part in text.split(',').map(str::trim) {
            if part.is_empty() {
                return Err(format!("empty entry in CPU list '{text}'"));
            }
            let number = |s: &str| {
                s.trim()
                    .parse::<usize>()
                    .map_err(|_| format!("'{s}' is not a CPU number (e.g. 0, 0-3, 0,2,4-7)"))
            };
            let (first, last) = match part.split_once('-') {
                Some((a, b)) => (number(a)?, number(b)?),
                None => {
                    let n = number(part)?;
                    (n, n)
                }
            };
            if first > last {
                return Err(format!("range {part} runs backwards"));
            }
            if last >= CPU_SETSIZE {
                return Err(format!(
                    "CPU {last} is beyond the largest CPU number ({})",
                    CPU_SETSIZE - 1
                ));
            }
            for cpu in first..=last {
                if cpus.contains(&cpu) {
                    return Err(format!("CPU {cpu} is listed twice"));
                }
                cpus.push(cpu);
            }
        }
        cpus.sort_unstable();
        Ok(CpuList(cpus))
    }

    /// The CPUs, ascending.
    pub fn cpus(&self) -> &[usize] {
        &self.0
    }

    /// The CPUs not in `allowed`, ascending.
    pub fn outside(&self, allowed: &CpuList) -> Vec<usize> {
        self.0
            .iter()
            .copied()
            .filter(|c| !allowed.0.contains(c))
            .collect()
    }

    /// The one CPU of worker `index`: the list's CPUs in turn.
    pub fn nth_wrapping(&self, index: usize) -> usize {
        self.0[index % self.0.len()]
    }

    /// A list of these CPUs (which must be non-empty and in range).
    #[cfg(test)]
    fn of(cpus: impl IntoIterator<Item = usize>) -> CpuList {
        let mut cpus: Vec<usize> = cpus.into_iter().collect();
        cpus.sort_unstable();
        cpus.dedup();
        assert!(!cpus.is_empty() && cpus.iter().all(|&c| c < CPU_SETSIZE));
        CpuList(cpus)
    }

    fn to_cpu_set(&self) -> libc::cpu_set_t {
        // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &cpu in &self.0 {
            // SAFETY: cpu < CPU_SETSIZE (an invariant of the list), so the bit is inside the set.
            unsafe { libc::CPU_SET(cpu, &mut set) };
        }
        set
    }
}

impl fmt::Display for CpuList {
    /// Ranges collapsed: `0-3,6`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut i = 0;
        let mut first = true;
        while i < self.0.len() {
            let start = self.0[i];
            let mut end = start;
            while i + 1 < self.0.len() && self.0[i + 1] == end + 1 {
                i += 1;
                end += 1;
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if start == end {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
            i += 1;
        }
        Ok(())
    }
}

/// The CPUs this process may run on now (`sched_getaffinity`), e.g. what `taskset` or a cpuset allows.
pub fn allowed_cpus() -> io::Result<CpuList> {
    // SAFETY: all-zero is the empty set; the kernel fills at most size_of::<cpu_set_t>() bytes.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is the calling thread; the pointer and size describe `set`.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `set` was filled by the kernel; CPU_ISSET reads one bit below CPU_SETSIZE.
    let cpus: Vec<usize> = (0..CPU_SETSIZE)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect();
    if cpus.is_empty() {
        return Err(io::Error::other("sched_getaffinity returned no CPU"));
    }
    Ok(CpuList(cpus))
}

/// The scheduling policy of the worker threads (`-o sched`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SchedPolicy {
    /// Not given: the workers keep the policy the process started with (e.g. from `chrt`).
    #[default]
    Inherit,
    /// `other`: the normal time-sharing scheduler (SCHED_OTHER), whatever the process started with.
    Other,
    /// `fifo:PRIO`: SCHED_FIFO at this real-time priority.
    Fifo(u8),
    /// `rr:PRIO`: SCHED_RR at this real-time priority.
    RoundRobin(u8),
}

impl SchedPolicy {
    /// Parses `fifo:PRIO`, `rr:PRIO` or `other`; PRIO must be in the system's real-time range (1-99 on
    /// Linux).
    pub fn parse(text: &str) -> Result<SchedPolicy, String> {
        let (name, prio) = match text.split_once(':') {
            Some((n, p)) => (n, Some(p)),
            None => (text, None),
        };
        let priority = |policy: libc::c_int| -> Result<u8, String> {
            let p = prio.ok_or_else(|| format!("{name} needs a priority: {name}:PRIO"))?;
            // SAFETY: plain queries of the kernel's limits.
            let (min, max) = unsafe {
                (
                    libc::sched_get_priority_min(policy),
                    libc::sched_get_priority_max(policy),
                )
            };
            match p.parse::<i32>() {
                Ok(n) if (min..=max).contains(&n) => Ok(n as u8),
                _ => Err(format!(
                    "priority '{p}' must be a number from {min} to {max}"
                )),
            }
        };
        match name {
            "other" if prio.is_none() => Ok(SchedPolicy::Other),
            "other" => Err("other takes no priority".to_string()),
            "fifo" => Ok(SchedPolicy::Fifo(priority(libc::SCHED_FIFO)?)),
            "rr" => Ok(SchedPolicy::RoundRobin(priority(libc::SCHED_RR)?)),
            _ => Err(format!(
                "'{text}' is not a policy: fifo:PRIO, rr:PRIO or other"
            )),
        }
    }

    fn raw(self) -> Option<(libc::c_int, libc::c_int)> {
        match self {
            SchedPolicy::Inherit => None,
            SchedPolicy::Other => Some((libc::SCHED_OTHER, 0)),
            SchedPolicy::Fifo(p) => Some((libc::SCHED_FIFO, p.into())),
            SchedPolicy::RoundRobin(p) => Some((libc::SCHED_RR, p.into())),
        }
    }

    fn is_realtime(self) -> bool {
        matches!(self, SchedPolicy::Fifo(_) | SchedPolicy::RoundRobin(_))
    }
}

impl fmt::Display for SchedPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchedPolicy::Inherit => f.write_str("inherit"),
            SchedPolicy::Other => f.write_str("other"),
            SchedPolicy::Fifo(p) => write!(f, "fifo:{p}"),
            SchedPolicy::RoundRobin(p) => write!(f, "rr:{p}"),
        }
    }
}

/// Where the listener and maintenance threads run (`-o service_cpus`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ServiceCpus {
    /// Not given: on the workers' CPUs when `worker_cpus` is given, else unpinned.
    #[default]
    WithWorkers,
    /// `any`: unpinned (wherever the process may run).
    Any,
    /// On these CPUs.
    List(CpuList),
}

impl fmt::Display for ServiceCpus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServiceCpus::WithWorkers => f.write_str("workers"),
            ServiceCpus::Any => f.write_str("any"),
            ServiceCpus::List(l) => l.fmt(f),
        }
    }
}

/// The isolation settings of one server (`-o worker_cpus`, `-o service_cpus`, `-o sched`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Isolation {
    /// Worker *i* runs on CPU `worker_cpus[i % len]`; `None`: unpinned.
    pub worker_cpus: Option<CpuList>,
    /// Where the listener and maintenance threads run.
    pub service_cpus: ServiceCpus,
    /// The workers' scheduling policy.
    pub sched: SchedPolicy,
}

/// How one thread is placed: its CPUs and its policy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadPlacement {
    /// The CPUs it may run on; `None`: left as it is.
    pub cpus: Option<CpuList>,
    /// Its policy.
    pub sched: SchedPolicy,
}

impl Isolation {
    /// Worker `index`'s placement: its one CPU and the workers' policy.
    pub fn worker(&self, index: usize) -> ThreadPlacement {
        ThreadPlacement {
            cpus: self
                .worker_cpus
                .as_ref()
                .map(|l| CpuList(vec![l.nth_wrapping(index)])),
            sched: self.sched,
        }
    }

    /// The listener's and the maintenance thread's placement (normal policy, see the module doc).
    pub fn service(&self) -> ThreadPlacement {
        let cpus = match &self.service_cpus {
            ServiceCpus::WithWorkers => self.worker_cpus.clone(),
            ServiceCpus::Any => None,
            ServiceCpus::List(l) => Some(l.clone()),
        };
        ThreadPlacement {
            cpus,
            sched: SchedPolicy::Inherit,
        }
    }

    /// A start-up warning when the placement makes workers time-share a CPU with each other (the
    /// paper's §2.5: "better to deploy fewer memcached processes than force them to timeshare").
    pub fn warning(&self, threads: usize) -> Option<String> {
        let cpus = self.worker_cpus.as_ref()?;
        (threads > cpus.cpus().len()).then(|| {
            format!(
                "-o worker_cpus={cpus}: {threads} workers on {} CPU(s): workers will time-share CPUs",
                cpus.cpus().len()
            )
        })
    }
}

impl ThreadPlacement {
    /// Applies the placement to the calling thread. The error names the option to blame and, for a
    /// real-time policy refused for lack of privilege, what would grant it.
    pub fn apply_to_current_thread(&self) -> io::Result<()> {
        if let Some(cpus) = &self.cpus {
            let set = cpus.to_cpu_set();
            // SAFETY: pid 0 is the calling thread; the pointer and size describe `set`.
            let rc =
                unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
            if rc != 0 {
                let e = io::Error::last_os_error();
                return Err(io::Error::new(
                    e.kind(),
                    format!(
                        "-o worker_cpus/service_cpus: cannot pin a thread to CPU(s) {cpus}: {e}"
                    ),
                ));
            }
        }
        if let Some((policy, priority)) = self.sched.raw() {
            let param = libc::sched_param {
                sched_priority: priority,
            };
            // SAFETY: pid 0 is the calling thread (Linux schedules threads); `param` outlives the call.
            let rc = unsafe { libc::sched_setscheduler(0, policy, &param) };
            if rc != 0 {
                let e = io::Error::last_os_error();
                let hint = if self.sched.is_realtime() && e.raw_os_error() == Some(libc::EPERM) {
                    format!(
                        " (a real-time policy needs root or CAP_SYS_NICE, or an RLIMIT_RTPRIO of at \
                         least {priority}: `ulimit -r {priority}`; drop -o sched to run without it)"
                    )
                } else {
                    String::new()
                };
                return Err(io::Error::new(
                    e.kind(),
                    format!(
                        "-o sched={}: cannot run the worker threads under it: {e}{hint}",
                        self.sched
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Lowers the calling thread to the lowest time-sharing priority (nice 19), for background work that
/// should take a CPU only when the workers leave it idle (a metadump's formatting): a worker that wakes
/// preempts it at once instead of after the scheduler's wake-up granularity (milliseconds). Not
/// SCHED_IDLE, which on a saturated CPU would never run it. Best effort: raising a nice value needs no
/// privilege, and a thread left at its priority still does correct work.
pub fn lower_current_thread_priority() {
    // SAFETY: plain syscalls on the calling thread's id (Linux keeps nice values per thread).
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 19);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_as_taskset_writes_them() {
        assert_eq!(CpuList::parse("0").unwrap().cpus(), &[0]);
        assert_eq!(CpuList::parse("3,0-1").unwrap().cpus(), &[0, 1, 3]);
        assert_eq!(CpuList::parse(" 4-6 , 1").unwrap().to_string(), "1,4-6");
        for bad in ["", "a", "1,", "3-1", "1,1", "0-1,1", "-1", "5000"] {
            assert!(CpuList::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn workers_take_the_cpus_in_turn() {
        let iso = Isolation {
            worker_cpus: Some(CpuList::parse("2,5").unwrap()),
            ..Isolation::default()
        };
        let cpus: Vec<_> = (0..3)
            .map(|i| iso.worker(i).cpus.unwrap().cpus()[0])
            .collect();
        assert_eq!(cpus, [2, 5, 2]);
        assert_eq!(iso.service().cpus.unwrap().cpus(), &[2, 5]);
        assert!(iso.warning(3).is_some());
        assert!(iso.warning(2).is_none());
        let any = Isolation {
            service_cpus: ServiceCpus::Any,
            ..iso.clone()
        };
        assert_eq!(any.service().cpus, None);
        assert_eq!(Isolation::default().worker(0), ThreadPlacement::default());
    }

    #[test]
    fn policies_parse_with_their_priority_range() {
        assert_eq!(SchedPolicy::parse("fifo:10"), Ok(SchedPolicy::Fifo(10)));
        assert_eq!(SchedPolicy::parse("rr:99"), Ok(SchedPolicy::RoundRobin(99)));
        assert_eq!(SchedPolicy::parse("other"), Ok(SchedPolicy::Other));
        for bad in ["fifo", "fifo:0", "fifo:100", "rr:x", "other:3", "batch", ""] {
            assert!(SchedPolicy::parse(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(SchedPolicy::Fifo(7).to_string(), "fifo:7");
    }

    #[test]
    fn the_allowed_set_is_read_and_a_thread_can_be_pinned_inside_it() {
        let allowed = allowed_cpus().unwrap();
        let first = allowed.cpus()[0];
        let outside = CpuList::of([first]).outside(&allowed);
        assert!(outside.is_empty());
        std::thread::spawn(move || {
            let placement = ThreadPlacement {
                cpus: Some(CpuList::of([first])),
                sched: SchedPolicy::Inherit,
            };
            placement.apply_to_current_thread().unwrap();
            assert_eq!(allowed_cpus().unwrap().cpus(), &[first]);
        })
        .join()
        .unwrap();
    }
}
