//! The parameter table (`param_spec::PARAMS`) against everything that lists the solver
//! parameters: validation (`SolverParams::problems`), the methods' capability lists
//! (`SolverKind::parameters`), the Solver panel's sliders, `impulse-lab run --help` and
//! `--set`, and docs/scene-format.md's params table.

use impulse_lab::SolverKind;
use impulse_lab::dynamics::solver::SolverParams;
use impulse_lab::dynamics::solver::param_spec::{Bound, Domain, PARAMS, spec};
use std::process::Command;

/// SolverParams with `field` written as `value`, through the scene format's parser (so
/// out-of-range values get in, as from a user's file).
fn with(field: &str, value: f64) -> SolverParams {
    let text = format!("({field}: {value:?})");
    ron::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// Values at, just inside and just outside each end of a domain.
fn probes(domain: &Domain) -> Vec<f64> {
    let near = |b: f64| {
        let step = 1e-9 * b.abs().max(1.0);
        [b - step, b, b + step]
    };
    match *domain {
        Domain::Real { min, max } => [min, max]
            .into_iter()
            .flat_map(|b| match b {
                Bound::Closed(x) | Bound::Open(x) => near(x).to_vec(),
                Bound::Unbounded => vec![],
            })
            .chain([1e300, -1e300])
            .collect(),
        Domain::Count { min, max } => [min, max]
            .into_iter()
            .flat_map(|b| [f64::from(b) - 1.0, f64::from(b), f64::from(b) + 1.0])
            .filter(|&v| v >= 0.0 && v <= f64::from(u32::MAX))
            .collect(),
        Domain::Switch | Domain::Choice(_) => vec![],
    }
}

/// Validation accepts exactly the table's domain: at and around every bound, a field's
/// value is a problem (named by its field) if and only if the table says it is out of
/// range; the defaults are valid.
#[test]
fn validation_follows_the_table() {
    assert!(SolverParams::default().problems().is_empty());
    let mut probed = 0;
    for s in PARAMS {
        for v in probes(&s.domain) {
            let value = if matches!(s.domain, Domain::Count { .. }) {
                // Counts are u32 in the struct: write them as integers.
                let p: SolverParams = ron::from_str(&format!("({}: {})", s.field, v as u64))
                    .unwrap_or_else(|e| panic!("{}: {e}", s.field));
                p
            } else {
                with(s.field, v)
            };
            let flagged = value.problems().iter().any(|(f, _)| *f == s.field);
            assert_eq!(
                flagged,
                !s.domain.contains(v),
                "{} = {v}: validation and the table ({}) disagree",
                s.field,
                s.domain.text()
            );
            probed += 1;
        }
    }
    assert!(probed > 50, "{probed} probes");
}

/// Every parameter a method says it reads has a row, and the rows name distinct fields
/// and parameters.
#[test]
fn every_parameter_a_method_reads_has_a_row() {
    for kind in SolverKind::ALL {
        for p in kind.parameters() {
            assert!(PARAMS.iter().any(|s| s.param == Some(p)), "{kind}: {p:?}");
        }
    }
    for (i, a) in PARAMS.iter().enumerate() {
        for b in &PARAMS[i + 1..] {
            assert_ne!(a.field, b.field);
            assert!(a.param.is_none() || a.param != b.param, "{}", a.field);
        }
    }
}

/// The panel's sliders cannot leave the valid range: both ends of every slider lie in
/// its parameter's domain (a slider the validation rejected would snap back).
#[test]
fn the_panel_sliders_stay_inside_the_valid_ranges() {
    for s in PARAMS {
        if let Some(r) = s.slider {
            assert!(r.min < r.max, "{}", s.field);
            for v in [r.min, r.max] {
                assert!(
                    s.domain.contains(v),
                    "{}: slider end {v} outside {}",
                    s.field,
                    s.domain.text()
                );
            }
            assert!(
                !r.log || r.min > 0.0,
                "{}: a log slider needs min > 0",
                s.field
            );
        }
    }
}

/// `set` (scene text and `run --set`) accepts the table's domain and names the field
/// and its domain otherwise.
#[test]
fn set_checks_the_domain() {
    let mut p = SolverParams::default();
    p.set("lambda", "12.5").unwrap();
    assert_eq!(p.lambda, 12.5);
    p.set("resting_model", "Soft").unwrap();
    p.set("contact_pass", "false").unwrap();
    assert!(!p.contact_pass);
    p.set("max_iterations", "7").unwrap();
    assert_eq!(p.max_iterations, 7);
    let e = p.set("ccp_omega", "2").unwrap_err();
    assert!(e.contains("ccp_omega must be in (0, 2)"), "{e}");
    let e = p.set("max_iterations", "2.5").unwrap_err();
    assert!(e.contains("an integer in [1, 1e5]"), "{e}");
    let e = p.set("restitutio", "0.5").unwrap_err();
    assert!(
        e.contains("unknown parameter") && e.contains("restitution"),
        "{e}"
    );
    for s in PARAMS {
        let text = SolverParams::default().text(s.field).unwrap();
        let mut q = SolverParams::default();
        q.set(s.field, &text)
            .unwrap_or_else(|e| panic!("{}: its default {text}: {e}", s.field));
        assert_eq!(q, SolverParams::default(), "{}", s.field);
    }
}

fn impulse_lab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_impulse-lab"))
        .args(args)
        .output()
        .expect("impulse-lab runs")
}

