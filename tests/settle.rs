//! Piles come to rest (issue 3): a small pile with e = 0.3, μ = 0.3, dt = 1/600 settles
//! under ETM, SQM and SMM by the solvers' own means (sleeping off): kinetic energy below
//! 10⁻⁶ of the potential-energy range (PE at release − PE now, `impulse_lab::settle`)
//! and penetration below 1 % of the body size. Island sleeping then stops the settled
//! pile and wakes it when a wall is removed or an awake body lands on it.
//!
//! A small cube pile (36 cubes) checks SMM on ill-conditioned face contacts. The
//! full-size piles (540 spheres, 325 cubes) are reported by
//! `impulse-lab run packing_spheres --solver S --duration 8 --settle [--no-sleep]`.

use impulse_lab::container::Container;
use impulse_lab::dynamics::solver::RestingModel;
use impulse_lab::math::{Quat, Vec3};
use impulse_lab::scene::parse_scene;
use impulse_lab::settle::{KE_RATIO_SETTLED, PENETRATION_RATIO_MAX, SettleMonitor};
use impulse_lab::{RigidBody, Shape, SolverKind, SolverParams, World};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const DT: f64 = 1.0 / 600.0;

/// The packing scenes' parameters (paper 000 §7.5): e = 0.3, μ = 0.3, resting below
/// 0.1 m/s.
fn params() -> SolverParams {
    SolverParams {
        restitution: 0.3,
        friction: 0.3,
        lambda: 30.0,
        rest_velocity: 0.1,
        rolling_friction: 0.01,
        spinning_friction: 0.01,
        ..Default::default()
    }
}

/// 3 × 3 × `layers` spheres of radius 0.5 on a jittered lattice (spacing 1.1 m, random
/// sideways velocities up to 0.2 m/s) dropped into a box 3.04 m wide: a snug column, so
/// no sphere can roll away on the floor (a rigid sphere rolling on a plane never stops).
fn pile(kind: SolverKind, layers: usize, sleep: bool) -> World {
    let mut w = World::new(Vec3::new(0.0, 0.0, -9.81), DT, kind, params()).unwrap();
    w.sleep.enabled = sleep;
    w.add_container(Container::Box {
        center: Vec3::zeros(),
        half_size: [1.52, 1.52],
        height: 20.0,
        walls: [true; 4],
        dividers: vec![],
    });
    let mut rng = ChaCha8Rng::seed_from_u64(75);
    let s = Shape::Sphere { radius: 0.5 };
    for k in 0..layers {
        for j in 0..3 {
            for i in 0..3 {
                let pos = Vec3::new(
                    -1.0 + i as f64 + rng.random_range(-0.01..0.01),
                    -1.0 + j as f64 + rng.random_range(-0.01..0.01),
                    0.6 + 1.1 * k as f64,
                );
                let mut b = RigidBody::new(&s, 2500.0, pos, Quat::identity());
                b.velocity = Vec3::new(
                    rng.random_range(-0.2..0.2),
                    rng.random_range(-0.2..0.2),
                    0.0,
                );
                w.add_body(b);
            }
        }
    }
    w
}

/// Run `steps` steps; return the monitor.
fn run(w: &mut World, steps: usize) -> SettleMonitor {
    w.start_ledger();
    let mut m = SettleMonitor::start(w);
    for _ in 0..steps {
        w.step().unwrap();
        m.sample(w);
    }
    m
}

fn settles_by_its_own_means(kind: SolverKind) {
    // 27 spheres fall ≤ 2.8 m and settle within ~2.5 s; run 4 s.
    check_settles(kind, pile(kind, 3, false), 3.0);
}

