//! Time as the engine sees it: memcached's relative seconds, passed in by the caller.
//!
//! The engine never reads the wall clock. The server passes the real clock, the simulator a logical one.
//! `now` counts seconds since `process_started_unix`; it is never 0, because an exptime of 0 means
//! "never expires" (memcached starts its clock at 62 for the same reason).

/// Exptimes above this many seconds (30 days) are absolute Unix times, as in memcached.
pub const REALTIME_MAXDELTA_SECS: i64 = 60 * 60 * 24 * 30;

/// The instant of one engine call.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Clock {
    /// Seconds since `process_started_unix`; at least 1.
    pub now: u32,
    /// The Unix time that relative time 0 stands for.
    pub process_started_unix: i64,
}

impl Clock {
    /// A logical clock for simulation and tests, starting like memcached's at 62 s.
    pub fn logical(now: u32) -> Clock {
        Clock {
            now: now.max(1),
            process_started_unix: 0,
        }
    }

    /// memcached's `realtime()`: a protocol exptime to a relative expiry (0 = never). Negative exptimes and
    /// absolute times in the past give 1, which is already expired.
    pub fn expiry(&self, exptime: i64) -> u32 {
        // memcached maps negative values to an absolute time in 1970, always before the process started.
        if exptime < 0 {
            return 1;
        }
        if exptime == 0 {
            return 0;
        }
        if exptime > REALTIME_MAXDELTA_SECS {
            if exptime <= self.process_started_unix {
                return 1;
            }
            return (exptime - self.process_started_unix).min(u32::MAX as i64) as u32;
        }
        (exptime + self.now as i64).min(u32::MAX as i64) as u32
    }

    /// The Unix time of relative time `relative` on this clock.
    pub fn unix_time(&self, relative: u32) -> i64 {
        self.process_started_unix + i64::from(relative)
    }

    /// Unix time `unix` as relative time on this clock, clamped to `0..=u32::MAX` (a time before this
    /// clock started is 0; callers treat a relative expiry at or before `now` as expired).
    pub fn relative(&self, unix: i64) -> u32 {
        (unix - self.process_started_unix).clamp(0, i64::from(u32::MAX)) as u32
    }

    /// Whether a relative expiry has passed.
    pub fn is_expired(&self, expiry: u32) -> bool {
        expiry != 0 && expiry <= self.now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exptime_conversion_follows_memcached() {
        let clock = Clock {
            now: 100,
            process_started_unix: 1_700_000_000,
        };
        assert_eq!(clock.expiry(0), 0);
        assert_eq!(clock.expiry(10), 110);
        assert_eq!(
            clock.expiry(REALTIME_MAXDELTA_SECS),
            100 + REALTIME_MAXDELTA_SECS as u32
        );
        assert_eq!(clock.expiry(-1), 1, "negative: stored but already expired");
        assert!(clock.is_expired(clock.expiry(-1)));
        assert_eq!(clock.expiry(1_000_000_000), 1, "absolute time in the past");
        assert_eq!(clock.expiry(1_700_000_500), 500);
        assert!(!clock.is_expired(0));
    }

    #[test]
    fn relative_and_unix_times_convert_through_the_wall_clock() {
        let before = Clock {
            now: 500,
            process_started_unix: 1_700_000_000,
        };
        let after = Clock {
            now: 62,
            process_started_unix: 1_700_000_900,
        };
        // 600 s to live at `before`'s now; 462 s of wall time later, 138 s are left.
        let unix = before.unix_time(1100);
        assert_eq!(after.relative(unix), 200);
        assert_eq!(after.relative(0), 0);
        assert_eq!(before.unix_time(0), 1_700_000_000);
    }
}
