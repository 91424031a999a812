//! `NAME[:key=value,...]` workload specifications, as `mrcache sim --workload` takes them.
//!
//! Every parameter has a default; an unknown name or key is an error that names it, and `WORKLOAD_HELP`
//! lists them all for `--help`.

use std::collections::BTreeMap;

use super::generators::{Etc, MpartSix, SingleApp, ThreePhase};
use super::timevarying::{Diurnal, NoisyNeighbour, Timeline, DIURNAL_PEAK_RATIO, NOISY_OBJECTS};
use super::Access;
use crate::dist::{KeySizeModel, Popularity, ValueSizeModel};
use crate::WorkloadError;

/// GET:SET of Facebook ETC, about 30:1.
const ETC_GET_RATIO: f64 = 30.0 / 31.0;

/// mPart's six applications at 100M requests each: the default total of `diurnal` and
/// `noisy-neighbour`, divided by `scale`.
const MPART_TOTAL_REQUESTS: u64 = 600_000_000;

/// What `--help` prints about workloads.
pub const WORKLOAD_HELP: &str = "\
Workloads (NAME[:key=value,...]):
  etc          Facebook ETC sizes (key GEV, value table + generalized Pareto).
               objects=1000000 requests=5000000 popularity=zipf:0.9 get_ratio=0.968
  zipf         Zipf popularity with fixed or uniform sizes.
               objects=1000000 requests=5000000 alpha=0.9 key_size=16 value_size=200 (or A-B) get_ratio=1
  three-phase  LAMA's three-phase workload: set 1, a transition, set 2 (two sets of `objects`).
               objects=7000000 requests=200000000 get_ratio=1 popularity1=pareto:214.476:0.348238
               popularity2=pareto:312.6175:0.05 value_size1=etc value_size2=etc
  qos          LAMA 5.7: three-phase (APP1, tenant 0) and ETC (APP2, tenant 1), request rates ratio:1.
               objects=7000000 etc_objects=1000000 requests=250000000 (total) ratio=4 get_ratio=1 (APP1's)
               etc_popularity=zipf:0.9, and three-phase's popularity1= popularity2= value_size1= value_size2=
  mpart-six    mPart's six Zipf applications (Table 4.1), one tenant each, 200-byte values.
               scale=1 requests=100000000 (per application) get_ratio=1
  diurnal      mPart 4.2: the six applications with request rates on a day curve (cosine, peak at hour
               12+4t for application t, peak/trough = peak_ratio), requests spread evenly over `hours`.
               scale=1 requests=600000000/scale (total) hours=24 peak_ratio=2 get_ratio=1
  noisy-neighbour  mPart 4.3: the six applications plus tenant 6, Zipf 0.9 over 100M/scale objects,
               silent before enter_hour, then a share noisy_share of all requests.
               scale=1 requests=600000000/scale (total) hours=10 enter_hour=5 noisy_share=0.5 get_ratio=1
               noisy_popularity=zipf:0.9
popularity is uniform, zipf:ALPHA or pareto:SIGMA:K. Every workload takes seed=N (default: --seed).
GETs that miss are followed by a SET of the object (the lookaside pattern) in the simulator.";

/// A parsed specification.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadSpec {
    /// The workload's name, the text before the first `:`.
    pub name: String,
    params: BTreeMap<String, String>,
}

impl WorkloadSpec {
    /// Parses `NAME[:key=value,...]`.
    pub fn parse(text: &str) -> Result<WorkloadSpec, WorkloadError> {
        let (name, rest) = text.split_once(':').unwrap_or((text, ""));
        let mut params = BTreeMap::new();
        for pair in rest.split(',').filter(|p| !p.is_empty()) {
            let (k, v) = pair
                .split_once('=')
                .ok_or_else(|| WorkloadError::NotKeyValue {
                    pair: pair.to_string(),
                })?;
            params.insert(k.trim().to_string(), v.trim().to_string());
        }
        Ok(WorkloadSpec {
            name: name.to_string(),
            params,
        })
    }

    /// The request stream, seeded by `seed` unless the spec sets `seed=`.
    pub fn build(
        &self,
        seed: u64,
    ) -> Result<Box<dyn Iterator<Item = Access> + Send>, WorkloadError> {
        Ok(self.build_timed(seed)?.0)
    }

