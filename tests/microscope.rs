//! Collision microscope (`impulse_lab::microscope`): the record of one impact
//! reproduces paper 000 §7.1's single-contact figures under ETM, lists SQM's resolution
//! order, and its CSV export reads back.

use impulse_lab::SolverKind;
use impulse_lab::World;
use impulse_lab::math::Vec3;
use impulse_lab::microscope::{CSV_HEADER, catch_next_impact, read_csv, record_step};
use impulse_lab::scene::{Scene, load_scene};
use std::path::Path;

fn scene(name: &str) -> Scene {
    load_scene(&Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("scenes/{name}.ron"))).unwrap()
}

fn world(s: &Scene) -> World {
    let mut w = s.build_world().unwrap();
    w.start_ledger();
    w
}

/// Paper 000 §7.1 (Fig. 6b, eq. 69) through the microscope: `scenes/etm_tetrahedra.ron`
/// (e = 1, μ = 0, no gravity) under ETM. For every λ the first impact is one contact;
/// K + W of every row equals K₀ to 1e-12 relative (a few hundred roundings of 1e-16:
/// Algorithm 1 is exact); the elastic peak W_mc equals the kinetic-energy drop K₀ − K_mc
/// at maximum compression (eqs. 62-64) to 1e-12; compression ends at u_n = 0; u_n
/// leaves reversed (e = 1); the compression stage has more increments for larger λ;
/// the cumulative normal impulse only grows and its last value is the sum of the rows.
#[test]
fn tetrahedra_impact_under_etm_reproduces_the_single_contact_figures() {
    let base = scene("etm_tetrahedra");
    assert_eq!(base.solver, SolverKind::Etm);
    let mut counts = Vec::new();
    eprintln!("λ | u_n before | u_n after | drift/K0 | W_peak | K0 − K_mc | compression rows");
    for lambda in [1.0, 5.0, 30.0, 200.0] {
        let mut s = base.clone();
        s.params.lambda = lambda;
        let mut w = world(&s);
        let r = catch_next_impact(&mut w, None, 30)
            .unwrap()
            .expect("an impact");
        assert_eq!(r.step, w.step_index, "the record is the last step's");
        assert_eq!(r.time, (r.step - 1) as f64 * r.dt);
        assert_eq!(r.contacts.len(), 1, "λ = {lambda}: one vertex-face contact");
        let c = &r.contacts[0];
        assert_eq!((c.a, c.b), (0, Some(1)));
        let sm = &r.summary;
        let k0 = sm.kinetic_before;
        assert_eq!(sm.elastic_before, 0.0);
        for row in &r.rows {
            assert!(
                ((row.total_energy - k0) / k0).abs() < 1e-12,
                "λ = {lambda}: K + W = {} at iteration {} vs K0 = {k0}",
                row.total_energy,
                row.iteration
            );
        }
        assert!(sm.energy_drift_relative < 1e-12);
        let k_mc = sm.kinetic_at_max_compression.unwrap();
        let drop = k0 - k_mc;
        assert!(
            ((sm.elastic_peak - drop) / drop).abs() < 1e-12,
            "λ = {lambda}: W_peak {} vs K0 − K_mc {drop}",
            sm.elastic_peak
        );
        // Maximum compression is the last compression row: u_n = 0 there.
        let mc = r.rows.iter().rfind(|x| x.stage == "compression").unwrap();
        assert_eq!(mc.elastic_total, sm.elastic_peak);
        assert!(mc.normal_velocity.abs() < 1e-12 * c.normal_velocity_before.abs());
        assert!(
            ((c.normal_velocity_after + c.normal_velocity_before) / c.normal_velocity_before).abs()
                < 1e-12,
            "λ = {lambda}: u_n {} → {}",
            c.normal_velocity_before,
            c.normal_velocity_after
        );
        // Everything stored is released: K after = K0.
        assert!(((sm.kinetic_after - k0) / k0).abs() < 1e-12);
        assert!(sm.elastic_after.abs() < 1e-9 * k0);
        // Cumulative impulse per iteration: one entry per distinct iteration, the
        // normal part never decreasing (ETM only pushes), the last equal to the sum.
        assert_eq!(r.cumulative.len(), r.iterations.len());
        let pn: Vec<f64> = r.cumulative.iter().map(|p| p[0].dot(&c.normal)).collect();
        assert!(pn.windows(2).all(|p| p[1] >= p[0]) && pn[0] > 0.0);
        let sum: Vec3 = r.rows.iter().map(|x| Vec3::from(x.impulse)).sum();
        assert!((r.total_impulses()[0] - sum).norm() <= 1e-12 * sum.norm());
        assert!(sm.resolution_order.is_empty(), "ETM has no pop order");
        eprintln!(
            "{lambda} | {:.6} | {:.6} | {:.2e} | {:.6} | {:.6} | {}",
            c.normal_velocity_before,
            c.normal_velocity_after,
            sm.energy_drift_relative,
            sm.elastic_peak,
            drop,
            sm.compression_iterations
        );
        counts.push(sm.compression_iterations);
    }
    assert!(
        counts.windows(2).all(|p| p[1] > p[0]),
        "compression iterations must grow with λ: {counts:?}"
    );
}

