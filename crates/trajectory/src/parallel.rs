//! The one parallel map (rayon's work-stealing pool, one worker per core): reading a folder's
//! runs for `report`, listing a folder, searching a big run, and decoding a big file's lines
//! all go through here, so the machine decides the worker count in one place. Results keep
//! their inputs' order. Background jobs (the explorer's requests) run on a second, bounded
//! pool ([`background`]).
//!
//! `map`/`map_owned` (rayon's pool, one worker per core, results in order) for every folder read
//! (`report`'s records, listings) and a big run's search; `stream`, an ordered streaming map on
//! threads of its own for input read as it goes (a big file's lines, `reader::read_all`: on the
//! pool the blocked reader cost a core, 0.72 s against 0.38 s for a 144 MB run); `background`,
//! the bounded pool (four threads) the explorer's requests run on, so a request that waits on a
//! server never holds a core the maps need. `workers()` is the one worker count.

use rayon::prelude::*;

/// `f` of every item, on the pool, in the items' order.
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync + Send) -> Vec<R> {
    items.par_iter().map(f).collect()
}

/// `f` of every owned item, on the pool, in the items' order.
pub fn map_owned<T: Send, R: Send>(items: Vec<T>, f: impl Fn(T) -> R + Sync + Send) -> Vec<R> {
    items.into_par_iter().map(f).collect()
}

/// An ordered streaming map, for input read as it goes (a big file's lines): `produce` runs
/// on a thread of its own, handing items to `emit` (which says `false` once nobody listens);
/// `workers` threads map them; `consume` takes the results on this thread in the order they
/// were produced. At most a few items per worker are in flight, so memory stays bounded.
/// Returns what `produce` returned.
///
/// Not on the pool: its threads block on each other, and a pool thread blocked on a channel is
/// a core the map cannot use (measured: opening a 144 MB run took 0.38 s this way and 0.72 s
/// with the pool's `join`, see `benches/trajectory.rs`).
pub fn stream<T: Send, R: Send, P: Send>(
    workers: usize,
    produce: impl FnOnce(&mut dyn FnMut(T) -> bool) -> P + Send,
    map: impl Fn(T) -> R + Sync,
    mut consume: impl FnMut(R),
) -> P {
    use std::sync::{Mutex, mpsc};
    let workers = workers.max(1);
    let (work_tx, work_rx) = mpsc::sync_channel::<(usize, T)>(workers * 2);
    let work_rx = Mutex::new(work_rx);
    let (done_tx, done_rx) = mpsc::sync_channel::<(usize, R)>(workers * 2);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let (done_tx, work_rx, map) = (done_tx.clone(), &work_rx, &map);
            scope.spawn(move || {
                while let Some((index, item)) = work_rx.lock().ok().and_then(|rx| rx.recv().ok()) {
                    if done_tx.send((index, map(item))).is_err() {
                        return;
                    }
                }
            });
        }
        drop(done_tx);
        let producer = scope.spawn(move || {
            let mut index = 0;
            produce(&mut |item| {
                let sent = work_tx.send((index, item)).is_ok();
                index += 1;
                sent
            })
        });
        // Results come back in any order; they are consumed in the order they were produced.
        let mut waiting = std::collections::BTreeMap::new();
        let mut next = 0;
        for (index, result) in done_rx {
            waiting.insert(index, result);
            while let Some(result) = waiting.remove(&next) {
                next += 1;
                consume(result);
            }
        }
        producer.join().expect("a producer does not panic")
    })
}

/// Background jobs that may wait on files, servers or endpoints (the explorer's opening,
/// counting, probing, finding) run on this many threads at most; more wait their turn.
pub const BACKGROUND_WORKERS: usize = 4;

/// Runs `job` on the bounded background pool, apart from the map's pool (a job that waits on
/// a server never holds a core the map needs; a parallel map inside it runs on this pool).
pub fn background(job: impl FnOnce() + Send + 'static) {
    static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    let pool = POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(BACKGROUND_WORKERS)
            .thread_name(|i| format!("cosmos-background-{i}"))
            // A job's panic not caught by the job itself is logged; rayon's default aborts
            // the process (and with it a live run's file).
            .panic_handler(|panic| {
                tracing::error!(
                    "background work panicked: {}",
                    panic_message(panic.as_ref())
                )
            })
            .build()
            .ok()
    });
    match pool {
        Some(pool) => pool.spawn(job),
        // No pool (threads refused by the OS): the job still runs, on a thread of its own.
        None => {
            std::thread::spawn(job);
        }
    }
}

/// What a caught panic said (its `&str` or `String` payload).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// How many workers the pool has (the machine's cores).
pub fn workers() -> usize {
    rayon::current_num_threads()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// rayon's default for a panicking spawned job is to abort the process.
    #[test]
    fn a_background_job_that_panics_leaves_the_process_and_the_pool_running() {
        background(|| panic!("a bug in a background job"));
        let (tx, rx) = std::sync::mpsc::channel();
        for _ in 0..BACKGROUND_WORKERS * 2 {
            let tx = tx.clone();
            background(move || tx.send(()).unwrap());
        }
        for _ in 0..BACKGROUND_WORKERS * 2 {
            rx.recv_timeout(std::time::Duration::from_secs(20)).unwrap();
        }
        let said = std::panic::catch_unwind(|| panic!("{}", "formatted")).unwrap_err();
        assert_eq!(panic_message(said.as_ref()), "formatted");
    }

    #[test]
    fn results_keep_their_order() {
        let items: Vec<u64> = (0..10_000).collect();
        assert_eq!(
            map(&items, |x| x * 2),
            items.iter().map(|x| x * 2).collect::<Vec<_>>()
        );
        assert_eq!(map_owned(items.clone(), |x| x + 1)[9_999], 10_000);
        assert!(workers() >= 1);
        let mut seen = Vec::new();
        let last = stream(
            3,
            |emit| {
                for i in 0..1_000u64 {
                    if !emit(i) {
                        break;
                    }
                }
                "done"
            },
            |i| i * i,
            |r| seen.push(r),
        );
        assert_eq!(last, "done");
        assert_eq!(seen, (0..1_000u64).map(|i| i * i).collect::<Vec<_>>());
    }
}
