//! Replay's clock: playing or paused, at which speed, and when the next step is due. The run
//! view asks it on every tick how far to move; it knows nothing of runs.

/// Play speeds: so many events every so many ticks (ticks are 50 ms), from 2 a second to
/// 200,000 a second.
const SPEEDS: [(usize, u32); 9] = [
    (1, 10),
    (1, 4),
    (1, 1),
    (2, 1),
    (5, 1),
    (20, 1),
    (100, 1),
    (1000, 1),
    (10_000, 1),
];
/// The speed a replay starts at (5 events a second: slow enough to follow each step).
const DEFAULT_SPEED: usize = 1;

/// Playing or paused, and the speed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Playback {
    playing: bool,
    speed: usize,
    ticks: u32,
}

impl Default for Playback {
    fn default() -> Self {
        Self {
            playing: false,
            speed: DEFAULT_SPEED,
            ticks: 0,
        }
    }
}

impl Playback {
    /// True while playing.
    pub fn is_playing(&self) -> bool {
        self.playing
    }

    /// Plays from the next tick.
    pub fn play(&mut self) {
        self.playing = true;
        self.ticks = 0;
    }

    /// Pauses.
    pub fn pause(&mut self) {
        self.playing = false;
    }

    /// One speed up (kept at the fastest).
    pub fn faster(&mut self) {
        self.speed = (self.speed + 1).min(SPEEDS.len() - 1);
    }

    /// One speed down (kept at the slowest).
    pub fn slower(&mut self) {
        self.speed = self.speed.saturating_sub(1);
    }

    /// Counts a tick: how many events to step now (0 while paused or until the step is due).
    pub fn tick(&mut self) -> usize {
        if !self.playing {
            return 0;
        }
        let (events, every) = SPEEDS[self.speed];
        self.ticks += 1;
        if self.ticks < every {
            return 0;
        }
        self.ticks = 0;
        events
    }

    /// `PLAYING 5/s`, or `PAUSED · play 5/s`.
    pub fn label(&self) -> String {
        let (events, every) = SPEEDS[self.speed];
        let per_second = events * 20 / every as usize;
        if self.playing {
            format!("PLAYING {per_second}/s")
        } else {
            format!("PAUSED · play {per_second}/s")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_steps_once_every_four_ticks_and_speeds_stay_in_range() {
        let mut p = Playback::default();
        assert_eq!(p.tick(), 0, "paused");
        p.play();
        let steps: Vec<usize> = (0..8).map(|_| p.tick()).collect();
        assert_eq!(steps, [0, 0, 0, 1, 0, 0, 0, 1]);
        assert_eq!(p.label(), "PLAYING 5/s");
        for _ in 0..20 {
            p.faster();
        }
        assert_eq!(p.label(), "PLAYING 200000/s");
        for _ in 0..20 {
            p.slower();
        }
        p.pause();
        assert_eq!(p.label(), "PAUSED · play 2/s");
    }
}