    /// The request stream and, for workloads on a simulated clock (`diurnal`, `noisy-neighbour`), its
    /// [`Timeline`]: `timeline.hour_of(i)` is the simulated hour of request `i`.
    #[allow(clippy::type_complexity)]
    pub fn build_timed(
        &self,
        seed: u64,
    ) -> Result<(Box<dyn Iterator<Item = Access> + Send>, Option<Timeline>), WorkloadError> {
        let mut p = Params {
            spec: self,
            used: Vec::new(),
        };
        let seed = p.num("seed", seed)?;
        let mut timeline = None;
        let stream: Box<dyn Iterator<Item = Access> + Send> = match self.name.as_str() {
            "etc" => {
                let objects = p.num("objects", 1_000_000)?;
                let requests = p.num("requests", 5_000_000)?;
                let popularity = p.popularity(objects, "zipf:0.9")?;
                let get_ratio = p.float("get_ratio", ETC_GET_RATIO)?;
                let app = SingleApp::new(
                    popularity,
                    KeySizeModel::Etc,
                    ValueSizeModel::ETC,
                    get_ratio,
                    seed,
                );
                Box::new(Etc::new(app, requests, seed))
            }
            "zipf" => {
                let objects = p.num("objects", 1_000_000)?;
                let requests = p.num("requests", 5_000_000)?;
                let alpha = p.float("alpha", 0.9)?;
                let key_size = p.num("key_size", 16)?.clamp(8, 250) as u8;
                let value_size = p.value_size("value_size", "200")?;
                let get_ratio = p.float("get_ratio", 1.0)?;
                let app = SingleApp::new(
                    Popularity::zipf(objects, alpha)?,
                    KeySizeModel::Fixed(key_size),
                    value_size,
                    get_ratio,
                    seed,
                );
                Box::new(Etc::new(app, requests, seed))
            }
            "three-phase" => {
                let objects = p.num("objects", 7_000_000)?;
                let requests = p.num("requests", 200_000_000)?;
                let get_ratio = p.float("get_ratio", 1.0)?;
                Box::new(p.three_phase(objects, requests, get_ratio, seed)?)
            }
            "qos" => {
                // LAMA §5.7: the three-phase workload (APP1, tenant 0) and ETC (APP2, tenant 1) sharing
                // one server, their request rates `ratio`:1.
                let objects = p.num("objects", 7_000_000)?;
                let etc_objects = p.num("etc_objects", 1_000_000)?;
                let requests = p.num("requests", 250_000_000)?;
                let ratio = p.num("ratio", 4)?.max(1);
                let get_ratio = p.float("get_ratio", 1.0)?;
                let app1_requests = requests / (ratio + 1) * ratio;
                let app1 = p.three_phase(objects, app1_requests, get_ratio, seed)?;
                let etc = SingleApp::new(
                    p.popularity_named("etc_popularity", etc_objects, "zipf:0.9")?,
                    KeySizeModel::Etc,
                    ValueSizeModel::ETC,
                    ETC_GET_RATIO,
                    seed,
                );
                let app2 = Etc::new(etc, requests - app1_requests, seed ^ 0x9e37_79b9);
                Box::new(Interleave::new(
                    Box::new(app1.map(|a| Access { tenant: 0, ..a })),
                    Box::new(app2.map(|a| Access { tenant: 1, ..a })),
                    ratio,
                ))
            }
            "mpart-six" => {
                let scale = p.num("scale", 1)?;
                let requests = p.num("requests", 100_000_000)?;
                let get_ratio = p.float("get_ratio", 1.0)?;
                Box::new(MpartSix::new(scale, requests, get_ratio, seed)?)
            }
            "diurnal" => {
                let scale = p.num("scale", 1)?;
                let requests = p.num("requests", MPART_TOTAL_REQUESTS / scale.max(1))?;
                let hours = p.float("hours", 24.0)?;
                let peak_ratio = p.float("peak_ratio", DIURNAL_PEAK_RATIO)?;
                let get_ratio = p.float("get_ratio", 1.0)?;
                let w = Diurnal::new(scale, requests, hours, peak_ratio, get_ratio, seed)?;
                timeline = Some(w.timeline());
                Box::new(w)
            }
            "noisy-neighbour" | "noisy-neighbor" => {
                let scale = p.num("scale", 1)?;
                let requests = p.num("requests", MPART_TOTAL_REQUESTS / scale.max(1))?;
                let hours = p.float("hours", 10.0)?;
                let enter_hour = p.float("enter_hour", 5.0)?;
                let noisy_share = p.float("noisy_share", 0.5)?;
                let get_ratio = p.float("get_ratio", 1.0)?;
                let w = NoisyNeighbour::new(
                    scale,
                    requests,
                    hours,
                    enter_hour,
                    noisy_share,
                    get_ratio,
                    seed,
                )?;
                let w = w.with_noisy_popularity(p.popularity_named(
                    "noisy_popularity",
                    NOISY_OBJECTS / scale.max(1),
                    "zipf:0.9",
                )?);
                timeline = Some(w.timeline());
                Box::new(w)
            }
            other => {
                return Err(WorkloadError::UnknownWorkload {
                    name: other.to_string(),
                })
            }
        };
        p.reject_unused()?;
        Ok((stream, timeline))
    }
}

