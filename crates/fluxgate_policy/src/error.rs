//! The one error type of this crate. A policy that cannot be evaluated on an object is a
//! verdict ([`Verdict::Error`](crate::Verdict::Error)) whose text is an [`Error`]'s message,
//! so one broken expression never stops the other policies.

use serde_json::Value as Json;

/// Why a CEL expression, a Kyverno variable or a Kyverno condition could not be evaluated.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A CEL expression that does not compile.
    #[error("the CEL expression does not compile: {reason}")]
    CelCompile {
        /// The first line of the CEL parser's message.
        reason: String,
    },
    /// A CEL expression that failed while running (no such key, a bad argument, ...).
    #[error(transparent)]
    CelExecution(#[from] kube_cel::cel::ExecutionError),
    /// A JMESPath expression (in `{{ }}` or a `jmesPath:`) that does not parse.
    #[error("JMESPath `{expr}` does not parse: {reason}")]
    JmesPathParse {
        /// The expression, after substitution.
        expr: String,
        /// jmespath's reason.
        reason: jmespath::ErrorReason,
    },
    /// A JMESPath expression that failed while searching (a function given the wrong type).
    #[error("JMESPath `{expr}`: {reason}")]
    JmesPath {
        /// The expression, after substitution.
        expr: String,
        /// jmespath's reason.
        reason: jmespath::ErrorReason,
    },
    /// A `{{ }}` variable that is a plain path to a field the data does not have.
    #[error("variable `{expr}` is not defined")]
    UndefinedVariable {
        /// The path.
        expr: String,
    },
    /// A `foreach` whose `context:` could not be built.
    #[error("foreach context: {reason}")]
    ForeachContext {
        /// Why.
        reason: Box<Error>,
    },
    /// A ValidatingAdmissionPolicyBinding whose `paramRef` finds no object in the render and
    /// says `parameterNotFoundAction: Deny`.
    #[error(
        "binding `{binding}`: no {kind} {which} in namespace `{namespace}` of the render (parameterNotFoundAction: Deny)"
    )]
    ParamNotFound {
        /// The binding's name.
        binding: String,
        /// The param kind.
        kind: String,
        /// `` `name` `` or `matching the selector`.
        which: String,
        /// The namespace searched.
        namespace: String,
    },
    /// A condition `operator` Kyverno does not have.
    #[error("unknown operator `{operator}`")]
    UnknownOperator {
        /// The operator as written.
        operator: String,
    },
    /// A numeric, quantity or duration comparison between values that are not all three.
    #[error("{operator}: cannot compare {key} with {value}")]
    Incomparable {
        /// The operator as written.
        operator: String,
        /// The condition's key, substituted (boxed: the error stays small).
        key: Box<Json>,
        /// The condition's value, substituted.
        value: Box<Json>,
    },
}
