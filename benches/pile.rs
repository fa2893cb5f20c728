//! Benchmark program: time per step of piles settling in a box, split by phase.
//!
//! `cargo bench --bench pile [-- SCENE[,SCENE...] [STEPS] [SOLVER...] [--threads N]]`
//! (default: the 1,080-sphere pile, 600 steps, every implemented solver, one thread).
//! For each scene it prints a table and writes `target/bench/pile.csv` with one row per
//! scene and solver and one column per phase (µs per step), the phase names being the
//! world step's (`src/world.rs`: broad phase, narrow phase, solve = velocity kick +
//! collision solver, contact pass = contact pass + position projection, integrate =
//! drift + sleeping, measure), plus the solver's iterations per step and the steps that
//! hit its iteration cap. Speed is reported as ratios against baselines measured in the
//! same run: each solver's steps/s against jolt's on the same scene (jolt is always run
//! first), and the broad phase against the brute-force all-pairs test it replaces.
//!
//! The issue-3 figures: `cargo bench --bench pile -- packing_spheres,etm_spheres_1080,pile_spheres_1080 600 etm sqm smm`.

mod common;

use common::{BenchArgs, PHASE_COLUMNS, PhaseSums};
use impulse_lab::dynamics::solver::SolverKind;
use impulse_lab::scene::{Scene, load_scene};
use std::io::Write;
use std::path::Path;
use std::time::Instant;

fn main() {
    let args = BenchArgs::from_env(&["threads"]).unwrap_or_else(|e| panic!("{e}"));
    let scene_names = args.scenes(&["pile_spheres_1080"]);
    let steps = args.steps(600).unwrap_or_else(|e| panic!("{e}"));
    let mut solvers = args.solvers().unwrap_or_else(|e| panic!("{e}"));
    let threads: usize = args.option("threads", 1).unwrap_or_else(|e| panic!("{e}"));
    // jolt first: the in-run baseline the others are reported against.
    solvers.retain(|&k| k != SolverKind::Jolt);
    solvers.insert(0, SolverKind::Jolt);

    let mut csv = std::fs::File::create(common::out_dir().join("pile.csv")).unwrap();
    writeln!(csv, "scene,solver,bodies,steps,mean_contacts,{PHASE_COLUMNS},total_us,steps_per_s,ratio_to_jolt,iterations_per_step,capped_steps,contact_pass_sweeps_per_step").unwrap();
    common::thread_pool(threads).install(|| run(&scene_names, steps, &solvers, &mut csv));
}

fn run(scene_names: &[String], steps: u64, solvers: &[SolverKind], csv: &mut std::fs::File) {
    let mut scene = None;
    for name in scene_names {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenes")
            .join(format!("{name}.ron"));
        let s = load_scene(&path).unwrap_or_else(|e| panic!("{e}"));
        bench_scene(name, &s, steps, solvers, csv);
        scene = Some(s);
    }
    let scene = scene.expect("a scene");

    // Baseline in the same run: brute-force all-pairs bounding-ball test vs sweep and prune.
    let world = scene.build_world().unwrap();
    let radii: Vec<f64> = world
        .bodies
        .iter()
        .map(|b| b.shape.bounding_radius())
        .collect();
    let reps = 50;
    let t0 = Instant::now();
    let mut n_brute = 0usize;
    for _ in 0..reps {
        n_brute = 0;
        for i in 0..world.bodies.len() {
            for j in i + 1..world.bodies.len() {
                let r = radii[i] + radii[j] + world.contact_margin;
                let d = std::hint::black_box(world.bodies[i].position - world.bodies[j].position);
                if d.norm_squared() <= r * r {
                    n_brute += 1;
                }
            }
        }
    }
    let brute = t0.elapsed().as_secs_f64() / reps as f64;
    let mut w2 = scene.build_world().unwrap();
    let t0 = Instant::now();
    for _ in 0..reps {
        w2.detect();
    }
    let detect = t0.elapsed().as_secs_f64() / reps as f64;
    println!(
        "baseline in this run: all-pairs bounding-ball test {:.1} µs ({n_brute} pairs) vs our whole detect (broad + narrow phase, {} contacts) {:.1} µs: ratio {:.2}",
        brute * 1e6,
        w2.contacts.len(),
        detect * 1e6,
        brute / detect
    );
}

/// Run every solver on `scene` for `steps` steps; print a table and append CSV rows.
fn bench_scene(
    scene_name: &str,
    scene: &Scene,
    steps: u64,
    solvers: &[SolverKind],
    csv: &mut std::fs::File,
) {
    println!("{scene_name}: {steps} steps");
    println!(
        "{:<6} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>7} {:>9} {:>7} {:>9}",
        "solver",
        "contacts",
        "broad µs",
        "narrow µs",
        "solve µs",
        "contact µs",
        "integr µs",
        "measure µs",
        "total µs",
        "steps/s",
        "× jolt",
        "iter/step",
        "capped",
        "pass/step"
    );
    let mut jolt_rate = f64::NAN;
    for &kind in solvers {
        let mut world = scene.build_world().unwrap_or_else(|e| panic!("{e}"));
        world.set_solver(kind);
        world.start_ledger();
        let mut sums = PhaseSums::default();
        for _ in 0..steps {
            let t0 = Instant::now();
            world.step().unwrap();
            sums.add(&world, t0.elapsed());
        }
        let rate = sums.rate();
        if kind == SolverKind::Jolt {
            jolt_rate = rate;
        }
        let p = sums.phase_us();
        println!(
            "{:<6} {:>8.0} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>9.1} {:>7.2} {:>9.1} {:>7} {:>9.1}",
            kind.name(),
            sums.mean_contacts(),
            p[0],
            p[1],
            p[2],
            p[3],
            p[4],
            p[5],
            sums.step_us(),
            rate,
            rate / jolt_rate,
            sums.iterations_per_step(),
            sums.capped,
            sums.pass_sweeps_per_step()
        );
        if let Some(r) = sums.recycled_percent(0) {
            println!(
                "{}: flat-faced pairs recycled {r:.1} % of the run",
                kind.name()
            );
        }
        writeln!(
            csv,
            "{scene_name},{},{},{steps},{:.1},{},{:.2},{:.2},{:.3},{:.2},{},{:.2}",
            kind.name(),
            world.bodies.len(),
            sums.mean_contacts(),
            sums.phase_csv(),
            sums.step_us(),
            rate,
            rate / jolt_rate,
            sums.iterations_per_step(),
            sums.capped,
            sums.pass_sweeps_per_step()
        )
        .unwrap();
    }
}
