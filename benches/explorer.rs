//! Explorer benchmark: prints figures, asserts nothing. `cargo bench --bench explorer`
//! (add `-- --quick` for a tenth of the data, `-- --progressive` for only the progressive
//! open's figures, `-- --live` for only following a live run). Targets beside each figure.

#![allow(clippy::unwrap_used)] // a bench that cannot set up fails at once

mod common;

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use common::{big_run_file, folder_bytes, folder_of_runs, ms, pct, scale, time};
use cosmos_app::tui::App;
use cosmos_app::tui::Browser;
use cosmos_app::tui::RunView;
use cosmos_app::tui::Theme;
use cosmos_app::tui::{Action, LiveSource};
use cosmos_app::tui::{Command, Keymap};
use cosmos_trajectory::event::Event;
use cosmos_trajectory::listing::list_runs;
use cosmos_trajectory::run::Run;
use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;

fn main() {
    let scale = scale();
    if std::env::args().any(|a| a == "--progressive") {
        let big = big_run_file(scale);
        common::warm(&big);
        let mut terminal = Terminal::new(TestBackend::new(200, 60)).unwrap();
        progressive_open(&big, &mut terminal);
        return;
    }
    if std::env::args().any(|a| a == "--live") {
        live_feed(&big_run_file(scale), scale);
        return;
    }
    let (folder, runs) = folder_of_runs(scale);
    let bytes = folder_bytes(&folder);

    // Start to first frame over a folder: list + build the browser + draw once.
    common::warm(&folder);
    let mut terminal = Terminal::new(TestBackend::new(200, 60)).unwrap();
    let (_, t) = time(|| {
        let summaries = list_runs(std::slice::from_ref(&folder)).unwrap();
        let browser = Browser::new(vec![PathBuf::from(&folder)], summaries, 59);
        let app = App::new(browser, Keymap::default(), Theme::new(true), (200, 60));
        terminal.draw(|f| app.draw(f)).unwrap();
    });
    println!(
        "first frame of the browser over {runs} runs / {:.0} MB, warm: {:.1} ms   (target < 300 ms)",
        bytes as f64 / 1e6,
        ms(t)
    );

    cold_browser(&folder, runs);

    let big = big_run_file(scale);
    common::warm(&big);
    progressive_open(&big, &mut terminal);
    common::reset_peak();
    let (run, open) = time(|| Run::open(&big).unwrap());
    println!(
        "open {} events: {:.2} s (parse-bound; see the trajectory benchmark)",
        run.len(),
        open.as_secs_f64()
    );
    let nodes = run.nodes().len();
    let (view, ready) = time(|| RunView::new(run, Rect::new(0, 0, 200, 59)));
    println!(
        "run view ready ({nodes} nodes; fold to end, charts): {:.0} ms",
        ms(ready)
    );
    let mut app = App::new(view, Keymap::default(), Theme::new(true), (200, 60));
    let (_, drawn) = time(|| terminal.draw(|f| app.draw(f)).unwrap());
    println!(
        "first frame of the {}-event run, warm (open + view + draw): {:.2} s   (target < 0.5 s)   peak RSS {:.0} MB   (the file: {:.0} MB)",
        app_len(&app),
        (open + ready + drawn).as_secs_f64(),
        common::peak_mb(),
        std::fs::metadata(&big).map_or(0.0, |m| m.len() as f64 / 1e6)
    );
    // The floor, measured here so the target can be judged on a slower machine:
    // serde_json checking every line of the file, on one thread, with nothing kept.
    let (_, floor) = time(|| {
        let text = std::fs::read(&big).unwrap();
        for line in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            serde_json::from_slice::<serde::de::IgnoredAny>(line).unwrap();
        }
    });
    println!(
        "  floor: serde_json validation of the same file, one thread: {:.2} s (the issue's machine: 0.18 s)",
        floor.as_secs_f64()
    );
    let (_, t) = time(|| app.update(Action::Do(Command::ExpandAll)));
    println!("expand all {nodes} nodes: {:.1} ms", ms(t));

    // The root's inspector lists every event through the root: every backpropagation.
    app.update(Action::Do(Command::Bottom));
    for _ in 0..3 {
        app.update(Action::Do(Command::PageUp));
    }
    let (_, t) = time(|| app.update(Action::Do(Command::Inspect)));
    app.update(Action::Do(Command::Inspect));
    println!(
        "inspect the root node (every event through it, read back from the file): {:.0} ms",
        ms(t)
    );
    // A search reads every event back from the file, in blocks of lines.
    app.update(Action::Do(Command::Search));
    for c in "america/new_york".chars() {
        app.update(Action::Input(KeyEvent::from(KeyCode::Char(c))));
    }
    let (_, t) = time(|| app.update(Action::Input(KeyEvent::from(KeyCode::Enter))));
    println!(
        "search the whole {}-event run: {:.0} ms",
        app_len(&app),
        ms(t)
    );

    let mut draws = Vec::new();
    let mut updates = Vec::new();
    app.update(Action::Do(Command::Top));
    for i in 0..600 {
        // Step through the run in strides, as play at high speed does, and move the selection.
        let action = match i % 3 {
            0 => Action::Do(Command::Down),
            1 => Action::Do(Command::StepForward),
            _ => Action::Do(Command::NextToolCall),
        };
        updates.push(time(|| app.update(action)).1);
        draws.push(time(|| terminal.draw(|f| app.draw(f)).unwrap()).1);
    }
    app.update(Action::Do(Command::Bottom));
    for _ in 0..200 {
        updates.push(time(|| app.update(Action::Do(Command::Down))).1);
        draws.push(time(|| terminal.draw(|f| app.draw(f)).unwrap()).1);
    }
    draws.sort();
    updates.sort();
    println!(
        "run view frame at 200x60, {nodes}-node tree expanded: draw p50 {:.2} ms, p99 {:.2} ms   (target p99 < 4 ms)",
        ms(pct(&draws, 0.5)),
        ms(pct(&draws, 0.99))
    );
    println!(
        "update per key (step, select, jump): p50 {:.2} ms, p99 {:.2} ms",
        ms(pct(&updates, 0.5)),
        ms(pct(&updates, 0.99))
    );

    live_feed(&big, scale);
}

