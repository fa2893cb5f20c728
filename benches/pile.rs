//! Benchmark program: time per step of piles settling in a box, split by phase.
//!
//! `cargo bench --bench pile [-- SCENE[,SCENE...] [STEPS] [SOLVER...]]` (default: the
//! 1,080-sphere pile, 600 steps, every implemented solver). For each scene it prints a
//! table and writes `target/bench/pile.csv` with one row per scene and solver and one
//! column per phase (µs per step), the phase names being the world step's
//! (`src/world.rs`: broad phase, narrow phase, solve = velocity kick + collision solver,
//! contact pass = contact pass + position projection, integrate = drift + sleeping,
//! measure), plus the solver's iterations per step and the steps that hit its iteration
//! cap. Speed is reported as ratios against baselines measured in the same run:
//! each solver's steps/s against jolt's on the same scene (jolt is always run first), and
//! the broad phase against the brute-force all-pairs test it replaces.
//!
//! The issue-3 figures: `cargo bench --bench pile -- packing_spheres,etm_spheres_1080,pile_spheres_1080 600 etm sqm smm`.

use impulse_lab::World;
use impulse_lab::dynamics::solver::SolverKind;
use impulse_lab::scene::{Scene, load_scene};
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let scene_names: Vec<String> = args
        .first()
        .map_or("pile_spheres_1080", String::as_str)
        .split(',')
        .map(str::to_string)
        .collect();
    let steps: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(600);
    let mut solvers: Vec<SolverKind> = if args.len() > 2 {
        args[2..]
            .iter()
            .map(|s| s.parse().expect("solver name"))
            .collect()
    } else {
        SolverKind::ALL.into_iter().collect()
    };
    // jolt first: the in-run baseline the others are reported against.
    solvers.retain(|&k| k != SolverKind::Jolt);
    solvers.insert(0, SolverKind::Jolt);

    let out_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench");
    std::fs::create_dir_all(&out_dir).unwrap();
    let mut csv = std::fs::File::create(out_dir.join("pile.csv")).unwrap();
    writeln!(csv, "scene,solver,bodies,steps,mean_contacts,broad_phase_us,narrow_phase_us,solve_us,contact_pass_us,integrate_us,measure_us,total_us,steps_per_s,ratio_to_jolt,iterations_per_step,capped_steps").unwrap();
    let mut scene = None;
    for name in &scene_names {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenes")
            .join(format!("{name}.ron"));
        let s = load_scene(&path).unwrap_or_else(|e| panic!("{e}"));
        bench_scene(name, &s, steps, &solvers, &mut csv);
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
        "{:<6} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>7} {:>9} {:>7}",
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
        "capped"
    );
    let mut jolt_rate = f64::NAN;
    for &kind in solvers {
        let mut world: World = scene.build_world().unwrap_or_else(|e| panic!("{e}"));
        world.set_solver(kind);
        world.start_ledger();
        let mut sum = [Duration::ZERO; 6];
        let mut contacts = 0usize;
        // Solver iterations: sweeps (jolt, CCP, MDP), pops (SQM), rounds (ETM, SMM).
        let (mut iterations, mut capped) = (0u64, 0u64);
        let t0 = Instant::now();
        for _ in 0..steps {
            world.step().unwrap();
            let t = world.last_times;
            for (s, d) in sum.iter_mut().zip([
                t.broad_phase,
                t.narrow_phase,
                t.solve,
                t.contact_pass,
                t.integrate,
                t.measure,
            ]) {
                *s += d;
            }
            contacts += world.contacts.len();
            iterations += u64::from(world.last_report.iterations);
            capped += u64::from(world.last_report.hit_iteration_cap);
        }
        let wall = t0.elapsed();
        let iter_per_step = iterations as f64 / steps as f64;
        let us = |d: Duration| d.as_secs_f64() * 1e6 / steps as f64;
        let total = us(wall);
        let rate = 1e6 / total;
        if kind == SolverKind::Jolt {
            jolt_rate = rate;
        }
        println!(
            "{:<6} {:>8.0} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>9.1} {:>7.2} {:>9.1} {:>7}",
            kind.name(),
            contacts as f64 / steps as f64,
            us(sum[0]),
            us(sum[1]),
            us(sum[2]),
            us(sum[3]),
            us(sum[4]),
            us(sum[5]),
            total,
            rate,
            rate / jolt_rate,
            iter_per_step,
            capped
        );
        writeln!(
            csv,
            "{scene_name},{},{},{steps},{:.1},{:.2},{:.2},{:.2},{:.2},{:.2},{:.2},{:.2},{:.2},{:.3},{:.2},{capped}",
            kind.name(),
            world.bodies.len(),
            contacts as f64 / steps as f64,
            us(sum[0]),
            us(sum[1]),
            us(sum[2]),
            us(sum[3]),
            us(sum[4]),
            us(sum[5]),
            total,
            rate,
            rate / jolt_rate,
            iter_per_step
        )
        .unwrap();
    }
}
