//! The explorer's screens: each a `View` that owns its state and draws from `&self`.

pub mod browser;
pub mod compare;
pub mod notes;
pub mod run_view;
pub mod sweep_view;
pub(crate) mod wire_view;
pub mod wm_eval_view;