/// Events of the run the app shows.
fn app_len(app: &App) -> usize {
    app.find::<RunView>().map_or(0, |v| v.run().len())
}

/// Drops the page cache and the cached directory entries and inodes (root only): true when
/// it did.
fn drop_page_cache() -> bool {
    // SAFETY: sync takes no arguments and cannot fail.
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", "3").is_ok()
}

/// The browser's first frame over `folder` on a cold page cache, beside the floor: reading the
/// first and the last line of every file with nothing else done.
fn cold_browser(folder: &std::path::Path, runs: usize) {
    if !drop_page_cache() {
        println!("cold first frame not measured (dropping the page cache needs root)");
        return;
    }
    let (_, floor) = time(|| first_and_last_lines(folder));
    drop_page_cache();
    let mut terminal = Terminal::new(TestBackend::new(200, 60)).unwrap();
    let (_, t) = time(|| {
        let summaries = list_runs(&[folder.to_path_buf()]).unwrap();
        let browser = Browser::new(vec![folder.to_path_buf()], summaries, 59);
        let app = App::new(browser, Keymap::default(), Theme::new(true), (200, 60));
        terminal.draw(|f| app.draw(f)).unwrap();
    });
    println!(
        "first frame of the browser over {runs} runs, cold: {:.1} ms; first + last line of every file, cold: {:.1} ms; {:.2}×   (target ≤ 1.5×)",
        ms(t),
        ms(floor),
        t.as_secs_f64() / floor.as_secs_f64()
    );
}

