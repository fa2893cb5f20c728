//! Pinned final states: under each method, a short run of a mixed scene ends in a state
//! whose hash is written here, so that a change claimed to leave trajectories
//! bit-identical is checked by this test, and a change that moves them must update the
//! hash in the same commit and say why the new trajectory is right.
//!
//! The hash is 64-bit FNV-1a over the bit patterns of every body's position,
//! orientation, velocity and angular velocity, the ledger's cumulative columns and the
//! last step's contacts (pair, features, point, normal, gap), in order. It is a function
//! of the code, the scene and the floating-point environment (x86-64, the pinned
//! toolchain; `libm`'s transcendental functions come from the system's C library); it
//! does not depend on the thread count (tests/threads.rs).

use impulse_lab::World;
use impulse_lab::dynamics::solver::{RestingModel, SolverKind};
use impulse_lab::scene::parse_scene;

mod common;
use common::state_hash;

/// Every shape kind in an open box (`tests/fixtures/mixed_pour.ron`), dropped from low
/// height with random orientations and spins, so that within the run there are impacts,
/// sliding, face contacts between polyhedra, non-convex crosses, ellipsoids (SAGI) and a
/// forming pile that the contact pass and the position projection act on.
const SCENE: &str = include_str!("fixtures/mixed_pour.ron");

/// Steps of each run: 1 s at the scene's time step (1/600 s): the bodies land, strike
/// each other and start to pile.
const STEPS: usize = 600;

/// The world after `steps` steps, and the most body-body and body-container contacts
/// any of the last 100 steps had.
fn run(kind: SolverKind, steps: usize) -> (World, usize, usize) {
    run_with(kind, RestingModel::Hard, steps)
}

/// [`run`] with the contact pass's resting model `model`.
fn run_with(kind: SolverKind, model: RestingModel, steps: usize) -> (World, usize, usize) {
    let scene = parse_scene(SCENE, "determinism.ron").expect("the test's scene is valid");
    let mut w = scene.build_world().expect("the test's scene builds");
    w.set_solver(kind);
    w.params.resting_model = model;
    w.start_ledger();
    let (mut pairs, mut walls) = (0, 0);
    for step in 0..steps {
        w.step()
            .unwrap_or_else(|e| panic!("{kind} step {step}: {e}"));
        if step + 100 >= steps {
            let p = w.contacts.iter().filter(|c| c.b.is_some()).count();
            pairs = pairs.max(p);
            walls = walls.max(w.contacts.len() - p);
        }
    }
    (w, pairs, walls)
}

/// The run did what the hash is meant to pin: bodies in contact with each other and
/// with the box near its end (the counts of one instant swing: CCP's pile, which keeps
/// bouncing on Newmark's elastic law, holds 11-26 body-body contacts in its last 100
/// steps), and the solver or the contact pass at work.
fn check_coverage(pairs: usize, walls: usize, kind: SolverKind) {
    assert!(
        pairs >= 20 && walls >= 20,
        "{kind}: the run's last 100 steps hold at most {pairs} body-body and {walls} \
         body-container contacts"
    );
}

fn check(kind: SolverKind, pinned: u64) {
    check_with(kind, RestingModel::Hard, pinned);
}

fn check_with(kind: SolverKind, model: RestingModel, pinned: u64) {
    let (w, pairs, walls) = run_with(kind, model, STEPS);
    check_coverage(pairs, walls, kind);
    let got = state_hash(&w);
    assert_eq!(
        got, pinned,
        "{kind} ({model:?}): final-state hash {got:#018x}, pinned {pinned:#018x}. If the change is meant \
         to move this method's trajectory, pin the new hash in the same commit and say why \
         the new result is right."
    );
}

#[test]
fn jolt_final_state_is_pinned() {
    check(SolverKind::Jolt, 0x4c09_e7a8_efbe_0985);
}

#[test]
fn etm_final_state_is_pinned() {
    check(SolverKind::Etm, 0x011b_be36_7d81_ba4c);
}

#[test]
fn sqm_final_state_is_pinned() {
    check(SolverKind::Sqm, 0x863c_a2ea_9331_2403);
}

#[test]
fn smm_final_state_is_pinned() {
    check(SolverKind::Smm, 0xe812_1495_30f1_7be7);
}

#[test]
fn ccp_final_state_is_pinned() {
    check(SolverKind::Ccp, 0xf5f4_6c4d_fbba_d3d3);
}

#[test]
fn mdp_final_state_is_pinned() {
    check(SolverKind::Mdp, 0x8c57_8f69_20d9_ee3b);
}

/// The soft resting model (`RestingModel::Soft`) under jolt and SQM: the contact pass's
/// soft sweeps and push-out.
#[test]
fn jolt_soft_final_state_is_pinned() {
    check_with(SolverKind::Jolt, RestingModel::Soft, 0x4c29_27ad_8a3d_495d);
}

#[test]
fn sqm_soft_final_state_is_pinned() {
    check_with(SolverKind::Sqm, RestingModel::Soft, 0x761a_5097_f180_588d);
}

/// The hash sees a change in the last bit of one body's state: it cannot pass a run
/// that differs from the pinned one.
#[test]
fn the_hash_sees_one_bit() {
    let (w, _, _) = run(SolverKind::Jolt, 1);
    let mut v = w.clone();
    let x = &mut v.bodies[17].velocity.y;
    *x = f64::from_bits(x.to_bits() ^ 1);
    assert_ne!(state_hash(&w), state_hash(&v));
}
