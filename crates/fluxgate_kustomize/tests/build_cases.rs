//! Build fixtures: each folder under `fixtures/build/<case>/` is a kustomization (the case
//! folder is also the load restrictor's root) and `expected.yaml` is what `kubectl kustomize`
//! (kustomize v5.5.0) printed for it. The build must give the same objects, print the same
//! bytes, and report no error.

use std::path::Path;

use fluxgate_kustomize::{RealFs, build};
use fluxgate_yaml::{EmitOptions, Node, Schema, emit_docs, parse_stream};

fn check(case: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/build")
        .join(case);
    let fs = RealFs::new(&dir);
    let out = build(&fs, &dir, &dir);
    assert!(!out.has_errors(), "{case}: {:#?}", out.problems);
    let text =
        std::fs::read_to_string(dir.join("expected.yaml")).expect("fixture has expected.yaml");
    let expected: Vec<Node> = parse_stream("expected.yaml", &text, Schema::Kube).docs;
    assert_eq!(out.objects, expected, "{case}: rendered objects");
    let printed = emit_docs(
        &out.objects,
        EmitOptions {
            sort_keys: true,
            ..EmitOptions::default()
        },
    );
    assert_eq!(printed, text, "{case}: printed bytes");
}

#[test]
fn binary_generator_files_become_binary_data() {
    check("binary-generator-files");
}

#[test]
fn long_strings_fold_at_eighty_columns_as_go_yaml_does() {
    check("long-lines");
}

#[test]
fn characters_go_yaml_cannot_print_force_double_quotes() {
    // An emoji (past U+FFFF) is escaped, in a multi-line string too (no literal block);
    // a no-break space and private-use characters are printed as they are.
    check("non-printable-characters");
}

#[test]
fn block_scalars_ending_an_unterminated_file_keep_no_final_break() {
    // A resource file and a patch file whose last line, with no line break after it, ends a
    // block scalar: go-yaml reads no final line break.
    check("unterminated-block-scalar");
}

#[test]
fn folded_block_scalars_read_as_go_yaml_reads_them() {
    check("folded-scalars");
}

#[test]
fn replacements_copy_fields_as_kustomize_does() {
    // Source parts, target parts, list selectors, `*`, reject, labelSelector, create, a
    // replacement file, and typed targets.
    check("replacements");
    // Sources and targets selected by the names they had before namePrefix; whole maps.
    check("replacements-earlier-names");
}

#[test]
fn builtin_transformer_configs_run() {
    // A directory of configs (prefix/suffix, labels, annotations), a NamespaceTransformer
    // file, and inline ReplicaCount, Patch and ImageTag transformers.
    check("builtin-transformer-configs");
}

#[test]
fn webhook_service_references_follow_the_service_namespace() {
    check("webhook-service-namespace");
}

#[test]
fn vars_are_replaced_in_their_fields() {
    // Vars from a base and the overlay, after namePrefix and namespace; typed whole-field
    // values, `$$`, unknown vars and an unclosed reference left as written.
    check("vars");
}

#[test]
fn a_custom_openapi_schema_replaces_the_built_in_one() {
    // The CRD's containers merge by name as its schema says; the Deployment, which the
    // custom schema does not describe, has its containers list replaced (kubectl does so).
    check("openapi-custom-schema");
}

#[test]
fn core_namespaces_sort_first_and_backwards() {
    check("namespace-kinds-order");
}

#[test]
fn namespace_sets_apiservice_and_crd_conversion_service_namespaces() {
    check("service-reference-namespaces");
}

#[test]
fn strategic_merge_drops_fields_written_as_nothing() {
    // `key:` goes, `key: null` and `key: ~` stay, lists kyaml replaces are left alone.
    check("patch-drops-implicit-nulls");
    // Merged lists (containers, env) are walked element by element, patched or not.
    check("patch-drops-implicit-nulls-in-merged-lists");
}

#[test]
fn configurations_add_field_specs() {
    // A custom resource's ConfigMap reference, `$(VAR)` field, selector labels and image.
    check("configurations");
    // A base's configurations reach the kustomizations above it, not its siblings.
    check("configurations-scope");
    // A `namespace` section: the namespace also goes to a custom resource's field.
    check("configurations-namespace");
}

#[test]
fn patch_targets_use_the_schema_scope_rule() {
    // A ClusterRole of a custom group is namespaced for kustomize, so a target naming the
    // `default` namespace selects it; the built-in rbac ClusterRole stays unselected.
    check("patch-target-scope");
}

#[test]
fn namespace_transformer_configs_use_their_own_field_specs() {
    // Custom fieldSpecs replace the built-in table (a Namespace is not renamed without
    // `metadata/name`), unsetOnly, the three subject modes, a config built from a
    // kustomization directory, and inline configs running before the directory.
    check("namespace-transformer-configs");
}

/// Issue 20, class 4 (both seen on real repositories): an alias used as a mapping key
/// (`*app: enabled`, go-yaml reads the key as the anchored scalar) and an escaped dot in a
/// replacement's fieldPath (`data.emqx\.conf` is the key `emqx.conf`).
#[test]
fn alias_as_a_key_and_escaped_dots_in_field_paths() {
    check("alias-key-and-escaped-dot");
}
