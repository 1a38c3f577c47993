//! The one error type of this crate. A build never fails as a whole: each [`Error`] is caught
//! where it happens and becomes a [`Problem`](crate::Problem) that names the patch,
//! replacement or var, so the messages are the ones kustomize gives.

/// Why a patch, a `target:` selector, a replacement or a var could not be applied.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    // Strategic merge patches.
    /// A node of the target and of the patch (or of a list element) differ in kind.
    #[error("wrong node kind at {path}: expected {want} but got {got}")]
    WrongNodeKind {
        /// Where, dotted (`the top` for the object itself).
        path: String,
        /// The kind the merge expected there: `MappingNode`, `SequenceNode` or `ScalarNode`.
        want: &'static str,
        /// The kind it found.
        got: &'static str,
    },
    /// A `$patch:` directive other than `delete`, `replace` or `merge`.
    #[error("unknown patch strategy '{strategy}' at {path}")]
    UnknownPatchStrategy {
        /// The directive as written.
        strategy: String,
        /// Where, dotted.
        path: String,
    },
    /// A scalar where a patch strategy was looked for.
    #[error("no implemented strategic merge patch strategy for '{value}' at {path}")]
    NoPatchStrategy {
        /// The scalar as written.
        value: String,
        /// Where, dotted.
        path: String,
    },

    // JSON 6902 patches.
    /// A JSON patch whose document is not a list of operations.
    #[error("a JSON patch must be a list of operations")]
    NotAnOperationList,
    /// One operation of a JSON patch failed.
    #[error("JSON patch operation {index} ({op} {path}): {reason}")]
    Operation {
        /// The operation's position in the list.
        index: usize,
        /// Its `op`, or `?`.
        op: String,
        /// Its `path` as written.
        path: String,
        /// Why it failed.
        reason: Box<Error>,
    },
    /// An operation without a field it needs (`op`, `path`, `from`, `value`).
    #[error("missing `{field}`")]
    MissingField {
        /// The field's name.
        field: String,
    },
    /// A `move` whose target lies inside its source.
    #[error("cannot move a value into one of its own children")]
    MoveIntoChild,
    /// A `test` operation that found another value.
    #[error("test failed: the value is {got}, not {want}")]
    TestFailed {
        /// The value found, as JSON.
        got: String,
        /// The value the operation wanted, as JSON.
        want: String,
    },
    /// An `op` that RFC 6902 does not define.
    #[error("unknown op `{op}`")]
    UnknownOp {
        /// The op as written.
        op: String,
    },
    /// A `path` or `from` that does not start with `/`.
    #[error("`{text}` is not a JSON pointer (it must start with /)")]
    NotAPointer {
        /// The pointer as written.
        text: String,
    },
    /// `-` (the end of an array) where an existing element is needed.
    #[error("`-` names no existing element")]
    EndIsNoElement,
    /// An array index with more digits than fit a `usize`.
    #[error("array index `{token}` is too large")]
    IndexTooLarge {
        /// The token as written.
        token: String,
    },
    /// A pointer token that is not an array index, in an array.
    #[error("`{token}` is not an array index")]
    NotAnIndex {
        /// The token as written.
        token: String,
    },
    /// An array index past the end.
    #[error("array index {index} is out of bounds (length {len})")]
    IndexOutOfBounds {
        /// The index.
        index: usize,
        /// The array's length.
        len: usize,
    },
    /// A pointer into a value that does not exist.
    #[error("path {path} does not exist")]
    NoSuchPath {
        /// The pointer up to the missing step (`/a/b`).
        path: String,
    },
    /// An array step of a pointer that failed.
    #[error("{path}: {reason}")]
    AtIndex {
        /// The pointer up to the array step.
        path: String,
        /// Why the step failed.
        reason: Box<Error>,
    },
    /// An `add` whose parent is a scalar.
    #[error("the parent of {path} is not an object or an array")]
    ParentNotContainer {
        /// The pointer added at (`/a/b`).
        path: String,
    },
    /// A `remove` (or `move`) of the empty pointer.
    #[error("cannot remove the whole document")]
    RemoveWholeDocument,

    // `target:` selectors.
    /// A selector field that is a map or a list.
    #[error("target {field} must be a string")]
    SelectorNotString {
        /// The field (`kind`, `labelSelector`, ...).
        field: &'static str,
    },
    /// An id field that is not a valid regex.
    #[error("target {field} `{pattern}` is not a valid regex: {reason}")]
    InvalidRegex {
        /// The field (`group`, `kind`, ...).
        field: &'static str,
        /// The pattern as written.
        pattern: String,
        /// The regex crate's message.
        reason: regex::Error,
    },
    /// A `labelSelector` or `annotationSelector` that does not parse.
    #[error("target {field}: {reason}")]
    InvalidLabelSelector {
        /// `labelSelector` or `annotationSelector`.
        field: &'static str,
        /// Why it does not parse.
        reason: Box<Error>,
    },
    /// A `)` without its `(` in a label selector.
    #[error("unbalanced `)`")]
    UnbalancedClose,
    /// A `(` without its `)` in a label selector.
    #[error("unbalanced `(`")]
    UnbalancedOpen,
    /// Two commas with nothing between them.
    #[error("empty requirement in `{selector}`")]
    EmptyRequirement {
        /// The whole selector.
        selector: String,
    },
    /// A requirement whose key has characters a label key cannot have.
    #[error("invalid key `{key}` in `{requirement}`")]
    InvalidKey {
        /// The key.
        key: String,
        /// The requirement it is in.
        requirement: String,
    },
    /// `k>v` or `k<v` with a `v` that is not an integer.
    #[error("`{value}` is not an integer in `{requirement}`")]
    NotAnInteger {
        /// The value.
        value: String,
        /// The requirement it is in.
        requirement: String,
    },
    /// `k in` or `k notin` without a parenthesised set.
    #[error("expected `(values)` after {word} in `{requirement}`")]
    ExpectedValues {
        /// `in` or `notin`.
        word: &'static str,
        /// The requirement.
        requirement: String,
    },
    /// A requirement of none of the known forms.
    #[error("cannot parse requirement `{requirement}`")]
    BadRequirement {
        /// The requirement.
        requirement: String,
    },

    // `replacements:`.
    /// A replacement target without `select:`.
    #[error("a target must say which resources to select (select:)")]
    TargetWithoutSelect,
    /// A replacement without `source:`.
    #[error("a replacement needs a source")]
    NoSource,
    /// A replacement source that selects several resources.
    #[error("more than one resource matches the source {source_id}")]
    AmbiguousSource {
        /// The source's id fields.
        source_id: String,
    },
    /// A replacement source that selects nothing.
    #[error("nothing selected by the source {source_id}")]
    SourceNotFound {
        /// The source's id fields.
        source_id: String,
    },
    /// A replacement source whose `fieldPath` is absent or empty.
    #[error("fieldPath `{field_path}` is missing for replacement source {source_id}")]
    SourceFieldMissing {
        /// The field path.
        field_path: String,
        /// The source's id fields.
        source_id: String,
    },
    /// A source `options.index` past the parts of the delimited value.
    #[error("options.index {index} is out of bounds for value {value}")]
    OptionsIndexOutOfBounds {
        /// The index.
        index: i64,
        /// The whole value.
        value: String,
    },
    /// A target field path that matched nothing.
    #[error("unable to find field {path:?} in replacement target")]
    TargetFieldNotFound {
        /// The field path.
        path: String,
    },
    /// A target field path that matched nothing and could not be created.
    #[error("unable to find or create field {path:?} in replacement target")]
    TargetFieldNotCreated {
        /// The field path.
        path: String,
    },
    /// `options.delimiter` on a target that is a map or a list.
    #[error("the delimiter option can only be used with scalar nodes")]
    DelimiterOnCollection,

    // Legacy `vars:` (messages follow `var "NAME"`).
    /// A var without `objref`.
    #[error("has no objref")]
    NoObjref,
    /// A var whose objref matches no resource.
    #[error("cannot be mapped to a field in the set of known resources")]
    VarUnmapped,
    /// A var whose objref matches several resources.
    #[error("matches {count} objects (unable to disambiguate)")]
    VarAmbiguous {
        /// How many matched.
        count: usize,
    },
    /// A var's field path that is not in the resource.
    #[error("field {path:?} not found")]
    VarFieldNotFound {
        /// The field path.
        path: String,
    },
    /// A var's field that is a map or a list.
    #[error("field {path:?} is not a scalar")]
    VarFieldNotScalar {
        /// The field path.
        path: String,
    },
}
