//! Span- and comment-preserving YAML for fluxgate.
//!
//! Every [`Node`] knows the file, line and column that set it; [`Comments::scan`] finds a
//! text's comments by line (only when asked: most parses need none) so that `# [parity]` tags
//! can be found; anchors, aliases and merge keys are expanded under a hard budget; plain scalars resolve with the rules of the tool that reads them
//! ([`Schema::Kube`] for kustomize and Flux, [`Schema::Yaml11`] for Ansible).
//!
//! ```
//! use fluxgate_yaml::{parse_stream, Comments, Schema};
//! let text = "k8sServiceHost: 192.168.2.9 # [parity]\n";
//! let s = parse_stream("values.yaml", text, Schema::Kube);
//! let host = s.docs[0].get("k8sServiceHost").unwrap();
//! assert_eq!(host.as_str(), Some("192.168.2.9"));
//! assert_eq!(host.loc.line, 1);
//! assert!(Comments::scan(text).has_tag(1, "parity"));
//! ```

mod comments;
mod emit;
mod fast;

#[doc(hidden)]
pub use fast::compare_readers;
mod lenient;
mod lines;
mod node;
mod parse;
mod scalar;

pub use comments::Comments;
pub use emit::{
    EmitOptions, Scalar, Shape, Tree, emit_docs, emit_node, emit_node_scalars, emit_tree,
    emit_tree_scalars, go_yaml_key_order, quote_string,
};
pub use lines::{line_starts, lines, split_lines};
pub use node::{Map, Node, Value, format_float};
pub use parse::{
    CONTROL_CHARACTERS, MAX_DEPTH, NODE_BUDGET, Ranges, Stream, parse_one, parse_one_shared,
    parse_stream, parse_stream_ranges, parse_stream_shared,
};
pub use scalar::{Schema, resolve_plain};