/// Reads the first line and the last 4 KiB of every file in `folder`, one after another (the
/// listing reads eight files at a time, so a cold floor read one by one is generous to it).
fn first_and_last_lines(folder: &std::path::Path) -> usize {
    use std::io::{BufRead, Read, Seek, SeekFrom};
    let mut total = 0;
    for entry in std::fs::read_dir(folder).unwrap() {
        let file = std::fs::File::open(entry.unwrap().path()).unwrap();
        let mut reader = std::io::BufReader::new(file);
        let mut first = Vec::new();
        total += reader.read_until(b'\n', &mut first).unwrap();
        let mut file = reader.into_inner();
        let len = file.metadata().unwrap().len();
        file.seek(SeekFrom::Start(len.saturating_sub(4096)))
            .unwrap();
        let mut last = Vec::new();
        total += file.read_to_end(&mut last).unwrap();
    }
    total
}

/// CPU time of the calling thread: what the UI thread itself spends, whatever the feeder does.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Following a live run against replaying it: the events of a run are sent from another
/// thread, and the UI thread does what `terminal.rs` does (take what is waiting, apply it,
/// settle once, draw once).
fn live_feed(big: &std::path::Path, scale: usize) {
    let run = Run::open(big).unwrap();
    let want = 100_000 / scale;
    let events: Vec<Event> = run
        .events_from(0)
        .take(want)
        .map(std::borrow::Cow::into_owned)
        .collect();
    let n = events.len();
    let header = run.header.clone();
    drop(run);

    // Replay: the same events opened at once, then one frame.
    let mut terminal = Terminal::new(TestBackend::new(200, 60)).unwrap();
    let cpu = thread_cpu();
    let mut replayed = Run::new("replay".into(), header.clone());
    for e in events.iter().cloned() {
        replayed.push(e);
    }
    let mut app = App::new(
        RunView::new(replayed, Rect::new(0, 0, 200, 59)),
        Keymap::default(),
        Theme::new(true),
        (200, 60),
    );
    app.settle();
    terminal.draw(|f| app.draw(f)).unwrap();
    let replay_cpu = thread_cpu() - cpu;

    for (label, pace) in [
        ("as fast as the channel takes them", None),
        (
            "paced at 50,000 events/s in bursts of 100",
            Some(Duration::from_millis(2)),
        ),
    ] {
        let (cpu, applying, frames) = follow_live(&header, events.clone(), pace);
        let mut frames = frames;
        frames.sort();
        println!(
            "follow {n} events live, {label}: UI-thread CPU {:.2} s over {} frames (frame p50 {:.2} ms, p99 {:.2} ms); applying the events {:.2} s ({:.1} µs/event) against {:.2} s ({:.1} µs/event) to open them at once   (target: applying live ≤ opening)",
            cpu.as_secs_f64(),
            frames.len(),
            ms(pct(&frames, 0.5)),
            ms(pct(&frames, 0.99)),
            applying.as_secs_f64(),
            applying.as_secs_f64() * 1e6 / n as f64,
            replay_cpu.as_secs_f64(),
            replay_cpu.as_secs_f64() * 1e6 / n as f64,
        );
    }
}

/// Feeds `events` to a live view from another thread (all at once, or 100 every `pace`) while
/// this thread runs the terminal loop's steps; returns this thread's CPU time and each
/// frame's wall time.
fn follow_live(
    header: &cosmos_trajectory::event::Header,
    events: Vec<Event>,
    pace: Option<Duration>,
) -> (Duration, Duration, Vec<Duration>) {
    let n = events.len();
    let mut terminal = Terminal::new(TestBackend::new(200, 60)).unwrap();
    let view = RunView::live(
        Run::new("live".into(), header.clone()),
        Rect::new(0, 0, 200, 59),
        None,
    );
    let mut app = App::new(view, Keymap::default(), Theme::new(true), (200, 60));
    let (tx, rx) = mpsc::channel::<Event>();
    let feeder = std::thread::spawn(move || {
        for (i, e) in events.into_iter().enumerate() {
            if tx.send(e).is_err() {
                return;
            }
            if let Some(pace) = pace
                && i % 100 == 99
            {
                std::thread::sleep(pace);
            }
        }
    });
    let cpu = thread_cpu();
    let mut frames = Vec::new();
    let mut applying = Duration::ZERO;
    let mut applied = 0;
    while let Ok(first) = rx.recv() {
        let frame_start = std::time::Instant::now();
        // Timed once per frame, not per event: the thread's CPU clock is a system call, which
        // timed around each event cost about as much as applying it.
        let started = thread_cpu();
        for e in std::iter::once(first).chain(std::iter::from_fn(|| rx.try_recv().ok())) {
            app.update(Action::LiveEvent(LiveSource::Followed, Box::new(e)));
            applied += 1;
        }
        let changed = app.take_changed();
        if changed {
            app.settle();
        }
        applying += thread_cpu() - started;
        if changed {
            terminal.draw(|f| app.draw(f)).unwrap();
        }
        frames.push(frame_start.elapsed());
    }
    let cpu = thread_cpu() - cpu;
    feeder.join().unwrap();
    assert_eq!(applied, n);
    (cpu, applying, frames)
}