struct Params<'a> {
    spec: &'a WorkloadSpec,
    used: Vec<&'static str>,
}

impl Params<'_> {
    fn raw(&mut self, key: &'static str) -> Option<&str> {
        self.used.push(key);
        self.spec.params.get(key).map(String::as_str)
    }

    fn num(&mut self, key: &'static str, default: u64) -> Result<u64, WorkloadError> {
        match self.raw(key) {
            None => Ok(default),
            Some(v) => parse_count(v).ok_or_else(|| WorkloadError::NotACount {
                key,
                value: v.to_string(),
            }),
        }
    }

    fn float(&mut self, key: &'static str, default: f64) -> Result<f64, WorkloadError> {
        match self.raw(key) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| WorkloadError::NotANumber {
                key,
                value: v.to_string(),
            }),
        }
    }

    fn value_size(
        &mut self,
        key: &'static str,
        default: &str,
    ) -> Result<ValueSizeModel, WorkloadError> {
        let v = self.raw(key).unwrap_or(default).to_string();
        let bad = || WorkloadError::BadValueSize {
            key,
            value: v.clone(),
        };
        if v == "etc" {
            return Ok(ValueSizeModel::ETC);
        }
        match v.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
                if a > b {
                    return Err(bad());
                }
                Ok(ValueSizeModel::Uniform(a, b))
            }
            None => Ok(ValueSizeModel::Fixed(v.parse().map_err(|_| bad())?)),
        }
    }

    fn popularity(&mut self, objects: u64, default: &str) -> Result<Popularity, WorkloadError> {
        self.popularity_named("popularity", objects, default)
    }

    /// LAMA's three-phase workload from `popularity1= popularity2= value_size1= value_size2=`.
    fn three_phase(
        &mut self,
        objects: u64,
        requests: u64,
        get_ratio: f64,
        seed: u64,
    ) -> Result<ThreePhase, WorkloadError> {
        let set = |popularity, value_size| {
            SingleApp::new(popularity, KeySizeModel::Etc, value_size, get_ratio, seed)
        };
        let first = set(
            self.popularity_named("popularity1", objects, "pareto:214.476:0.348238")?,
            self.value_size("value_size1", "etc")?,
        );
        let second = set(
            self.popularity_named("popularity2", objects, "pareto:312.6175:0.05")?,
            self.value_size("value_size2", "etc")?,
        );
        Ok(ThreePhase::new(first, second, objects, requests, seed))
    }

    fn popularity_named(
        &mut self,
        key: &'static str,
        objects: u64,
        default: &str,
    ) -> Result<Popularity, WorkloadError> {
        let v = self.raw(key).unwrap_or(default).to_string();
        let bad = || WorkloadError::BadPopularity {
            key,
            value: v.clone(),
        };
        let parts: Vec<&str> = v.split(':').collect();
        match parts.as_slice() {
            ["uniform"] => Ok(Popularity::uniform(objects)),
            ["zipf", a] => Popularity::zipf(objects, a.parse().map_err(|_| bad())?),
            ["pareto", s, k] => Ok(Popularity::pareto(
                objects,
                s.parse().map_err(|_| bad())?,
                k.parse().map_err(|_| bad())?,
            )),
            _ => Err(bad()),
        }
    }

    fn reject_unused(&self) -> Result<(), WorkloadError> {
        match self
            .spec
            .params
            .keys()
            .find(|k| !self.used.contains(&k.as_str()))
        {
            Some(k) => Err(WorkloadError::UnknownParameter {
                workload: self.spec.name.clone(),
                key: k.clone(),
            }),
            None => Ok(()),
        }
    }
}

/// A count with an optional k/M/G suffix (decimal): `5M` is 5,000,000.
fn parse_count(v: &str) -> Option<u64> {
    let (digits, mult) = match v.as_bytes().last()? {
        b'k' | b'K' => (&v[..v.len() - 1], 1_000),
        b'm' | b'M' => (&v[..v.len() - 1], 1_000_000),
        b'g' | b'G' => (&v[..v.len() - 1], 1_000_000_000),
        _ => (v, 1),
    };
    digits
        .replace('_', "")
        .parse::<u64>()
        .ok()?
        .checked_mul(mult)
}