/// Run `w` for `within` + 1 s and check the issue's criteria (see the module doc),
/// reached within `within` seconds.
fn check_settles(kind: SolverKind, mut w: World, within: f64) {
    let m = run(&mut w, ((within + 1.0) / DT).round() as usize);
    let t = m.time_to_settle();
    eprintln!(
        "{kind}: KE/ΔU = {:.3e} (ΔU = {:.4e} J), settled after {t:?} s, max penetration/size \
         {:.3e} after settling, {:.3e} over the run",
        m.last.ke_ratio,
        m.last.potential_range,
        m.max_penetration_after_settling(),
        m.max_penetration
    );
    assert_eq!(w.sleeping_bodies(), 0, "sleeping was off");
    // The issue's criteria, verbatim (KE < 1e-6 of the PE range, penetration < 1 %),
    // reached and held for at least the last second: no jitter, no creeping.
    assert!(
        m.last.ke_ratio < KE_RATIO_SETTLED,
        "{kind}: KE/ΔU = {:e}",
        m.last.ke_ratio
    );
    let t = t.expect("settled");
    assert!(t < within, "{kind}: settled only after {t} s");
    assert!(
        m.max_penetration_after_settling() < PENETRATION_RATIO_MAX,
        "{kind}: penetration {:e}",
        m.max_penetration_after_settling()
    );
    // No creeping: the settled pile does not keep sinking. Over the next 0.5 s its
    // potential energy changes by less than M g × 0.1 mm (a mean sink of 10⁻⁴ of the
    // body size; one step of gravity alone, g h², is 27 µm).
    let u_before = m.last.potential_range;
    let mut m2 = m.clone();
    for _ in 0..300 {
        w.step().unwrap();
        m2.sample(&w);
    }
    let weight: f64 = w.bodies.iter().map(|b| b.mass * 9.81).sum();
    let sink = (m2.last.potential_range - u_before) / weight;
    eprintln!("{kind}: mean sink over 0.5 s after settling {sink:.3e} m");
    assert!(
        sink.abs() < 1e-4,
        "{kind}: the pile crept by {sink:e} m in 0.5 s"
    );
    // No jitter: K/ΔU stayed below the criterion at every one of those 300 steps.
    assert_eq!(m2.time_to_settle(), Some(t), "{kind}: K/ΔU rose again");
}

/// `w` with the soft resting model (`SolverParams::resting_model`).
fn soft(mut w: World) -> World {
    w.params.resting_model = RestingModel::Soft;
    w.params.validate().unwrap();
    w
}

/// The soft resting model settles the same pile by the same criteria: its steady
/// overlap under a body's weight is (i_s/m_s) g h / (ω/a₁) ≈ 0.28 mm per contact at
/// 30 Hz, ζ = 10, h = 1/600 s (`contact_pass::Softness`), 0.06 % of a sphere's
/// diameter here, and three layers of it stay well below the 1 % bound.
#[test]
fn jolt_pile_settles_with_soft_contacts() {
    check_settles(
        SolverKind::Jolt,
        soft(pile(SolverKind::Jolt, 3, false)),
        3.0,
    );
}

#[test]
fn sqm_pile_settles_with_soft_contacts() {
    check_settles(SolverKind::Sqm, soft(pile(SolverKind::Sqm, 3, false)), 3.0);
}

#[test]
fn sqm_cube_pile_settles_with_soft_contacts() {
    check_settles(SolverKind::Sqm, soft(cube_column(SolverKind::Sqm)), 4.5);
}

#[test]
fn sqm_pile_settles_by_its_own_means() {
    settles_by_its_own_means(SolverKind::Sqm);
}

#[test]
fn etm_pile_settles_by_its_own_means() {
    settles_by_its_own_means(SolverKind::Etm);
}

#[test]
fn smm_pile_settles_by_its_own_means() {
    settles_by_its_own_means(SolverKind::Smm);
}

/// 36 cubes (edge 0.6 m, random orientations) on a 3 × 3 lattice, 4 layers, dropped
/// into a snug box: a small `packing_cubes`.
const CUBE_COLUMN: &str = r#"Scene(
    name: "Cube column",
    duration: 4.0,
    solver: "smm",
    params: (restitution: 0.3, friction: 0.3, lambda: 30.0, kp: 0.2, rest_velocity: 0.1,
             rolling_friction: 0.01, spinning_friction: 0.01),
    seed: 75,
    containers: [Box(center: (0.0, 0.0, 0.0), half_size: (1.6, 1.6), height: 20.0)],
    generators: [
        Lattice(
            count: 36,
            shape: Cube(edge: 0.6),
            density: 2500.0,
            region: (min: (-1.6, -1.6, 0.0), max: (1.6, 1.6, 12.0)),
            spacing: 1.05,
            orientation: Random,
            velocity_jitter: 0.2,
        ),
    ],
)"#;

