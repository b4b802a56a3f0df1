//! Times as people read them: "2026-11-30 14:05" in the browser's zone,
//! and "5 minutes ago". Plain Rust, tested on the host; the zone offset is
//! passed in (the browser's comes from [`crate::clock::minutes_east_at`]).

use crate::model::approval::parse_rfc3339_ms;

/// "2026-11-30 14:05": the RFC 3339 time `at` in a zone east of UTC by
/// `minutes_east_at(ms)` minutes; `at` itself if it cannot be read.
pub fn date_time_text(at: &str, minutes_east_at: impl Fn(f64) -> i64) -> String {
    let Some(ms) = parse_rfc3339_ms(at) else {
        return at.to_owned();
    };
    #[expect(
        clippy::cast_possible_truncation,
        reason = "minutes since 1970 fit in i64"
    )]
    let minutes = (ms / 60_000.0).floor() as i64 + minutes_east_at(ms);
    let (days, of_day) = (minutes.div_euclid(24 * 60), minutes.rem_euclid(24 * 60));
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}",
        of_day / 60,
        of_day % 60
    )
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

/// The proleptic Gregorian date of a day count since 1970-01-01 (H.
/// Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn civil_from_days_inverts_the_parser() {
        for date in ["1970-01-01", "2000-02-29", "2026-12-31", "2100-03-01"] {
            let ms = parse_rfc3339_ms(&format!("{date}T00:00:00Z")).expect("date");
            #[expect(clippy::cast_possible_truncation, reason = "whole days")]
            let days = (ms / 86_400_000.0) as i64;
            let (y, m, d) = civil_from_days(days);
            assert_eq!(format!("{y:04}-{m:02}-{d:02}"), date);
        }
    }
}
