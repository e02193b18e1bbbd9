//! The explorer's background jobs ([`super::view::Job`]): each carries how it runs and what it
//! answers, and is started by the view that wants its answer. A new job is a file here (and,
//! when it answers with a new kind of action, that action's variant).

pub mod find;
pub mod groups;
pub mod probe;
pub mod recount;
pub mod wire;
