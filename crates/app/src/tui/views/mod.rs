//! The explorer's screens: each a `View` that owns its state and draws from `&self`.

pub(crate) mod browser;
pub(crate) mod compare;
pub(crate) mod notes;
pub(crate) mod run_view;
pub(crate) mod sweep_view;
pub(crate) mod wire_view;
pub(crate) mod wm_eval_view;
