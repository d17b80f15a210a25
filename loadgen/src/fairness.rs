//! Connection fairness (issue 35): how the measured window's completed
//! requests spread over the connection slots (closed load: the connections;
//! sessions: the users). A server that serves a few connections and leaves
//! the rest waiting can post a fine p99 over what it answered; these counts
//! show the starved slots. A slot keeps its count across reconnects.
//!
//! A completion is a response of any status; a request that ended in an error
//! (a timeout, a reset) completed nothing, so a slot whose requests only time
//! out counts as waiting.

use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// One worker thread's per-slot counts. Every array is allocated at the start
/// of the run; a completion is a few integer updates.
#[derive(Debug, Clone)]
pub struct SlotCounts {
    window_start: Instant,
    completed: Vec<u64>,
    /// When each slot last completed a request, µs into the window (0: the window's start).
    last_us: Vec<u64>,
    /// Each slot's longest gap so far between the window's start and its completions.
    longest_us: Vec<u64>,
    /// The second of the window in which each slot last completed (NEVER: none yet).
    last_sec: Vec<u32>,
    /// Slots that completed at least one request, per second of the window.
    served_per_s: Vec<u64>,
}

const NEVER: u32 = u32::MAX;

impl SlotCounts {
    /// `slots` slots, measured from `window_start`; `window` (when the run has
    /// a planned end) sizes the per-second counts so that they never grow.
    pub fn new(slots: usize, window_start: Instant, window: Option<Duration>) -> SlotCounts {
        let seconds = window.map_or(16, |w| w.as_secs() as usize + 2);
        SlotCounts {
            window_start,
            completed: vec![0; slots],
            last_us: vec![0; slots],
            longest_us: vec![0; slots],
            last_sec: vec![NEVER; slots],
            served_per_s: Vec::with_capacity(seconds),
        }
    }

    /// Slot `slot` completed a request at `now`; before the window (warm-up) it does not count.
    #[inline]
    pub fn completed(&mut self, slot: usize, now: Instant) {
        let Some(since) = now.checked_duration_since(self.window_start) else { return };
        if slot >= self.completed.len() {
            return; // only the slots the model declared are counted
        }
        let us = since.as_micros() as u64;
        self.completed[slot] += 1;
        let gap = us.saturating_sub(self.last_us[slot]);
        self.longest_us[slot] = self.longest_us[slot].max(gap);
        self.last_us[slot] = us;
        let sec = (us / 1_000_000).min(NEVER as u64 - 1) as u32;
        if self.last_sec[slot] != sec {
            self.last_sec[slot] = sec;
            let s = sec as usize;
            if self.served_per_s.len() <= s {
                // within the preallocated capacity unless the run has no planned end
                self.served_per_s.resize(s + 1, 0);
            }
            self.served_per_s[s] += 1;
        }
    }

    /// The thread's figures for a window that ended at `end`.
    pub fn summary(&self, end: Instant, timeout: Duration) -> Fairness {
        let end_us = end.saturating_duration_since(self.window_start).as_micros() as u64;
        let timeout_us = timeout.as_micros() as u64;
        let mut f = Fairness { slots: self.completed.len() as u64, served_per_s: self.served_per_s.clone(), ..Fairness::default() };
        for s in 0..self.completed.len() {
            let n = self.completed[s];
            // the gap from its last completion (or the window's start) to the end
            let wait = self.longest_us[s].max(end_us.saturating_sub(self.last_us[s]));
            f.served += u64::from(n > 0);
            f.completed_sum += n;
            f.completed_sum_sq += u128::from(n) * u128::from(n);
            f.longest_wait_us = f.longest_wait_us.max(wait);
            f.waited_over_timeout += u64::from(wait > timeout_us);
        }
        f
    }
}

