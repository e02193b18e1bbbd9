//! What sits over a screen for a moment: help, questions, pickers and forms, and where overlays are laid out.

pub mod confirm;
pub mod elicit_form;
pub mod fork_form;
pub mod help;
pub(crate) mod overlay;
pub(crate) mod page_prompt;
pub mod picker;
