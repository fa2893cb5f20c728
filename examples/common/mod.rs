//! What the repose diagnostics share: `SCENE SOLVER MU [SEED] [--pack-friction MU|run]
//! [--no-sleep]` on the command line (parsed by clap), a repose experiment built from
//! them, and a `main` that prints errors instead of panicking.
//!
//! The experiment packs as `impulse-lab repose` does: at the scene's `pack_friction`
//! (the repose scenes: μ = 0.3, paper 000 §7.5, Fig. 11), then takes the run's MU when
//! the wall goes; `--pack-friction MU` packs at MU instead, `--pack-friction run` at
//! the run's own MU throughout. So a diagnostic's pile is the pile of the `repose` row
//! with the same scene, solver, μ, seed and packing μ, step for step.

use clap::Parser;
use impulse_lab::dynamics::solver::SolverKind;
use impulse_lab::repose::{ReposeConfig, ReposeExperiment};
use impulse_lab::scene::{load_scene, resolve_scene};
use std::process::ExitCode;

/// The diagnostics' command line.
#[derive(Parser)]
struct Args {
    /// A scene file or a bundled scene's name.
    scene: String,
    /// The solver (sqm, etm, ...).
    solver: SolverKind,
    /// The run's friction coefficient μ ≥ 0.
    mu: f64,
    /// The seed (default: the scene's).
    seed: Option<u64>,
    /// What the diagnostic takes after SEED (repose_slice: OUT.png).
    rest: Vec<String>,
    /// The packing μ ≥ 0, or `run` to pack at MU (default: the scene's `pack_friction`).
    #[arg(long, allow_hyphen_values = true)]
    pack_friction: Option<String>,
    /// Disable island sleeping (as `impulse-lab run --no-sleep`): every body is stepped
    /// until the run ends, so a pile stops only when the solver stops it.
    #[arg(long)]
    no_sleep: bool,
}

/// The repose experiment of the command line's scene under its solver at friction MU,
/// with the scene's seed or SEED, packed as the module doc says; with the positional
/// arguments after SEED.
fn experiment(args: Args) -> Result<(ReposeExperiment, Vec<String>), String> {
    let mut scene = load_scene(&resolve_scene(&args.scene)).map_err(|e| e.to_string())?;
    scene.solver = args.solver;
    scene.params.friction = args.mu;
    scene
        .params
        .validate()
        .map_err(|(field, msg)| format!("MU ({field}): {msg}"))?;
    scene.seed = args.seed.unwrap_or(scene.seed);
    let mut config = ReposeConfig::for_scene(&scene);
    if let Some(pack) = &args.pack_friction {
        config.pack_friction = ReposeConfig::parse_pack_friction(pack)?;
    }
    let mut world = scene.build_world().map_err(|e| e.to_string())?;
    if args.no_sleep {
        world.sleep.enabled = false;
    }
    let experiment = ReposeExperiment::new(world, config).map_err(|e| e.to_string())?;
    println!(
        "{} under {}, seed {}: packs at μ = {}, slumps at μ = {}{}",
        scene.name,
        scene.solver,
        scene.seed,
        experiment.tracker.pack_friction(),
        experiment.tracker.friction(),
        if args.no_sleep { ", no sleeping" } else { "" }
    );
    Ok((experiment, args.rest))
}

/// Run `run` on the command-line arguments (the experiment and the positional arguments
/// after `SEED`); an error goes to stderr with exit code 2.
pub fn main(name: &str, run: fn(ReposeExperiment, &[String]) -> Result<(), String>) -> ExitCode {
    match experiment(Args::parse()).and_then(|(e, rest)| run(e, &rest)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("{name}: {msg}");
            ExitCode::from(2)
        }
    }
}