/// Fairness over a set of slots; threads and shards own disjoint slots, so
/// these merge exactly by adding (and taking the longest wait).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fairness {
    pub slots: u64,
    /// Slots that completed at least one request.
    pub served: u64,
    pub completed_sum: u64,
    pub completed_sum_sq: u128,
    pub longest_wait_us: u64,
    /// Slots whose longest wait exceeded the request timeout.
    pub waited_over_timeout: u64,
    pub served_per_s: Vec<u64>,
}

impl Fairness {
    pub fn merge(&mut self, o: &Fairness) {
        self.slots += o.slots;
        self.served += o.served;
        self.completed_sum += o.completed_sum;
        self.completed_sum_sq += o.completed_sum_sq;
        self.longest_wait_us = self.longest_wait_us.max(o.longest_wait_us);
        self.waited_over_timeout += o.waited_over_timeout;
        if self.served_per_s.len() < o.served_per_s.len() {
            self.served_per_s.resize(o.served_per_s.len(), 0);
        }
        for (a, b) in self.served_per_s.iter_mut().zip(&o.served_per_s) {
            *a += b;
        }
    }

    /// Keep one entry per whole second of a window `seconds` long: a last
    /// partial second is left out, seconds without a completion are 0.
    pub fn whole_seconds(&mut self, seconds: usize) {
        self.served_per_s.resize(seconds, 0);
    }

    /// Jain's index: 1 when every slot completed as many requests, k/n when k
    /// of n slots completed equally and the rest none; None without completions.
    pub fn jain(&self) -> Option<f64> {
        if self.completed_sum == 0 || self.slots == 0 {
            return None;
        }
        let sum = self.completed_sum as f64;
        Some(sum * sum / (self.slots as f64 * self.completed_sum_sq as f64))
    }

    pub fn json(&self) -> Value {
        json!({
            "slots": self.slots,
            "served": self.served,
            "completed_sum": self.completed_sum,
            "completed_sum_sq": self.completed_sum_sq as f64,
            "jain": self.jain(),
            "longest_wait_us": self.longest_wait_us,
            "waited_over_timeout": self.waited_over_timeout,
            "served_per_s": self.served_per_s,
        })
    }