/// SQM on the box landing flat (paper 000 §7.3, four corners): the record lists the
/// order in which contacts were resolved, one entry per impulse (row); the first is a most-approaching contact (App. A: the heap pops the most
/// negative u_n; all four start at −10 m/s). SMM solves them at once: no order.
#[test]
fn sqm_impact_lists_the_resolution_order() {
    let mut s = scene("etm_box_flat");
    s.solver = SolverKind::Sqm;
    let mut w = world(&s);
    let r = catch_next_impact(&mut w, Some(0), 300)
        .unwrap()
        .expect("the box lands");
    eprintln!(
        "SQM box flat: step {}, order {:?}",
        r.step, r.summary.resolution_order
    );
    assert_eq!(r.contacts.len(), 4);
    let order = &r.summary.resolution_order;
    assert_eq!(order.len(), r.rows.len());
    assert_eq!(order.len() as u32, w.last_report.impulses);
    assert!(order.iter().zip(&r.rows).all(|(&c, row)| c == row.contact));
    // SQM needs only three impulses here (measured order [0, 3, 0]): after the two
    // opposite corners the box spins, and the other two still approach (at 3.46 m/s) but
    // are speculative contacts that do not close within the step (gap + h u_n ≥ 0),
    // which SQM leaves alone (its step 2).
    for c in &r.contacts {
        let un = c.normal_velocity_after;
        assert!(
            un >= -1e-12 || c.gap + r.dt * un >= 0.0,
            "u_n⁺ = {un} at gap {}",
            c.gap
        );
    }
    let min_un = r
        .contacts
        .iter()
        .map(|c| c.normal_velocity_before)
        .fold(f64::INFINITY, f64::min);
    assert!(r.contacts[order[0]].normal_velocity_before <= min_un + 1e-12);
    assert_eq!(
        r.cumulative.len(),
        r.rows.len(),
        "one iteration per impulse"
    );

    s.solver = SolverKind::Smm;
    let mut w = world(&s);
    let r = catch_next_impact(&mut w, Some(0), 300).unwrap().unwrap();
    assert!(r.summary.resolution_order.is_empty());
}

