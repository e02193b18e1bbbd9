//! Pieces every view draws with: the text prompt, scrolling arithmetic, wrapping, fitting a
//! styled line to its width.

pub(crate) mod fit;
pub(crate) mod prompt;
pub(crate) mod scroll;
pub(crate) mod wrap;
