//! The explorer's background jobs ([`super::view::Job`]): each carries how it runs and what it
//! answers, and is started by the view that wants its answer. A new job is a file here (and,
//! when it answers with a new kind of action, that action's variant).
//!
//! The background work a view starts for its own answer, one file per job
//! (`view::Job`: its kind, its read key, what the status line says meanwhile, and `run`, which
//! returns the answer's actions): `groups.rs` (the browser's group table), `recount.rs` (older
//! totals computed again), `find.rs` (a find over a big run), `wire.rs` (a protocol log),
//! `probe.rs` (a probe, a real call or a note appended to the run). A new job is a new file
//! there; neither `app.rs` nor `terminal.rs` changes.

pub(crate) mod find;
pub(crate) mod groups;
pub(crate) mod probe;
pub(crate) mod recount;
pub(crate) mod wire;