    /// The summary's line; `what` names the slots ("connections", "users").
    pub fn line(&self, what: &str) -> String {
        let jain = self.jain().map_or("– (nothing completed)".to_string(), |j| format!("{j:.2}"));
        format!(
            "  Fairness   {} of {} {what} served, Jain {jain}, longest wait {:.2} s, {} waited longer than --timeout",
            self.served,
            self.slots,
            self.longest_wait_us as f64 / 1e6,
            self.waited_over_timeout
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn gaps_count_from_the_window_start_to_its_end_and_warm_up_is_left_out() {
        let t0 = Instant::now();
        let w = t0 + MS * 500; // a 500 ms warm-up
        let mut c = SlotCounts::new(3, w, Some(MS * 3000));
        c.completed(0, t0 + MS * 100); // warm-up: not counted
        c.completed(0, w + MS * 500);
        c.completed(0, w + MS * 1700);
        c.completed(1, w + MS * 100);
        c.completed(1, w + MS * 200);
        c.completed(1, w + MS * 2900);
        // slot 2 never completes
        let f = c.summary(w + MS * 3000, MS * 1000);
        assert_eq!((f.slots, f.served, f.completed_sum, f.completed_sum_sq), (3, 2, 5, 2 * 2 + 3 * 3));
        assert_eq!(f.longest_wait_us, 3_000_000, "slot 2 waited the whole window");
        // slot 0: gaps 0.5, 1.2, 1.3 s; slot 1: 0.1, 0.1, 2.7, 0.1 s; slot 2: 3 s — all over 1 s
        assert_eq!(f.waited_over_timeout, 3);
        assert_eq!(c.summary(w + MS * 3000, MS * 1350).waited_over_timeout, 2, "slot 0's longest is 1.3 s");
        assert_eq!(c.summary(w + MS * 3000, MS * 2800).waited_over_timeout, 1, "only slot 2");
        // slots served per second: {0, 1} in the first, {0} in the second, {1} in the third
        assert_eq!(f.served_per_s, vec![2, 1, 1]);
    }

    #[test]
    fn a_slot_counts_once_per_second_and_idle_seconds_are_zero() {
        let t0 = Instant::now();
        let mut c = SlotCounts::new(2, t0, Some(MS * 4500));
        for k in 0..10 {
            c.completed(0, t0 + MS * (10 * k));
        }
        c.completed(1, t0 + MS * 3100);
        c.completed(1, t0 + MS * 4400); // the last, partial second
        let mut f = c.summary(t0 + MS * 4500, MS * 10_000);
        assert_eq!(f.served_per_s, vec![1, 0, 0, 1, 1]);
        f.whole_seconds(4);
        assert_eq!(f.served_per_s, vec![1, 0, 0, 1]);
        f.whole_seconds(6);
        assert_eq!(f.served_per_s, vec![1, 0, 0, 1, 0, 0]);
        assert_eq!(f.longest_wait_us, 4_500_000 - 90_000, "slot 0 from its last completion to the end");
    }

    #[test]
    fn jain_is_one_for_equal_slots_and_k_over_n_when_k_are_served() {
        let t0 = Instant::now();
        let mut even = SlotCounts::new(4, t0, None);
        let mut few = SlotCounts::new(10, t0, None);
        for k in 1..=25u32 {
            for s in 0..4 {
                even.completed(s, t0 + MS * k);
                few.completed(s, t0 + MS * k);
            }
        }
        let end = t0 + MS * 1000;
        assert_eq!(even.summary(end, MS * 100).jain(), Some(1.0));
        let f = few.summary(end, MS * 100);
        assert!((f.jain().unwrap() - 0.4).abs() < 1e-12, "{:?}", f.jain());
        assert_eq!((f.served, f.waited_over_timeout), (4, 10), "the 4 served also waited 975 ms at the end");
        assert_eq!(SlotCounts::new(3, t0, None).summary(end, MS).jain(), None, "nothing completed");
        let mut skewed = SlotCounts::new(2, t0, None);
        for _ in 0..9 {
            skewed.completed(0, t0);
        }
        skewed.completed(1, t0);
        // (9 + 1)^2 / (2 * (81 + 1))
        assert!((skewed.summary(end, MS).jain().unwrap() - 100.0 / 164.0).abs() < 1e-12);
    }

    #[test]
    fn merging_threads_equals_counting_their_slots_together() {
        let t0 = Instant::now();
        let end = t0 + MS * 2500;
        let mut all = SlotCounts::new(5, t0, None);
        let mut a = SlotCounts::new(2, t0, None);
        let mut b = SlotCounts::new(3, t0, None);
        let events = [(0, 10), (1, 400), (0, 1200), (2, 50), (3, 1900), (2, 2100), (0, 2400)];
        for (s, ms) in events {
            all.completed(s, t0 + MS * ms);
            if s < 2 {
                a.completed(s, t0 + MS * ms);
            } else {
                b.completed(s - 2, t0 + MS * ms);
            }
        }
        let mut m = b.summary(end, MS * 1500);
        m.merge(&a.summary(end, MS * 1500));
        assert_eq!(m, all.summary(end, MS * 1500));
        assert_eq!((m.slots, m.served, m.completed_sum), (5, 4, 7));
        let j = m.json();
        assert_eq!(j["completed_sum_sq"], 9.0 + 1.0 + 4.0 + 1.0);
        assert_eq!(j["served_per_s"], json!([3, 2, 2]));
        assert_eq!(j["longest_wait_us"], 2_500_000, "slot 4 never completed");
        assert_eq!(j["waited_over_timeout"], 4, "slot 3: 1.9 s; slot 2: 2.05 s; slots 1 and 4");
    }
}