fn cube_column(kind: SolverKind) -> World {
    let scene = parse_scene(CUBE_COLUMN, "cube_column.ron").unwrap();
    let mut w = scene.build_world().unwrap();
    w.set_solver(kind);
    w.sleep.enabled = false;
    w
}

/// Cube piles give SMM nearly redundant face and edge contacts (ill-conditioned
/// systems, see "Ill-conditioned systems" in `dynamics::solver::smm`). Measured with
/// the CLI on the same scene: SMM as it was stopped with "singular, inconsistent
/// system" at step 1,037; with resting contacts left to the contact pass but without
/// the regularised fallback it settled only after 3.92 s (sticking systems CG could
/// not solve fell back to frictionless rows); then 1.86 s. When the contact pass's
/// sliding friction was made exactly opposite the slip, this seed's column took 3.65 s:
/// the time is one draw of a chaotic pile. Over seeds 1-8 (`impulse-lab run
/// COLUMN.ron --settle --no-sleep`) the column settled in 2.2-4.6 s under SMM before
/// that change and 1.8-3.6 s after (SQM 2.0-4.7 s and 1.7-3.4 s, ETM 1.7-3.7 s and
/// 1.8-4.2 s); hence 4.5 s.
#[test]
fn smm_cube_pile_settles_by_its_own_means() {
    check_settles(SolverKind::Smm, cube_column(SolverKind::Smm), 4.5);
}

/// A settled pile with sleeping on (the default): asleep, kinetic energy exactly 0.
fn asleep_pile() -> World {
    let mut w = pile(SolverKind::Sqm, 2, true);
    let m = run(&mut w, 1500);
    assert_eq!(
        w.sleeping_bodies(),
        w.bodies.len(),
        "the settled pile is asleep"
    );
    assert_eq!(m.last.kinetic, 0.0);
    w
}

/// The angle-of-repose experiment removes a wall from a settled pile: it must wake.
#[test]
fn removing_a_wall_wakes_a_sleeping_pile() {
    let mut w = asleep_pile();
    if let Container::Box { walls, .. } = &mut w.containers[0] {
        walls[1] = false;
    }
    w.step().unwrap();
    assert_eq!(w.sleeping_bodies(), 0, "a removed wall wakes every body");
    // Simulated again: gravity and contacts act, and it stays awake while it moves.
    w.step().unwrap();
    assert!(
        w.contacts
            .iter()
            .all(|c| c.b.is_some() || c.normal.x > -0.5)
    );
    assert_eq!(w.sleeping_bodies(), 0);
}

/// An awake body landing on a sleeping pile wakes the island it touches.
#[test]
fn a_falling_body_wakes_the_pile_it_lands_on() {
    let mut w = asleep_pile();
    let n = w.bodies.len();
    let top = w
        .bodies
        .iter()
        .map(|b| b.position)
        .max_by(|a, b| a.z.total_cmp(&b.z))
        .unwrap();
    let s = Shape::Sphere { radius: 0.5 };
    // 0.5 m above the top sphere: lands after ~0.3 s at ~2.4 m/s.
    let i = w.add_body(RigidBody::new(
        &s,
        2500.0,
        top + Vec3::new(0.2, 0.0, 1.5),
        Quat::identity(),
    ));
    let mut woke = 0;
    for _ in 0..300 {
        w.step().unwrap();
        woke = woke.max(n - w.sleeping_bodies().min(n));
    }
    assert!(woke > 0, "the falling sphere woke the pile it landed on");
    // It did not pass through the sleeping bodies: it rests on top.
    assert!(
        w.bodies[i].position.z > top.z + 0.5,
        "{}",
        w.bodies[i].position.z
    );
}