/// `impulse-lab run --help` lists every parameter with its unit, domain and default,
/// and `--set` changes any of them or refuses with the table's domain.
#[test]
fn run_help_lists_every_parameter_and_set_uses_the_table() {
    let out = impulse_lab(&["run", "--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    let defaults = SolverParams::default();
    for s in PARAMS {
        let unit = if s.unit.is_empty() { "-" } else { s.unit };
        let line = help
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{} ", s.field)))
            .unwrap_or_else(|| panic!("run --help does not list {}:\n{help}", s.field));
        for part in [
            format!("[{unit}]"),
            s.domain.text(),
            format!("default {}", defaults.text(s.field).unwrap()),
        ] {
            assert!(
                line.contains(&part),
                "{}: '{part}' not in '{line}'",
                s.field
            );
        }
    }
    let out = impulse_lab(&["run", "etm_box_flat", "--steps", "2", "--set", "lambda=0.5"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--set lambda=0.5") && err.contains("λ must be in [1, 1e4]")
            || err.contains("lambda must be in [1, 1e4]"),
        "{err}"
    );
    let out = impulse_lab(&[
        "run",
        "etm_box_flat",
        "--steps",
        "2",
        "--set",
        "rest_velocity=0.2",
        "--set",
        "contact_sweeps=3",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// docs/scene-format.md's params table lists the same fields as the table, with the
/// same unit, default and valid values.
#[test]
fn the_scene_format_docs_list_the_same_parameters() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/scene-format.md"))
        .unwrap();
    let start = doc.find("### `params`").expect("a params section");
    let rows: Vec<Vec<String>> = doc[start..]
        .lines()
        .skip_while(|l| !l.starts_with("| `"))
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            // Cells split at unescaped pipes ("\|" is a pipe inside a cell).
            l.replace("\\|", "\u{1}")
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().trim_matches('`').replace('\u{1}', "|"))
                .collect()
        })
        .collect();
    let fields: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    let table: Vec<&str> = PARAMS.iter().map(|s| s.field).collect();
    assert_eq!(fields, table, "docs/scene-format.md's params rows");
    let defaults = SolverParams::default();
    for row in &rows {
        let s = spec(&row[0]).unwrap();
        let (meaning, unit, default) = (&row[1], &row[2], &row[3]);
        assert_eq!(unit, s.unit, "{}: unit", s.field);
        let text = s.domain.text();
        let as_docs = text.replacen("in [", "∈ [", 1).replacen("in (", "∈ (", 1);
        assert!(
            meaning.contains(&text) || meaning.contains(&as_docs),
            "{}: the docs' meaning does not say '{text}': {meaning}",
            s.field
        );
        let ours = defaults.text(s.field).unwrap();
        let same = match (default.parse::<f64>(), ours.parse::<f64>()) {
            (Ok(a), Ok(b)) => a == b,
            _ => *default == ours,
        };
        assert!(same, "{}: docs default {default}, ours {ours}", s.field);
    }
}
