//! A cloned world is a whole state: stepping the clone gives, bit for bit, what stepping
//! the original gives, under every method (the app's timeline and saved states rely on
//! it). The clone keeps only what carries over between steps (the warm-start caches,
//! the last projection's displacements, the solvers' own state) and starts its scratch
//! space empty, so this also checks that no step reads scratch left by the last one.

use impulse_lab::World;
use impulse_lab::dynamics::solver::SolverKind;
use impulse_lab::scene::{load_scene, resolve_scene};

mod common;

fn world(scene: &str, kind: SolverKind) -> World {
    let s = load_scene(&resolve_scene(scene)).unwrap();
    let mut w = s.build_world().unwrap();
    w.set_solver(kind);
    w.start_ledger();
    w
}

#[test]
fn a_cloned_world_continues_bit_for_bit_under_every_method() {
    // 700 steps of the mixed pour: the bodies have landed (resting contacts, warm
    // starts, projections); 60 more on each copy.
    for kind in SolverKind::ALL {
        let mut original = world("pour_mixed", kind);
        for _ in 0..700 {
            original.step().unwrap();
        }
        assert!(
            original.contacts.len() > 100,
            "{kind}: the pile must be in contact"
        );
        let mut copy = original.clone();
        for step in 0..60 {
            let a = original.step().unwrap();
            let b = copy.step().unwrap();
            assert_eq!(
                (a.total.to_bits(), a.residual.to_bits(), a.contacts),
                (b.total.to_bits(), b.residual.to_bits(), b.contacts),
                "{kind}: step {step} after the clone"
            );
        }
        common::assert_same_state(&original.bodies, &copy.bodies, &format!("{kind}"));
    }
}
