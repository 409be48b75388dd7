//! Where `now` comes from. Schedule maths take `now` as an argument; a
//! [`Clock`] supplies it. By default it is the Redis server's clock (`TIME`),
//! so hosts with skewed clocks agree on which period it is.

use chrono::{DateTime, Utc};
use std::fmt;
use std::sync::{Arc, Mutex};

/// A source of the current time.
///
/// `now()` returning `None` means "ask the Redis server" (`TIME`), which is
/// what [`ServerClock`] does and what every filter uses unless told
/// otherwise.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current time, or `None` for the Redis server's time.
    fn now(&self) -> Option<DateTime<Utc>>;
}

/// The Redis server's clock (the default).
#[derive(Clone, Copy, Debug, Default)]
pub struct ServerClock;

impl Clock for ServerClock {
    fn now(&self) -> Option<DateTime<Utc>> {
        None
    }
}

/// This host's clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Option<DateTime<Utc>> {
        Some(Utc::now())
    }
}

/// A clock that moves only when told: a month of schedule in a millisecond
/// of test. Clones share the same time.
///
/// ```
/// use rotabloom::{Clock, ManualClock};
/// use chrono::{TimeZone, Utc, Duration};
/// let clock = ManualClock::new(Utc.with_ymd_and_hms(2024, 2, 28, 23, 0, 0).unwrap());
/// clock.advance(Duration::hours(2));
/// assert_eq!(clock.now(), Some(Utc.with_ymd_and_hms(2024, 2, 29, 1, 0, 0).unwrap()));
/// ```
#[derive(Clone, Debug)]
pub struct ManualClock(Arc<Mutex<DateTime<Utc>>>);

impl ManualClock {
    /// A clock showing `now`.
    pub fn new(now: DateTime<Utc>) -> ManualClock {
        ManualClock(Arc::new(Mutex::new(now)))
    }

    /// Sets the time.
    pub fn set(&self, now: DateTime<Utc>) {
        *crate::poison::lock(&self.0) = now;
    }

    /// Moves the time forward (or back, with a negative duration).
    pub fn advance(&self, by: chrono::Duration) {
        let now = self.get() + by;
        self.set(now);
    }

    fn get(&self) -> DateTime<Utc> {
        *crate::poison::lock(&self.0)
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Option<DateTime<Utc>> {
        Some(self.get())
    }
}

/// One instant, given by the caller for one operation (`rotate_if_due_at`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct FixedClock(pub DateTime<Utc>);

impl Clock for FixedClock {
    fn now(&self) -> Option<DateTime<Utc>> {
        Some(self.0)
    }
}
