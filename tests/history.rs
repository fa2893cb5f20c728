//! The timeline's history (`impulse_lab::history`, stored as the app's
//! `timeline::Frame`): keyframes plus re-simulation give back, bit for bit, the state a
//! straight run had at any step, across an edit, in branches; the default cap holds at
//! least 120 s of the heaviest scenes under jolt and ETM. No window: the history is
//! driven as the physics thread drives it (`before_step`, `Simulation::step`,
//! `after_step`, `edit`).
#![cfg(feature = "app")]

use impulse_lab::app::simulation::Simulation;
use impulse_lab::app::timeline::{DEFAULT_CAP, Frame, History};
use impulse_lab::dynamics::solver::SolverKind;
use impulse_lab::history::{CACHE_SHARE, Capture, TARGET_SPAN};
use impulse_lab::scene;
use impulse_lab::world::World;
use std::time::{Duration, Instant};

fn sim(name: &str, solver: Option<SolverKind>) -> Simulation {
    let path = scene::resolve_scene(name);
    let scene = scene::load_scene(&path).unwrap();
    Simulation::from_scene(scene, Some(path), solver).unwrap()
}

/// Everything a step reads, exactly: the bodies and forces (their debug text prints
/// every f64 as its shortest round-trip form, so equal text is equal bits), the
/// carried state (sleep, warm-start impulses, kept manifolds), the ledger, time, step
/// count and settings.
fn fingerprint(w: &World) -> String {
    format!(
        "{:?}|{:?}|{:?}|{:?}|{}|{}|{:?}|{:?}|{:?}|{:?}",
        w.bodies,
        w.containers,
        w.carried_state(),
        w.ledger,
        w.time.to_bits(),
        w.step_index,
        w.params,
        w.solver_kind(),
        w.sleep,
        w.dt.to_bits(),
    )
}

/// Step `sim` `n` times, recorded in `h` as the physics thread records them.
fn run(sim: &mut Simulation, h: &mut History, n: u64) {
    for _ in 0..n {
        h.before_step(sim);
        let sample = sim.step().unwrap();
        h.after_step(sim, sample).unwrap();
    }
}

/// Step `sim` `n` times without a history, the fingerprint of every state after the
/// first (index i: step `from + i + 1`).
fn straight(sim: &mut Simulation, n: u64) -> Vec<String> {
    (0..n)
        .map(|_| {
            sim.step().unwrap();
            fingerprint(&sim.world)
        })
        .collect()
}

/// A small deterministic generator (the test picks the same steps every run).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// Keyframe sizes and step times measured on the two heaviest scenes under jolt and
/// ETM after their contacts exist; the span the default cap gives them, counted from
/// the measured sizes (keyframes of that size that fit the cap less the scrub cache's
/// share and the per-step samples, times the interval, times dt), is at least 120 s. The
/// worst scrub latency (interval − 1 steps at the measured step time) is printed.
#[test]
fn the_default_cap_holds_two_minutes_of_the_heaviest_scenes() {
    for name in ["pour_mixed", "pile_spheres_1080"] {
        for solver in [SolverKind::Jolt, SolverKind::Etm] {
            let mut s = sim(name, Some(solver));
            // Until the bodies touch: the pour's first bodies land after ~0.3 s, the
            // pile starts packed.
            let warm = if name == "pour_mixed" { 400 } else { 60 };
            for _ in 0..warm {
                s.step().unwrap();
            }
            let t = Instant::now();
            let timed = 20;
            for _ in 0..timed {
                s.step().unwrap();
            }
            let step_time = t.elapsed() / timed;
            assert!(!s.world.contacts.is_empty(), "{name}: contacts exist");
            let (_, bytes) = Capture::<Frame>::capture(&s);
            let bytes = bytes + size_of::<Frame>();
            let h = History::new(&s, DEFAULT_CAP);
            let interval = h.interval_for(bytes);
            let dt = s.world.dt;
            let samples =
                (TARGET_SPAN / dt).ceil() as usize * size_of::<impulse_lab::energy::EnergySample>();
            let room = DEFAULT_CAP - DEFAULT_CAP / CACHE_SHARE - samples;
            let keyframes = room / bytes;
            let span = keyframes as f64 * interval as f64 * dt;
            let latency = step_time * (interval as u32 - 1);
            println!(
                "{name} {solver:?}: keyframe {:.2} MB, interval {interval} steps, {keyframes} \
                 keyframes, span {span:.0} s, step {:.2} ms, worst scrub ≈ {:.0} ms",
                bytes as f64 / 1048576.0,
                step_time.as_secs_f64() * 1e3,
                latency.as_secs_f64() * 1e3,
            );
            assert!(bytes >= s.world.bodies.len() * size_of::<impulse_lab::RigidBody>());
            assert!(span >= 120.0, "{name} {solver:?}: {span} s");
        }
    }
}

