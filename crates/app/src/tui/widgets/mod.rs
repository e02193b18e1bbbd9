//! Pieces every view draws with: the text prompt, scrolling arithmetic, wrapping, fitting a
//! styled line to its width.

pub mod fit;
pub mod prompt;
pub mod scroll;
pub mod wrap;
