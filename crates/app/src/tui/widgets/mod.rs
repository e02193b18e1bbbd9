//! Pieces every view draws with: the text prompt, scrolling arithmetic, wrapping.

pub mod prompt;
pub mod scroll;
pub mod wrap;
