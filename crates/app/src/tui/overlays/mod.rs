//! What sits over a screen for a moment: help, questions, pickers and forms, and where overlays are laid out.

pub(crate) mod confirm;
pub(crate) mod elicit_form;
pub(crate) mod fork_form;
pub(crate) mod help;
pub(crate) mod overlay;
pub(crate) mod page_prompt;
pub(crate) mod picker;
