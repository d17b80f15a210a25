//! The `Date` header value SPEC.md requires on every response: IMF-fixdate
//! (RFC 9110 §5.6.7), e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
//!
//! std has no calendar, so the date is computed here from `SystemTime`. Like
//! real servers, a row formats it at most once a second: `now()` keeps the
//! formatted value of the current second per thread and hands out copies of
//! those 29 bytes until the second changes (no lock, no allocation).

use std::cell::Cell;
use std::time::{SystemTime, UNIX_EPOCH};

/// Length of an IMF-fixdate.
pub const LEN: usize = 29;

const SECS_PER_DAY: u64 = 86_400;
/// Days in 400 Gregorian years: the calendar repeats exactly after that.
const DAYS_PER_ERA: u64 = 146_097;
/// Days from 0000-03-01 (the start of the shifted calendar below) to 1970-01-01.
const EPOCH_SHIFT: u64 = 719_468;

/// 1970-01-01 was a Thursday.
const WEEKDAYS: [&[u8; 3]; 7] = [b"Thu", b"Fri", b"Sat", b"Sun", b"Mon", b"Tue", b"Wed"];
const MONTHS: [&[u8; 3]; 12] =
    [b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec"];

/// (year, month 1..=12, day 1..=31) of the day `days` after 1970-01-01 in the
/// Gregorian calendar.
///
/// The year is counted from March, so February, with the leap day, is the last
/// month: then every month but February has a fixed length pattern (31 30 31
/// 30 31 repeating from March, 153 days per 5 months), and the leap day only
/// moves where the year ends. Within a 400-year era the year follows from the
/// day by correcting 365-day years for the 4/100/400-year leap rules.
pub fn civil_from_days(days: u64) -> (u64, u32, u32) {
    let shifted = days + EPOCH_SHIFT;
    let era = shifted / DAYS_PER_ERA;
    let day_of_era = shifted % DAYS_PER_ERA; // 0..=146_096
    // Leap days before this day within the era: one per 4 years (1460 days),
    // none per 100 years (36_524 days), one more at the era's very last day.
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / (DAYS_PER_ERA - 1)) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100); // 0..=365, from March 1
    let month_from_march = (5 * day_of_year + 2) / 153; // 0..=11
    let day = (day_of_year - (153 * month_from_march + 2) / 5 + 1) as u32;
    let month = if month_from_march < 10 { month_from_march + 3 } else { month_from_march - 9 } as u32;
    // January and February belong to the next calendar year.
    let year = era * 400 + year_of_era + u64::from(month <= 2);
    (year, month, day)
}

/// The IMF-fixdate of `unix_secs` seconds after 1970-01-01 00:00:00 UTC
/// (years past 9999 are written as 9999: four digits is the format).
pub fn imf_fixdate(unix_secs: u64) -> [u8; LEN] {
    let days = unix_secs / SECS_PER_DAY;
    let secs_of_day = unix_secs % SECS_PER_DAY;
    let (year, month, day) = civil_from_days(days);
    let year = year.min(9999);
    let mut out = *b"Thu, 01 Jan 1970 00:00:00 GMT";
    out[0..3].copy_from_slice(WEEKDAYS[(days % 7) as usize]);
    two_digits(&mut out[5..7], u64::from(day));
    out[8..11].copy_from_slice(MONTHS[month as usize - 1]);
    two_digits(&mut out[12..14], year / 100);
    two_digits(&mut out[14..16], year % 100);
    two_digits(&mut out[17..19], secs_of_day / 3600);
    two_digits(&mut out[20..22], secs_of_day / 60 % 60);
    two_digits(&mut out[23..25], secs_of_day % 60);
    out
}

fn two_digits(out: &mut [u8], n: u64) {
    out[0] = b'0' + (n / 10) as u8;
    out[1] = b'0' + (n % 10) as u8;
}

thread_local! {
    /// This thread's second and its formatted date (u64::MAX: none yet).
    static CACHE: Cell<(u64, [u8; LEN])> = const { Cell::new((u64::MAX, [0; LEN])) };
}

/// The `Date` value for now: formatted when this thread first needs the
/// current second, a copy of the cached bytes otherwise.
pub fn now() -> [u8; LEN] {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    CACHE.with(|cache| {
        let (cached_secs, text) = cache.get();
        if cached_secs == secs {
            return text;
        }
        let text = imf_fixdate(secs);
        cache.set((secs, text));
        text
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(secs: u64) -> String {
        String::from_utf8(imf_fixdate(secs).to_vec()).unwrap()
    }

    #[test]
    fn known_dates() {
        assert_eq!(fmt(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(fmt(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT"); // RFC 9110's example
        assert_eq!(fmt(951_782_400), "Tue, 29 Feb 2000 00:00:00 GMT"); // leap day of a 400-year leap year
        assert_eq!(fmt(951_868_799), "Tue, 29 Feb 2000 23:59:59 GMT");
        assert_eq!(fmt(951_868_800), "Wed, 01 Mar 2000 00:00:00 GMT");
        assert_eq!(fmt(1_078_012_800), "Sun, 29 Feb 2004 00:00:00 GMT");
        assert_eq!(fmt(1_234_567_890), "Fri, 13 Feb 2009 23:31:30 GMT");
        assert_eq!(fmt(1_700_000_000), "Tue, 14 Nov 2023 22:13:20 GMT");
        assert_eq!(fmt(4_107_542_399), "Sun, 28 Feb 2100 23:59:59 GMT"); // 2100 is no leap year
        assert_eq!(fmt(4_107_542_400), "Mon, 01 Mar 2100 00:00:00 GMT");
        assert_eq!(fmt(253_402_300_799), "Fri, 31 Dec 9999 23:59:59 GMT");
    }

    /// Walks day by day from 1970 to 2500 with a plain calendar (month lengths
    /// and the leap rule written out) and compares every day.
    #[test]
    fn every_day_against_a_naive_calendar() {
        let (mut y, mut m, mut d) = (1970u64, 1u32, 1u32);
        for days in 0..(531 * 366) {
            assert_eq!(civil_from_days(days), (y, m, d), "day {days}");
            let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
            let len = match m {
                2 if leap => 29,
                2 => 28,
                4 | 6 | 9 | 11 => 30,
                _ => 31,
            };
            d += 1;
            if d > len {
                d = 1;
                m += 1;
                if m > 12 {
                    m = 1;
                    y += 1;
                }
            }
        }
    }

    #[test]
    fn weekdays_cycle() {
        let names: Vec<String> = (0..7).map(|i| fmt(i * SECS_PER_DAY)[..3].to_string()).collect();
        assert_eq!(names, ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]);
    }

    #[test]
    fn now_is_cached_and_current() {
        let before = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
        let a = now();
        let b = now();
        let after = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
        assert!(a == imf_fixdate(before) || a == imf_fixdate(after));
        assert!(b == a || b == imf_fixdate(after));
        assert_eq!(CACHE.with(Cell::get).1, b);
    }
}