/// Scrub to 10 random steps of a run of 1,500 steps of pour_mixed (jolt, the default
/// cap): each state equals, bit for bit, the straight run's at that step; then step
/// one back at a time from the last (the scrub cache). The worst seek time is printed.
#[test]
fn scrubbing_to_random_steps_gives_the_straight_run_bit_for_bit() {
    const STEPS: u64 = 1500;
    let mut s = sim("pour_mixed", None);
    let mut reference = s.clone();
    let expected = straight(&mut reference, STEPS);
    let mut h = History::new(&s, DEFAULT_CAP);
    run(&mut s, &mut h, STEPS);
    assert_eq!(h.range(), (0, STEPS));
    assert!(h.interval() > 1, "keyframes are sparser than steps");
    assert!(
        h.keyframes() < STEPS as usize / 2,
        "{} keyframes",
        h.keyframes()
    );
    let mut rng = Lcg(45);
    let mut worst = Duration::ZERO;
    let mut targets: Vec<u64> = (0..10).map(|_| 1 + rng.below(STEPS)).collect();
    // One step back at a time from the last target.
    let last = targets[9];
    targets.extend((1..5).map(|k| last - k));
    for &step in &targets {
        let t = Instant::now();
        let frame = h.seek(step).unwrap();
        worst = worst.max(t.elapsed());
        assert_eq!(frame.world.step_index, step);
        assert_eq!(
            fingerprint(&frame.world),
            expected[step as usize - 1],
            "step {step}"
        );
    }
    println!(
        "pour_mixed jolt: interval {} steps, worst seek {:.1} ms",
        h.interval(),
        worst.as_secs_f64() * 1e3
    );
}

/// A parameter edit at step 300 (friction 0.3 → 0.8) is stored as a keyframe: seeking
/// to steps before, at and after it gives the straight run's states (the run with the
/// edit made at 300), never a re-simulation across it.
#[test]
fn a_scrub_across_a_parameter_edit_is_exact() {
    let mut s = sim("pour_mixed", None);
    let mut reference = s.clone();
    let mut expected = straight(&mut reference, 300);
    reference.world.params.friction = 0.8;
    let edited = fingerprint(&reference.world);
    expected.extend(straight(&mut reference, 300));

    let mut h = History::new(&s, DEFAULT_CAP);
    run(&mut s, &mut h, 300);
    s.world.params.friction = 0.8;
    h.edit(&s).unwrap();
    run(&mut s, &mut h, 300);
    assert!(h.interval() > 2, "the edit lies between regular keyframes");
    for step in [150, 299, 301, 302, 305, 450, 600] {
        let frame = h.seek(step).unwrap();
        assert_eq!(
            fingerprint(&frame.world),
            expected[step as usize - 1],
            "step {step}"
        );
    }
    // At 300 the history shows the edited state.
    assert_eq!(fingerprint(&h.seek(300).unwrap().world), edited);
}