/// The progressive open against the whole open, in alternate rounds (this machine's noise is
/// larger than the difference): the first frame of each, and the time until the progressive
/// view shows the screen the whole open shows.
fn progressive_open(big: &std::path::Path, terminal: &mut Terminal<TestBackend>) {
    const ROUNDS: usize = 9;
    let (mut firsts, mut fulls, mut wholes) = (Vec::new(), Vec::new(), Vec::new());
    let mut events = 0;
    let mut parts = 0;
    for _ in 0..ROUNDS {
        let Some((first, full, n, p)) = progressive_round(big, terminal) else {
            println!("progressive open: the file fitted in its first part");
            return;
        };
        firsts.push(first);
        fulls.push(full);
        (events, parts) = (n, p);
        let started = std::time::Instant::now();
        let view = RunView::opened(Run::open(big).unwrap(), Rect::new(0, 0, 200, 59));
        let app = App::new(view, Keymap::default(), Theme::new(true), (200, 60));
        terminal.draw(|f| app.draw(f)).unwrap();
        wholes.push(started.elapsed());
    }
    for v in [&mut firsts, &mut fulls, &mut wholes] {
        v.sort();
    }
    let median = |v: &[Duration]| pct(v, 0.5);
    println!(
        "progressive open of the {events}-event run, warm, median of {ROUNDS} rounds: first frame \
         {:.0} ms   (target < 150 ms); all {parts} later parts in and the screen the whole open \
         shows: {:.2} s against the whole open's first frame, in alternate rounds: {:.2} s   \
         (target: no worse)",
        ms(median(&firsts)),
        median(&fulls).as_secs_f64(),
        median(&wholes).as_secs_f64(),
    );
}

/// One progressive open: its first frame, the time to its last part in and drawn, the events
/// and the later parts; `None` when the file fitted in its first part.
fn progressive_round(
    big: &std::path::Path,
    terminal: &mut Terminal<TestBackend>,
) -> Option<(Duration, Duration, usize, usize)> {
    use cosmos_app::tui::{Opened, open_in_parts};
    let started = std::time::Instant::now();
    let Opened::Head {
        run,
        read,
        total,
        rest,
    } = open_in_parts(big).unwrap()
    else {
        return None;
    };
    let view = RunView::reading(run, Rect::new(0, 0, 200, 59), read, total);
    let mut app = App::new(view, Keymap::default(), Theme::new(true), (200, 60));
    terminal.draw(|f| app.draw(f)).unwrap();
    let first = started.elapsed();
    let mut parts = 0;
    // As the explorer's loop does: take what has arrived, then settle and draw once.
    while let Ok(action) = rest.recv() {
        for action in std::iter::once(action).chain(std::iter::from_fn(|| rest.try_recv().ok())) {
            parts += 1;
            app.update(action);
        }
        app.settle();
        terminal.draw(|f| app.draw(f)).unwrap();
    }
    Some((first, started.elapsed(), app_len(&app), parts))
}
