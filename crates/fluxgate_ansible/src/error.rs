//! The one error type of this crate: why a variable or a template could not be resolved.
//! It travels in a [`ResolveError`](crate::ResolveError) with the chain of definitions that
//! led to it, and is reported as a finding whose message is its text.

/// Why a variable, a host or a template could not be resolved.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A variable no inventory, vars file or default defines.
    #[error("'{var}' is undefined")]
    Undefined {
        /// The variable's name.
        var: String,
    },
    /// A host the inventory does not have.
    #[error("host '{host}' is not in the inventory")]
    UnknownHost {
        /// The host's name.
        host: String,
    },
    /// A variable whose template reads itself, through the variables in `path`.
    #[error("recursive loop detected in template: {} -> {var}", path.join(" -> "))]
    RecursiveLoop {
        /// The variables from the first one read again to the last before `var`.
        path: Vec<String>,
        /// The variable read again.
        var: String,
    },
    /// Variables nested deeper than the resolver follows.
    #[error("variables nest more than {max} levels deep at '{var}'")]
    TooDeep {
        /// The depth limit.
        max: usize,
        /// The variable where it was reached.
        var: String,
    },
    /// A `%` formatting expression, which the Jinja engine does not implement.
    #[error(
        "Python '%' string formatting (`{construct}`) is not supported by fluxgate's Jinja \
         engine; write it with the format filter (`'%s:%d' | format(a, b)`), which \
         ansible-core renders the same"
    )]
    PercentFormatting {
        /// The `'…' % x` construct as written.
        construct: String,
    },
    /// Any other error of the Jinja engine: its kind, detail and template line.
    #[error("template error: {reason}")]
    Template {
        /// minijinja's kind and detail, and the template line of a syntax error.
        reason: String,
    },
    /// A value rendered past the size fluxgate evaluates (variables that double each other).
    #[error(
        "the value renders to more than {mib} MiB (variables that double each other?): \
         fluxgate stops here, so what reads it is not checked"
    )]
    TooLarge {
        /// The limit, in MiB.
        mib: usize,
    },
    /// The values rendered so far, all variables and hosts together, passed what one run
    /// evaluates (issue 26 §4: hundreds of variables of a few MiB each).
    #[error(
        "the variables and templates rendered so far total more than {mib} MiB: fluxgate \
         stops rendering here, so what reads this value is not checked"
    )]
    Budget {
        /// The limit, in MiB.
        mib: usize,
    },
    /// One render took more steps than the engine's fuel allows (a loop over a huge range,
    /// `'x' * 2000000000`).
    #[error(
        "the template takes more evaluation steps than fluxgate allows one render (the \
         engine ran out of fuel): fluxgate stops here, so what reads it is not checked"
    )]
    OutOfFuel,
}