/// Run 600 steps; go back to 300, change the friction and play 200 steps (a new
/// branch); return to the old branch and play 100 more: it ends where a straight run of
/// 700 steps ends. Return to the new branch and play 100 more: it ends where a straight
/// run with the edit at 300 ends at 600. The energy traces follow the branch.
#[test]
fn branches_continue_as_straight_runs() {
    let mut s = sim("pour_mixed", None);
    let mut plain = s.clone();
    let plain_run = straight(&mut plain, 700);
    let mut edited = s.clone();
    let mut edited_run = straight(&mut edited, 300);
    edited.world.params.friction = 0.8;
    edited_run.extend(straight(&mut edited, 300));

    let mut h = History::new(&s, DEFAULT_CAP);
    run(&mut s, &mut h, 600);
    let old = h.current();
    let restore = |frame: Frame, s: &mut Simulation| {
        impulse_lab::app::timeline::restore(frame, s);
    };
    restore(h.seek(300).unwrap(), &mut s);
    s.world.params.friction = 0.8;
    h.edit(&s).unwrap();
    run(&mut s, &mut h, 200);
    assert_eq!(fingerprint(&s.world), edited_run[499]);
    let branches = h.branches();
    assert_eq!(branches.len(), 2, "{branches:?}");
    let new = h.current();
    let old_info = branches.iter().find(|b| !b.current).unwrap();
    assert_eq!(old_info.range, (0, 600));
    assert_eq!(h.range(), (0, 500));
    assert_eq!(h.trace().len(), 501);

    // Back to the old branch: its newest state, then on to 700.
    restore(h.switch(old_info.id).unwrap(), &mut s);
    assert_eq!(fingerprint(&s.world), plain_run[599]);
    assert_eq!(h.trace().len(), 601);
    run(&mut s, &mut h, 100);
    assert_eq!(fingerprint(&s.world), plain_run[699]);
    // Both branches hold their steps: a step of each, re-simulated.
    assert_eq!(fingerprint(&h.seek(650).unwrap().world), plain_run[649]);
    let _ = old;

    restore(h.switch(new).unwrap(), &mut s);
    assert_eq!(fingerprint(&s.world), edited_run[499]);
    assert_eq!(fingerprint(&h.seek(420).unwrap().world), edited_run[419]);
    restore(h.seek(500).unwrap(), &mut s);
    run(&mut s, &mut h, 100);
    assert_eq!(fingerprint(&s.world), edited_run[599]);
    // The shared steps before the fork, seen from this branch.
    assert_eq!(fingerprint(&h.seek(120).unwrap().world), plain_run[119]);
}

/// Lowering the cap drops the oldest keyframes: the held bytes fit the new cap, the
/// range starts later, and the steps still held are exact.
#[test]
fn the_history_keeps_to_its_cap() {
    let mut s = sim("pour_mixed", None);
    let mut reference = s.clone();
    let expected = straight(&mut reference, 800);
    let mut h = History::new(&s, DEFAULT_CAP);
    run(&mut s, &mut h, 800);
    let before = h.keyframes();
    let per_keyframe = (h.bytes() - 801 * size_of::<impulse_lab::energy::EnergySample>()) / before;
    // Room for about a third of the keyframes.
    let cap = (before / 3 * per_keyframe + 801 * size_of::<impulse_lab::energy::EnergySample>())
        * CACHE_SHARE
        / (CACHE_SHARE - 1);
    h.set_cap(cap);
    assert!(
        h.bytes() <= cap - cap / CACHE_SHARE,
        "{} bytes over the cap {cap}",
        h.bytes()
    );
    let (first, last) = h.range();
    assert_eq!(last, 800);
    assert!(first > 300, "the oldest steps went: held from {first}");
    println!(
        "{before} keyframes at the default cap; cap {:.1} MB: {} keyframes, steps {first}..={last}",
        cap as f64 / 1048576.0,
        h.keyframes()
    );
    for step in [first, first + 1, (first + last) / 2, last] {
        assert_eq!(
            fingerprint(&h.seek(step).unwrap().world),
            expected[step as usize - 1],
            "step {step}"
        );
    }
    // Steps before the range are clamped to its first.
    assert_eq!(h.seek(0).unwrap().world.step_index, first);
}