/// Two streams interleaved `ratio`:1 (`ratio` requests of the first, then one of the second), and
/// whichever remains once the other ends.
struct Interleave {
    first: Box<dyn Iterator<Item = Access> + Send>,
    second: Box<dyn Iterator<Item = Access> + Send>,
    ratio: u64,
    position: u64,
}

impl Interleave {
    fn new(
        first: Box<dyn Iterator<Item = Access> + Send>,
        second: Box<dyn Iterator<Item = Access> + Send>,
        ratio: u64,
    ) -> Interleave {
        Interleave {
            first,
            second,
            ratio,
            position: 0,
        }
    }
}

impl Iterator for Interleave {
    type Item = Access;
    fn next(&mut self) -> Option<Access> {
        self.position += 1;
        if self.position.is_multiple_of(self.ratio + 1) {
            self.second.next().or_else(|| self.first.next())
        } else {
            self.first.next().or_else(|| self.second.next())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_builds_each_workload() {
        for spec in [
            "etc:objects=1000,requests=10",
            "zipf:alpha=1.0,requests=10,value_size=10-20",
            "three-phase:objects=100,requests=9",
            "mpart-six:scale=1000,requests=2",
            "qos:objects=1000,etc_objects=100,requests=100",
            "diurnal:scale=1000,requests=100",
            "noisy-neighbour:scale=1000,requests=100,enter_hour=2",
        ] {
            let s = WorkloadSpec::parse(spec).unwrap();
            assert!(s.build(1).unwrap().count() > 0, "{spec}");
        }
        assert_eq!(parse_count("5M"), Some(5_000_000));
    }

    #[test]
    fn errors_name_the_culprit() {
        let error = |s: &str| {
            WorkloadSpec::parse(s)
                .and_then(|w| w.build(1).map(|_| ()))
                .unwrap_err()
        };
        let err = |s: &str| error(s).to_string();
        assert!(matches!(error("nope"), WorkloadError::UnknownWorkload { name } if name == "nope"));
        assert!(matches!(
            error("zipf:requests=x"),
            WorkloadError::NotACount {
                key: "requests",
                ..
            }
        ));
        assert!(matches!(
            error("diurnal:hours=0"),
            WorkloadError::OutOfRange { key: "hours", .. }
        ));
        assert!(err("nope").contains("nope"));
        assert!(err("etc:objcts=5").contains("objcts"));
        assert!(err("etc:popularity=zipf").contains("popularity"));
        assert!(err("zipf:requests=x").contains("requests=x"));
        assert!(err("diurnal:enter_hour=3").contains("enter_hour"));
        assert!(err("diurnal:hours=0").contains("hours"));
        assert!(err("diurnal:hours=x").contains("hours=x"));
        assert!(err("diurnal:peak_ratio=0.5").contains("peak_ratio"));
        assert!(err("noisy-neighbour:noisy_share=2").contains("noisy_share"));
        assert!(err("noisy-neighbour:enter_hour=-1").contains("enter_hour"));
        assert!(err("noisy-neighbour:noisyshare=0.3").contains("noisyshare"));
    }

    #[test]
    fn time_varying_workloads_report_their_timeline() {
        let spec = WorkloadSpec::parse("noisy-neighbour:scale=1000,requests=1000").unwrap();
        let (stream, timeline) = spec.build_timed(1).unwrap();
        let timeline = timeline.unwrap();
        assert_eq!(timeline.hours, 10.0);
        assert_eq!(timeline.hour_of(500), 5.0);
        let tenants: Vec<u16> = stream.map(|a| a.tenant).collect();
        assert!(tenants[..500].iter().all(|&t| t < 6));
        assert!(tenants[500..].contains(&6));
        let spec = WorkloadSpec::parse("diurnal:scale=1000").unwrap();
        let timeline = spec.build_timed(1).unwrap().1.unwrap();
        assert_eq!(timeline.requests, 600_000);
        assert_eq!(timeline.hours, 24.0);
        let (_, none) = WorkloadSpec::parse("mpart-six:scale=1000")
            .unwrap()
            .build_timed(1)
            .unwrap();
        assert!(none.is_none());
    }

    #[test]
    fn qos_interleaves_app1_and_app2_four_to_one() {
        let spec = WorkloadSpec::parse("qos:objects=1000,etc_objects=100,requests=1000").unwrap();
        let tenants: Vec<u16> = spec.build(1).unwrap().map(|a| a.tenant).collect();
        assert_eq!(tenants.len(), 1000);
        assert_eq!(tenants.iter().filter(|&&t| t == 1).count(), 200);
        assert_eq!(&tenants[..5], &[0, 0, 0, 0, 1]);
    }
}
