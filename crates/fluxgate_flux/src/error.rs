//! The one error type of this crate's HelmRelease value paths. Rendering never fails as a
//! whole: each [`Error`] becomes a [`Problem`](crate::problem::Problem) naming the
//! `valuesFrom` entry or `targetPath` it came from. (`${var}` texts Flux rejects are
//! [`ParseError`](crate::envsubst::ParseError)s, which carry the offset of the expression.)

/// Why a `valuesFrom` `targetPath`, or the value set there, could not be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A `targetPath` that ends with a lone `\`.
    #[error("a path cannot end with `\\`")]
    TrailingBackslash,
    /// A `[..]` step of a `targetPath` that is not a number.
    #[error("`[{text}]` is not a list index")]
    NotAListIndex {
        /// What was between the brackets.
        text: String,
    },
    /// A list index above the limit (65536), which would allocate a huge list.
    #[error("list index {index} is too large")]
    ListIndexTooLarge {
        /// The index.
        index: usize,
    },
    /// A `targetPath` with no key or index at all.
    #[error("empty targetPath")]
    EmptyTargetPath,
    /// A value set at a `targetPath` with an unescaped comma, which Helm's `--set` reads as a
    /// second assignment. The value itself is never shown: it may come from a Secret.
    #[error(
        "the value ({len} bytes) has an unescaped comma at byte {at}, which Helm's --set syntax \
         reads as a second assignment; escape it as `\\,` or quote the value"
    )]
    UnescapedComma {
        /// The value's length in bytes.
        len: usize,
        /// The comma's byte offset.
        at: usize,
    },
}
