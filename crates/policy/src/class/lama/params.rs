//! `lama-mr`'s and `lama-art`'s spec parameters: what the text gave (absent: LAMA's defaults), read
//! and checked once, printed back in a fixed order, and built into the policy without failing.

use super::*;

/// `lama-mr`'s and `lama-art`'s parameters as given (absent: LAMA's defaults above).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LamaParams {
    /// `interval=M|auto`: accesses between rounds, or eq. 8.
    pub interval: Option<Auto<u64>>,
    /// `min_interval=M`: eq. 8's floor, at least 1.
    pub min_interval: Option<u64>,
    /// `max_interval=M`: eq. 8's cap, at least `min_interval`.
    pub max_interval: Option<u64>,
    /// `period=S`: seconds after which a quiet server runs a round anyway (0: never).
    pub period: Option<u32>,
    /// `moves=N`: N, at least 1.
    pub moves: Option<usize>,
    /// `granularity=r|auto`: pages per move, at least 1, or one per GiB.
    pub granularity: Option<Auto<usize>>,
    /// `threshold=F`: the least gain that moves pages, in [0, 1).
    pub threshold: Option<f64>,
    /// `pace=true|false`: whether curve moves wait until their receiver needs the page
    /// ([`ClassPolicy::paces_moves`]); on by default.
    pub pace: Option<bool>,
}

/// `lama-art`'s response-time model as given (absent: [`ResponseTimeModel::default`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ResponseTimeParams {
    /// `hit_us=F`.
    pub hit_us: Option<f64>,
    /// `miss_us=F`.
    pub miss_us: Option<f64>,
    /// `miss_us_per_kib=F`.
    pub miss_us_per_kib: Option<f64>,
}

impl LamaParams {
    /// Reads the parameters of `p`, checking them in the order LAMA always has.
    pub(in crate::class) fn parse(p: &mut Params<'_>) -> Result<LamaParams, SpecError> {
        let min_interval = p.get("min_interval")?;
        let max_interval = p.get("max_interval")?;
        let interval = match p.take("interval") {
            None => None,
            Some("auto") => Some(Auto::Auto),
            Some(v) => Some(Auto::Value(
                v.parse().map_err(|_| p.bad_value("interval", v))?,
            )),
        };
        let (min, max) = (
            min_interval.unwrap_or(DEFAULT_MIN_INTERVAL),
            max_interval.unwrap_or(DEFAULT_MAX_INTERVAL),
        );
        if min == 0 || max < min {
            return Err(p.invalid("need 0 < min_interval <= max_interval"));
        }
        let period = p.get("period")?;
        let moves: Option<usize> = p.get("moves")?;
        let granularity = p.get_auto(
            "granularity",
            |&r: &usize| r >= 1,
            |_| "granularity must be `auto` or at least 1".to_string(),
        )?;
        let threshold: Option<f64> = p.get("threshold")?;
        if !(0.0..1.0).contains(&threshold.unwrap_or(DEFAULT_THRESHOLD))
            || moves.unwrap_or(DEFAULT_MAX_MOVES) == 0
        {
            return Err(p.invalid("need moves >= 1 and 0 <= threshold < 1"));
        }
        let pace = p.get("pace")?;
        Ok(LamaParams {
            interval,
            min_interval,
            max_interval,
            period,
            moves,
            granularity,
            threshold,
            pace,
        })
    }

    /// Writes `name` and the parameters given, `art` after them.
    pub(in crate::class) fn write(
        &self,
        f: &mut fmt::Formatter<'_>,
        name: &str,
        art: Option<&ResponseTimeParams>,
    ) -> fmt::Result {
        let none = ResponseTimeParams::default();
        let art = art.unwrap_or(&none);
        write_spec(
            f,
            name,
            &[
                ("interval", shown(&self.interval)),
                ("min_interval", shown(&self.min_interval)),
                ("max_interval", shown(&self.max_interval)),
                ("period", shown(&self.period)),
                ("moves", shown(&self.moves)),
                ("granularity", shown(&self.granularity)),
                ("threshold", shown(&self.threshold)),
                ("pace", shown(&self.pace)),
                ("hit_us", shown(&art.hit_us)),
                ("miss_us", shown(&art.miss_us)),
                ("miss_us_per_kib", shown(&art.miss_us_per_kib)),
            ],
        )
    }

    /// The policy minimising `target`, defaults filled in.
    pub fn build(&self, target: LamaTarget) -> Lama {
        let min = self.min_interval.unwrap_or(DEFAULT_MIN_INTERVAL);
        let max = self.max_interval.unwrap_or(DEFAULT_MAX_INTERVAL);
        let interval = match self.interval {
            None | Some(Auto::Auto) => Interval::Auto { min, max },
            Some(Auto::Value(m)) => Interval::Fixed(m),
        };
        let mut lama = Lama::new(target, interval);
        if self.min_interval.is_none() {
            lama.use_adaptive_floor();
        }
        lama.period_secs = self.period.unwrap_or(DEFAULT_PERIOD_SECS);
        lama.max_moves = self.moves.unwrap_or(DEFAULT_MAX_MOVES);
        lama.granularity = self.granularity.and_then(Auto::value);
        lama.threshold = self.threshold.unwrap_or(DEFAULT_THRESHOLD);
        lama.pace = self.pace.unwrap_or(DEFAULT_PACE);
        lama
    }
}

impl ResponseTimeParams {
    pub(in crate::class) fn parse(p: &mut Params<'_>) -> Result<ResponseTimeParams, SpecError> {
        Ok(ResponseTimeParams {
            hit_us: p.get("hit_us")?,
            miss_us: p.get("miss_us")?,
            miss_us_per_kib: p.get("miss_us_per_kib")?,
        })
    }

    /// The model, defaults filled in.
    pub fn build(&self) -> ResponseTimeModel {
        let d = ResponseTimeModel::default();
        ResponseTimeModel {
            hit_us: self.hit_us.unwrap_or(d.hit_us),
            miss_us: self.miss_us.unwrap_or(d.miss_us),
            miss_us_per_kib: self.miss_us_per_kib.unwrap_or(d.miss_us_per_kib),
        }
    }
}
