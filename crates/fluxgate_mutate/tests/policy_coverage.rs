//! Policies carry requirements (SPEC §8): a requirement guarded by a policy of `policies:`
//! that runs is covered by `policy:<name>`; one whose policy needs the cluster is deferred;
//! an unbound ValidatingAdmissionPolicy maps but does not cover.

use std::path::Path;

use fluxgate_fs::RealFs;
use fluxgate_model::{RepoIndex, discover};
use fluxgate_mutate::coverage::{Status, coverage, inputs};

#[test]
fn policies_cover_the_requirements_they_name() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/policy-coverage");
    let (config, diags) = discover::load(&root).expect("the fixture's fluxgate.yaml");
    assert!(diags.is_empty(), "{diags:?}");
    let index = RepoIndex::build(&root);
    let fs = RealFs::new(&root);
    let i = inputs(&fs, &root, &config, &index)
        .expect("readable")
        .expect("a requirements file");
    let c = coverage(&i.registry, &i.checks, &i.serving, None);
    let status = |id: &str| {
        let r = c
            .requirements
            .iter()
            .find(|r| r.requirement.id == id)
            .expect("the requirement");
        (r.status, r.checks.clone(), r.not_run.clone())
    };
    // The annotation and the file's `Serves:` header.
    assert_eq!(
        status("R-SEC-01"),
        (
            Status::Covered,
            vec!["policy:require-non-root".to_string()],
            vec![]
        )
    );
    assert_eq!(status("R-SEC-02").0, Status::Covered);
    // verifyImages is enforced by the cluster only.
    assert_eq!(
        status("R-SEC-03"),
        (
            Status::Deferred,
            vec!["policy:verify-images".to_string()],
            vec![]
        )
    );
    // No ValidatingAdmissionPolicyBinding: the policy enforces nothing.
    assert_eq!(
        status("R-SEC-04"),
        (
            Status::Gap,
            vec![],
            vec!["policy:no-host-network (disabled)".to_string()]
        )
    );
    assert_eq!(status("R-OPS-01").0, Status::Gap);
    assert!(c.unknown.is_empty(), "{:?}", c.unknown);
}
