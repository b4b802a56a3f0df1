//! Times as people read them: "2026-11-30 14:05" in the browser's zone,
//! "14:05", and "5 minutes ago"; and the one reader of the RFC 3339 times
//! the server sends. Plain Rust, tested on the host; the zone offset is
//! passed in (the browser's comes from [`crate::clock::minutes_east_at`]).
//!
//! The calendar is the `time` crate's: this module only parses with it,
//! moves an instant into a zone and formats the fields. Instants are also
//! handed around as milliseconds since the epoch (an `f64`), because that
//! is what the browser's clock (`Date.now()`) gives to compare with.

use time::format_description::well_known::Rfc3339;
use time::{OffsetDateTime, UtcOffset};

/// An RFC 3339 time such as `2026-05-01T12:00:00.123456Z` or `…+02:00`
/// (white space around it ignored); `None` if it is not one.
pub fn parse_rfc3339(text: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(text.trim(), &Rfc3339).ok()
}

/// Milliseconds since the Unix epoch of an RFC 3339 time (see
/// [`parse_rfc3339`]); `None` if it is not one.
pub fn parse_rfc3339_ms(text: &str) -> Option<f64> {
    let at = parse_rfc3339(text)?;
    // Exact: every instant of interest is far below 2^53 ms.
    #[expect(clippy::cast_precision_loss, reason = "seconds since 1970 fit in f64")]
    let seconds = at.unix_timestamp() as f64;
    Some(seconds * 1000.0 + f64::from(at.nanosecond()) / 1_000_000.0)
}

/// The instant `ms` (milliseconds since the epoch) as a date and time in a
/// zone `minutes_east` of UTC, to the millisecond; `None` when it cannot be
/// one (not a number, a year past ±9999, an offset past ±26 hours).
pub fn local_at(ms: f64, minutes_east: i64) -> Option<OffsetDateTime> {
    if !ms.is_finite() {
        return None;
    }
    #[expect(
        clippy::cast_possible_truncation,
        reason = "milliseconds since 1970 of any representable date fit in i64"
    )]
    let whole_ms = ms.floor() as i64;
    let utc = OffsetDateTime::from_unix_timestamp_nanos(i128::from(whole_ms) * 1_000_000).ok()?;
    let seconds_east = i32::try_from(minutes_east.checked_mul(60)?).ok()?;
    utc.checked_to_offset(UtcOffset::from_whole_seconds(seconds_east).ok()?)
}

/// "2026-11-30 14:05": the RFC 3339 time `at` in a zone east of UTC by
/// `minutes_east_at(ms)` minutes; `at` itself if it cannot be read.
pub fn date_time_text(at: &str, minutes_east_at: impl Fn(f64) -> i64) -> String {
    let Some(local) = parse_rfc3339_ms(at).and_then(|ms| local_at(ms, minutes_east_at(ms))) else {
        return at.to_owned();
    };
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}",
        local.year(),
        u8::from(local.month()),
        local.day(),
        local.hour(),
        local.minute()
    )
}

/// "2026-11-30 14:05:09 UTC+01:00": the RFC 3339 time `at` to the second
/// in the browser's zone (`minutes_east_at(ms)` minutes east of UTC),
/// with that zone's offset, as an audit trail shows it; `at` itself if it
/// cannot be read.
pub fn full_time_text(at: &str, minutes_east_at: impl Fn(f64) -> i64) -> String {
    let Some(local) = parse_rfc3339_ms(at).and_then(|ms| local_at(ms, minutes_east_at(ms))) else {
        return at.to_owned();
    };
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02} {}",
        local.year(),
        u8::from(local.month()),
        local.day(),
        local.hour(),
        local.minute(),
        local.second(),
        zone_text(local.offset().whole_minutes())
    )
}

/// "UTC", "UTC+01:00", "UTC-05:30": a zone `minutes_east` of UTC.
pub fn zone_text(minutes_east: i16) -> String {
    if minutes_east == 0 {
        return "UTC".to_owned();
    }
    let sign = if minutes_east < 0 { '-' } else { '+' };
    let minutes = minutes_east.unsigned_abs();
    format!("UTC{sign}{:02}:{:02}", minutes / 60, minutes % 60)
}

