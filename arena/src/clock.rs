//! The virtual clock: the arena's only time source.
//!
//! [`VirtualClock`] parses the scenario's start instant strictly as RFC 3339
//! UTC (`YYYY-MM-DDTHH:MM:SS[.1-9 digits]Z`, year 1970 to 2999, the day
//! checked against its month and leap years), stores it as Unix nanoseconds,
//! and moves only when told to: by a tick, by an explicit advance, or by
//! being set to a scheduled offset. Nothing here reads the wall clock.
//!
//! Formatting rule: the start instant formats back exactly as written (same
//! number of fraction digits, none if none were given); every other instant
//! formats with `max(start digits, 3)` fraction digits, so millisecond steps
//! are never lost and a nanosecond start keeps its nanoseconds.

use crate::error::ArenaError;

/// The default tick between scheduled actions, in milliseconds.
pub const DEFAULT_TICK_MS: u64 = 1;

const NANOS_PER_MS: u128 = 1_000_000;
const NANOS_PER_SECOND: u128 = 1_000_000_000;
const FIELD: &str = "virtual_clock_start";

/// A deterministic clock that starts at the scenario's instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VirtualClock {
    /// Unix nanoseconds of the start instant; every offset is relative to it.
    start_nanos: u128,
    /// Fraction digits written in the start text, so it formats back verbatim.
    start_fraction_digits: u8,
    /// Unix nanoseconds of the current instant.
    now_nanos: u128,
    /// Milliseconds one [`VirtualClock::tick`] moves.
    tick_ms: u64,
}

impl VirtualClock {
    /// Parses a strict RFC 3339 UTC instant; the clock starts there with the
    /// default 1 ms tick.
    pub fn parse(text: &str) -> Result<Self, ArenaError> {
        let (start_nanos, digits) =
            parse_rfc3339_utc(text).map_err(|reason| ArenaError::BadClockStart {
                field: FIELD.to_string(),
                reason,
            })?;
        Ok(Self {
            start_nanos,
            start_fraction_digits: digits,
            now_nanos: start_nanos,
            tick_ms: DEFAULT_TICK_MS,
        })
    }

    /// Returns the clock with another tick; a zero tick is raised to 1 ms
    /// because the scheduler needs distinct instants per declaration index.
    pub fn with_tick_ms(mut self, tick_ms: u64) -> Self {
        self.tick_ms = tick_ms.max(1);
        self
    }

    /// Unix nanoseconds of the start instant.
    pub fn start_nanos(&self) -> u128 {
        self.start_nanos
    }

    /// Unix nanoseconds of the current instant.
    pub fn now_nanos(&self) -> u128 {
        self.now_nanos
    }

    /// Unix milliseconds of the current instant (sub-millisecond part dropped).
    pub fn now_ms(&self) -> u64 {
        // Years up to 2999 plus any u64 millisecond offset stay far below u64::MAX ms.
        u64::try_from(self.now_nanos / NANOS_PER_MS).unwrap_or(u64::MAX)
    }

    /// Milliseconds elapsed since the start instant.
    pub fn offset_ms(&self) -> u64 {
        u64::try_from((self.now_nanos - self.start_nanos) / NANOS_PER_MS).unwrap_or(u64::MAX)
    }

    /// The tick in milliseconds.
    pub fn tick_ms(&self) -> u64 {
        self.tick_ms
    }

    /// Moves the clock forward by one tick.
    pub fn tick(&mut self) {
        self.advance(self.tick_ms);
    }

    /// Moves the clock forward by `ms` milliseconds.
    pub fn advance(&mut self, ms: u64) {
        self.now_nanos += u128::from(ms) * NANOS_PER_MS;
    }

    /// Sets the clock to `start + offset_ms`; the scheduler calls this with
    /// each action's evaluation offset.
    pub fn set_offset_ms(&mut self, offset_ms: u64) {
        self.now_nanos = self.start_nanos + u128::from(offset_ms) * NANOS_PER_MS;
    }

    /// The start instant, formatted exactly as it was written.
    pub fn format_start(&self) -> String {
        format_rfc3339(self.start_nanos, self.start_fraction_digits)
    }

    /// The current instant, with `max(start digits, 3)` fraction digits.
    pub fn format(&self) -> String {
        format_rfc3339(self.now_nanos, self.start_fraction_digits.max(3))
    }

    /// The instant `start + offset_ms`, formatted like [`VirtualClock::format`].
    pub fn format_offset_ms(&self, offset_ms: u64) -> String {
        let nanos = self.start_nanos + u128::from(offset_ms) * NANOS_PER_MS;
        format_rfc3339(nanos, self.start_fraction_digits.max(3))
    }
}