/// CSV export: a header of [`CSV_HEADER`], one line per trace row, values read back
/// bit for bit (the csv crate writes shortest round-trip floats), cumulative impulse
/// columns ending at the record's totals.
#[test]
fn csv_round_trips() {
    let mut w = world(&scene("etm_tetrahedra"));
    let r = catch_next_impact(&mut w, None, 30).unwrap().unwrap();
    let mut bytes = Vec::new();
    r.write_csv(&mut bytes).unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert_eq!(text.lines().next().unwrap(), CSV_HEADER.join(","));
    assert_eq!(text.lines().count(), r.rows.len() + 1);
    let back = read_csv(bytes.as_slice()).unwrap();
    assert_eq!(back.len(), r.rows.len());
    for (a, b) in back.iter().zip(&r.rows) {
        assert_eq!(a.step, r.step);
        assert_eq!(
            (a.iteration, a.stage.as_str(), a.contact),
            (b.iteration, b.stage, b.contact)
        );
        assert_eq!(a.normal_velocity.to_bits(), b.normal_velocity.to_bits());
        assert_eq!(a.impulse_z.to_bits(), b.impulse[2].to_bits());
        assert_eq!(a.total_energy.to_bits(), b.total_energy.to_bits());
        assert_eq!((a.body_a, a.body_b), (0, Some(1)));
    }
    let last = back.last().unwrap();
    let total = r.total_impulses()[0];
    assert_eq!(
        [last.cumulative_x, last.cumulative_y, last.cumulative_z].map(f64::to_bits),
        [total.x, total.y, total.z].map(f64::to_bits)
    );
    // A container contact has an empty body_b column and a container index.
    let mut w = world(&scene("etm_box_flat"));
    let r = catch_next_impact(&mut w, None, 300).unwrap().unwrap();
    let mut bytes = Vec::new();
    r.write_csv(&mut bytes).unwrap();
    let back = read_csv(bytes.as_slice()).unwrap();
    assert_eq!(back.len(), r.rows.len());
    assert!(
        back.iter()
            .all(|x| x.body_b.is_none() && x.container == Some(0))
    );
    assert!(
        read_csv("a,b\n1,2\n".as_bytes()).is_err(),
        "wrong header refused"
    );
}

/// Steps without an impact: free flight gives a record with no contacts and no
/// impulse; a body that is never hit is never caught.
#[test]
fn no_impact_no_record() {
    let mut w = world(&scene("etm_box_on_box"));
    let r = record_step(&mut w).unwrap();
    assert_eq!(r.step, 1);
    assert!(!r.has_impulse(None));
    // Body 0 is the static box: it takes part in the impact as body b.
    let r = catch_next_impact(&mut w, Some(0), 30).unwrap().unwrap();
    assert!(r.contacts.iter().all(|c| c.involves(0) && c.involves(1)));
    let mut w = world(&scene("etm_box_on_box"));
    assert!(catch_next_impact(&mut w, Some(7), 5).unwrap().is_none());
    assert_eq!(w.step_index, 5);
}

fn cli(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_impulse-lab"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .expect("binary runs")
}

/// `impulse-lab impact`: prints the impact's step, contacts and summary and writes the
/// same CSV as the library; no impact within the steps is not an error; a body the
/// scene lacks is invalid input (exit 2).
#[test]
fn cli_impact_prints_and_writes_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("impact.csv");
    let o = cli(&["impact", "etm_tetrahedra", "--out", path.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.contains("impact in step 1") && out.contains("contact 0: body 0 – body 1"),
        "{out}"
    );
    let rows = read_csv(std::fs::File::open(&path).unwrap()).unwrap();
    let mut w = world(&scene("etm_tetrahedra"));
    let r = catch_next_impact(&mut w, None, 30).unwrap().unwrap();
    assert_eq!(rows.len(), r.rows.len());

    let o = cli(&["impact", "etm_box_flat", "--max-steps", "10"]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("no impact within 10 steps"));
    let o = cli(&["impact", "etm_box_flat", "--solver", "sqm", "--body", "0"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("impact in step 166") && out.contains("resolution order: [0, 3, 0]"),
        "{out}"
    );
    let o = cli(&["impact", "etm_box_flat", "--body", "9"]);
    assert_eq!(o.status.code(), Some(2));
}