/// The start of the day `date` (`YYYY-MM-DD`, as a date input gives it)
/// in the browser's zone, as RFC 3339 with that zone's offset
/// ("2026-12-07T00:00:00+01:00"); with `next`, the start of the day
/// after (an exclusive end that covers `date`). `None` if `date` is none.
pub fn day_start_rfc3339(
    date: &str,
    next: bool,
    minutes_east_at: impl Fn(f64) -> i64,
) -> Option<String> {
    let utc = OffsetDateTime::parse(&format!("{}T00:00:00Z", date.trim()), &Rfc3339).ok()?;
    let day = if next {
        utc.checked_add(time::Duration::days(1))?
    } else {
        utc
    };
    #[expect(clippy::cast_precision_loss, reason = "seconds since 1970 fit in f64")]
    let ms = day.unix_timestamp() as f64 * 1000.0;
    // Local midnight is `offset` before UTC midnight; the offset is the
    // zone's at that instant (a day that starts a DST change still
    // starts at its own midnight).
    let guess = f64::from(i32::try_from(minutes_east_at(ms)).ok()?);
    let offset = minutes_east_at(ms - 60_000.0 * guess);
    let offset = i16::try_from(offset).ok()?;
    let sign = if offset < 0 { '-' } else { '+' };
    let minutes = offset.unsigned_abs();
    Some(format!(
        "{:04}-{:02}-{:02}T00:00:00{sign}{:02}:{:02}",
        day.year(),
        u8::from(day.month()),
        day.day(),
        minutes / 60,
        minutes % 60
    ))
}

/// "14:05": the wall-clock time of `ms` (since the Unix epoch) in a zone
/// `minutes_east` of UTC; empty if it is no time (see [`local_at`]).
pub fn clock_text(ms: f64, minutes_east: i64) -> String {
    local_at(ms, minutes_east).map_or_else(String::new, |local| {
        format!("{:02}:{:02}", local.hour(), local.minute())
    })
}

