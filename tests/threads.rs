//! Parallel work gives the same numbers whatever the thread count: the narrow phase
//! runs in chunks on rayon's pool and appends their contacts in chunk order, and the
//! contact pass sweeps two halves of disjoint bodies side by side (split by position,
//! not by thread count), so a run on one thread, on two and on four is bit-identical
//! (state, contacts, ledger).

use impulse_lab::World;
use impulse_lab::collision::NARROW_CHUNK;
use impulse_lab::dynamics::contact_pass::SPLIT_ROWS;
use impulse_lab::dynamics::solver::SolverKind;
use impulse_lab::scene::{load_scene, resolve_scene};

mod common;

fn run(scene: &str, kind: SolverKind, steps: usize, threads: usize) -> World {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let s = load_scene(&resolve_scene(scene)).unwrap();
        let mut w = s.build_world().unwrap();
        w.set_solver(kind);
        w.start_ledger();
        for step in 0..steps {
            w.step()
                .unwrap_or_else(|e| panic!("{scene} step {step}: {e}"));
        }
        w
    })
}

/// A run on each of `counts` threads ends bit-identical to one on one thread (state,
/// contacts, ledger). `halves`: the run ends with enough contacts that the contact pass
/// splits into halves.
fn same_on_threads(scene: &str, kind: SolverKind, steps: usize, halves: bool, counts: &[usize]) {
    same_on_threads_pinned(scene, kind, steps, halves, counts, None);
}

/// [`same_on_threads`], and the one-thread run's final state has the hash `pinned`
/// (`common::state_hash`, as `tests/determinism.rs` pins its short runs): a change
/// claimed to keep trajectories bit-identical on a pile large enough to split the
/// contact pass into halves is checked here.
fn same_on_threads_pinned(
    scene: &str,
    kind: SolverKind,
    steps: usize,
    halves: bool,
    counts: &[usize],
    pinned: Option<u64>,
) {
    let one = run(scene, kind, steps, 1);
    if let Some(pinned) = pinned {
        let got = common::state_hash(&one);
        assert_eq!(
            got, pinned,
            "{scene} {kind}: final-state hash {got:#018x}, pinned {pinned:#018x}. If the \
             change is meant to move this method's trajectory, pin the new hash in the same \
             commit and say why the new result is right."
        );
    }
    for &threads in counts {
        same_as(
            &one,
            &run(scene, kind, steps, threads),
            scene,
            kind,
            halves,
            threads,
        );
    }
}

fn same_as(one: &World, two: &World, scene: &str, kind: SolverKind, halves: bool, threads: usize) {
    let what = format!("{scene} {kind}, {threads} threads");
    // Several chunks of work, or the test shows nothing.
    assert!(
        one.contacts.len() > 2 * NARROW_CHUNK && one.bodies.len() > 2 * NARROW_CHUNK,
        "{what}: {} contacts, {} bodies",
        one.contacts.len(),
        one.bodies.len()
    );
    common::assert_same_state(&one.bodies, &two.bodies, &what);
    assert!(
        !halves || one.contacts.len() >= SPLIT_ROWS,
        "{what}: {} contacts, the contact pass did not split",
        one.contacts.len()
    );
    assert_eq!(one.contacts, two.contacts, "{what}: contacts");
    let ledger = |w: &World| {
        [
            w.ledger.dissipated_restitution,
            w.ledger.dissipated_friction,
            w.ledger.integration,
        ]
        .map(f64::to_bits)
    };
    assert_eq!(ledger(one), ledger(two), "{what}: ledger");
}

#[test]
fn a_sphere_pile_is_bit_identical_on_one_and_two_threads() {
    same_on_threads("pile_spheres_1080", SolverKind::Sqm, 120, false, &[2]);
}

/// Every method, on one, two and four threads: the same numbers, and on one thread the
/// pinned final state. 1,000 steps of the
/// mixed pour, so that the narrow phase runs in several chunks and the contact pass
/// splits into halves (818-928 contacts at the end). CCP's pile is still bouncing then
/// (Newmark's elastic contact, `docs/methods/ccp.md`: 132 contacts), so under CCP the
/// pass does not split and the narrow phase's chunks are what run in parallel.
#[test]
fn every_method_is_bit_identical_on_one_two_and_four_threads() {
    for kind in SolverKind::ALL {
        let pinned = match kind {
            SolverKind::Jolt => 0xc6de_bd10_bf98_8882,
            SolverKind::Sqm => 0xe3bd_f547_3022_d708,
            SolverKind::Etm => 0xa069_f1c7_7064_1b5a,
            SolverKind::Smm => 0xc427_5c2b_f48b_58f2,
            SolverKind::Ccp => 0x7d38_6eb7_475e_8b18,
            SolverKind::Mdp => 0xd44b_3d4e_6c5d_9f25,
        };
        same_on_threads_pinned(
            "pour_mixed",
            kind,
            1000,
            kind != SolverKind::Ccp,
            &[2, 4],
            Some(pinned),
        );
    }
}