fn digits(bytes: &[u8]) -> Option<u32> {
    if bytes.is_empty() || !bytes.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(
        bytes
            .iter()
            .fold(0u32, |acc, b| acc * 10 + u32::from(b - b'0')),
    )
}

fn is_leap(year: u32) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if is_leap(year) => 29,
        _ => 28,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The inverse of [`days_from_civil`].
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Parses `YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z` into Unix nanoseconds and the
/// number of fraction digits written.
fn parse_rfc3339_utc(text: &str) -> Result<(u128, u8), &'static str> {
    let b = text.as_bytes();
    if b.len() < 20 {
        return Err("too short for YYYY-MM-DDTHH:MM:SSZ");
    }
    if b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
        return Err("separators must be '-', 'T' and ':' at their RFC 3339 positions");
    }
    if b[b.len() - 1] != b'Z' {
        return Err("the instant must end with 'Z' (UTC)");
    }
    let year = digits(&b[0..4]).ok_or("year must be four digits")?;
    let month = digits(&b[5..7]).ok_or("month must be two digits")?;
    let day = digits(&b[8..10]).ok_or("day must be two digits")?;
    let hour = digits(&b[11..13]).ok_or("hour must be two digits")?;
    let minute = digits(&b[14..16]).ok_or("minute must be two digits")?;
    let second = digits(&b[17..19]).ok_or("second must be two digits")?;
    if !(1970..=2999).contains(&year) {
        return Err("year must be between 1970 and 2999");
    }
    if !(1..=12).contains(&month) {
        return Err("month must be between 01 and 12");
    }
    if day < 1 || day > days_in_month(year, month) {
        return Err("day does not exist in that month");
    }
    if hour > 23 || minute > 59 || second > 59 {
        return Err("time of day out of range");
    }
    let rest = &b[19..b.len() - 1];
    let (fraction_nanos, fraction_digits) = if rest.is_empty() {
        (0u128, 0u8)
    } else {
        if rest[0] != b'.' {
            return Err("only a '.' fraction may follow the seconds");
        }
        let frac = &rest[1..];
        if frac.is_empty() || frac.len() > 9 {
            return Err("the fraction must have 1 to 9 digits");
        }
        let value = digits(frac).ok_or("the fraction must be digits")?;
        let scale = 10u128.pow(9 - frac.len() as u32);
        // frac.len() is 1..=9, checked above.
        (u128::from(value) * scale, frac.len() as u8)
    };
    let days = days_from_civil(i64::from(year), i64::from(month), i64::from(day));
    // The year range keeps `days` non-negative.
    let days = u128::try_from(days).map_err(|_| "date before 1970")?;
    let seconds =
        days * 86_400 + u128::from(hour) * 3_600 + u128::from(minute) * 60 + u128::from(second);
    Ok((seconds * NANOS_PER_SECOND + fraction_nanos, fraction_digits))
}

fn format_rfc3339(nanos: u128, fraction_digits: u8) -> String {
    let total_seconds = nanos / NANOS_PER_SECOND;
    let fraction = nanos % NANOS_PER_SECOND;
    let days = i64::try_from(total_seconds / 86_400).unwrap_or(i64::MAX / 2);
    let secs_of_day = total_seconds % 86_400;
    let (year, month, day) = civil_from_days(days);
    let mut out = format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        secs_of_day / 3_600,
        (secs_of_day / 60) % 60,
        secs_of_day % 60
    );
    if fraction_digits > 0 {
        let digits = usize::from(fraction_digits.min(9));
        let text = format!("{fraction:09}");
        out.push('.');
        out.push_str(&text[..digits]);
    }
    out.push('Z');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    // The epoch and a known instant convert to the expected Unix time.
    #[test]
    fn known_instants_convert() {
        let epoch = VirtualClock::parse("1970-01-01T00:00:00Z").unwrap();
        assert_eq!(epoch.start_nanos(), 0);
        let seed = VirtualClock::parse("2026-10-12T09:00:00.000Z").unwrap();
        assert_eq!(seed.now_ms(), 1_791_795_600_000);
    }

    // Formatting round-trips through civil dates for every day of a leap year.
    #[test]
    fn civil_round_trip_over_a_leap_year() {
        let start = days_from_civil(2028, 1, 1);
        for d in start..start + 366 {
            let (y, m, day) = civil_from_days(d);
            assert_eq!(days_from_civil(y, m, day), d);
        }
    }
}