/// "just now", "5 minutes ago", "3 hours ago", "2 days ago": how long
/// before `now_ms` the RFC 3339 time `at` was; `None` if it cannot be read.
/// A time slightly ahead (clocks differ) is "just now".
pub fn ago_text(at: &str, now_ms: f64) -> Option<String> {
    let then = parse_rfc3339_ms(at)?;
    #[expect(
        clippy::cast_possible_truncation,
        reason = "minutes between two nearby instants fit in i64"
    )]
    let minutes = ((now_ms - then) / 60_000.0).floor() as i64;
    let plural = |n: i64, unit: &str| {
        if n == 1 {
            format!("1 {unit} ago")
        } else {
            format!("{n} {unit}s ago")
        }
    };
    Some(match minutes {
        ..1 => "just now".to_owned(),
        1..60 => plural(minutes, "minute"),
        60..1440 => plural(minutes / 60, "hour"),
        _ => plural(minutes / 1440, "day"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_times_carry_seconds_and_the_zone() {
        let cases = [
            (
                "2026-11-30T13:05:09.123456Z",
                60,
                "2026-11-30 14:05:09 UTC+01:00",
            ),
            ("2026-11-30T13:05:09Z", 0, "2026-11-30 13:05:09 UTC"),
            (
                "2026-11-30T03:05:09Z",
                -330,
                "2026-11-29 21:35:09 UTC-05:30",
            ),
            ("not a time", 60, "not a time"),
        ];
        for (at, east, want) in cases {
            assert_eq!(full_time_text(at, |_| east), want, "{at} at {east}");
        }
    }

    #[test]
    fn a_days_start_is_local_midnight_with_its_offset() {
        assert_eq!(
            day_start_rfc3339("2026-12-07", false, |_| 60).as_deref(),
            Some("2026-12-07T00:00:00+01:00")
        );
        assert_eq!(
            day_start_rfc3339("2026-12-31", true, |_| -300).as_deref(),
            Some("2027-01-01T00:00:00-05:00"),
            "the next day, across a year"
        );
        assert_eq!(
            day_start_rfc3339("2026-12-07", false, |_| 0).as_deref(),
            Some("2026-12-07T00:00:00+00:00")
        );
        assert_eq!(day_start_rfc3339("", false, |_| 0), None);
        assert_eq!(day_start_rfc3339("07/12/2026", false, |_| 0), None);
    }

    #[test]
    fn rfc3339_times_are_read_with_fractions_and_offsets() {
        let cases = [
            ("1970-01-01T00:00:00Z", Some(0.0), "the epoch"),
            (
                "2026-05-01T12:00:00Z",
                Some(1_777_636_800_000.0),
                "a UTC time",
            ),
            (
                "2026-05-01T12:00:00.250+00:00",
                Some(1_777_636_800_250.0),
                "fraction and +00:00",
            ),
            (
                "2026-05-01T14:30:00+02:30",
                Some(1_777_636_800_000.0),
                "a positive offset",
            ),
            (
                "2026-05-01T11:00:00.123456789-01:00",
                Some(1_777_636_800_123.456_8),
                "nanoseconds and a negative offset",
            ),
            (
                "2024-02-29T00:00:00Z",
                Some(1_709_164_800_000.0),
                "leap day",
            ),
            ("2026-05-01 12:00:00Z", Some(1_777_636_800_000.0), "space"),
            ("2026-05-01T12:00:00", None, "no offset"),
            ("2026-13-01T12:00:00Z", None, "month 13"),
            ("yesterday", None, "not a time"),
            ("", None, "empty"),
        ];
        for (text, expected, why) in cases {
            let got = parse_rfc3339_ms(text);
            match (got, expected) {
                (Some(got), Some(expected)) => {
                    assert!((got - expected).abs() < 0.01, "{why}: {got} != {expected}");
                }
                _ => assert_eq!(got, expected, "{why}"),
            }
        }
    }

    #[test]
    fn rfc3339_reading_is_as_strict_as_the_rfc_and_as_lenient_as_its_note() {
        let cases = [
            ("2026-05-01t12:00:00z", true, "lower-case t and z"),
            (" 2026-05-01T12:00:00Z\n", true, "white space around"),
            ("2016-12-31T23:59:60Z", true, "a real leap second"),
            ("2026-02-30T12:00:00Z", false, "February 30th"),
            ("2026-05-01T24:00:00Z", false, "hour 24"),
            (
                "2026-05-01T12:00:00+0200",
                false,
                "an offset without its colon",
            ),
            ("2026-05-01T12:00:00.Z", false, "a point without digits"),
            ("26-05-01T12:00:00Z", false, "a two-digit year"),
        ];
        for (text, readable, why) in cases {
            assert_eq!(parse_rfc3339(text).is_some(), readable, "{why}");
        }
    }

    #[test]
    fn clock_times_are_local_and_wrap_around_midnight() {
        let noon_utc = 1_777_636_800_000.0; // 2026-05-01T12:00:00Z
        let cases = [
            (noon_utc, 0, "12:00", "UTC"),
            (
                noon_utc + 59_999.0,
                0,
                "12:00",
                "seconds are cut, not rounded",
            ),
            (noon_utc + 5.0 * 60_000.0, 120, "14:05", "two hours east"),
            (noon_utc, 330, "17:30", "a half-hour zone"),
            (noon_utc, -13 * 60, "23:00", "far west: the day before"),
            (noon_utc + 12.0 * 3_600_000.0, 60, "01:00", "past midnight"),
        ];
        for (ms, east, expected, why) in cases {
            assert_eq!(clock_text(ms, east), expected, "{why}");
        }
    }

    #[test]
    fn date_time_text_shows_the_local_date_and_minute() {
        let cases = [
            ("2026-11-30T10:37:40.123Z", 0, "2026-11-30 10:37", "UTC"),
            (
                "2026-11-30T10:37:40Z",
                60,
                "2026-11-30 11:37",
                "an hour east",
            ),
            (
                "2026-01-01T00:30:00Z",
                -60,
                "2025-12-31 23:30",
                "west, across a year",
            ),
            (
                "2024-02-29T23:59:00+00:00",
                1,
                "2024-03-01 00:00",
                "a leap day",
            ),
            ("1970-01-01T00:00:00Z", 0, "1970-01-01 00:00", "the epoch"),
            (
                "2026-11-30T12:00:00+02:00",
                0,
                "2026-11-30 10:00",
                "an offset in the text",
            ),
            ("not a time", 0, "not a time", "unreadable: as it came"),
        ];
        for (at, east, want, why) in cases {
            assert_eq!(date_time_text(at, |_| east), want, "{why}");
        }
    }

    #[test]
    fn ago_text_rounds_down_to_the_largest_unit() {
        let now = parse_rfc3339_ms("2026-11-30T12:00:00Z").expect("time");
        let cases = [
            ("2026-11-30T12:00:30Z", "just now", "slightly ahead"),
            ("2026-11-30T11:59:30Z", "just now", "seconds"),
            ("2026-11-30T11:59:00Z", "1 minute ago", "one minute"),
            ("2026-11-30T11:15:00Z", "45 minutes ago", "minutes"),
            ("2026-11-30T11:00:00Z", "1 hour ago", "one hour"),
            ("2026-11-30T01:00:00Z", "11 hours ago", "hours"),
            ("2026-11-28T11:00:00Z", "2 days ago", "days"),
        ];
        for (at, want, why) in cases {
            assert_eq!(ago_text(at, now).as_deref(), Some(want), "{why}");
        }
        assert_eq!(ago_text("yesterday", now), None);
    }

    #[test]
    fn a_parsed_date_reads_back_as_it_was_written() {
        for date in ["1970-01-01", "2000-02-29", "2026-12-31", "2100-03-01"] {
            let ms = parse_rfc3339_ms(&format!("{date}T00:00:00Z")).expect("date");
            let local = local_at(ms, 0).expect("a representable instant");
            let (y, m, d) = (local.year(), u8::from(local.month()), local.day());
            assert_eq!(format!("{y:04}-{m:02}-{d:02}"), date);
        }
    }
}
