//! What the repose diagnostics share: `SCENE SOLVER MU [SEED] [--pack-friction MU|run]`
//! on the command line, a repose experiment built from them, and a `main` that prints
//! errors instead of panicking.
//!
//! The experiment packs as `impulse-lab repose` does: at the scene's `pack_friction`
//! (the repose scenes: μ = 0.3, paper 000 §7.5, Fig. 11), then takes the run's MU when
//! the wall goes; `--pack-friction MU` packs at MU instead, `--pack-friction run` at
//! the run's own MU throughout. So a diagnostic's pile is the pile of the `repose` row
//! with the same scene, solver, μ, seed and packing μ, step for step.

use impulse_lab::dynamics::solver::SolverKind;
use impulse_lab::repose::{ReposeConfig, ReposeExperiment};
use impulse_lab::scene::{load_scene, resolve_scene};
use std::process::ExitCode;

/// Split off `--pack-friction MU|run` (or `--pack-friction=…`) from the arguments:
/// (the positional arguments, `None` for the scene's packing μ, `Some(None)` for
/// `run`, `Some(Some(μ))` for a number; [`ReposeConfig::validate`] checks its range).
fn pack_friction_option(args: &[String]) -> Result<(Vec<String>, Option<Option<f64>>), String> {
    let mut positional = Vec::new();
    let mut pack = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let value = if a == "--pack-friction" {
            it.next()
                .ok_or("--pack-friction needs a value: a μ ≥ 0 or `run`")?
                .clone()
        } else if let Some(v) = a.strip_prefix("--pack-friction=") {
            v.to_string()
        } else {
            positional.push(a.clone());
            continue;
        };
        pack = Some(ReposeConfig::parse_pack_friction(&value)?);
    }
    Ok((positional, pack))
}

/// The repose experiment of `SCENE` (a file or a bundled scene's name) under `SOLVER`
/// at friction `MU` (≥ 0), with the scene's seed or `SEED`, packed as the module doc
/// says; with the positional arguments after `SEED` (e.g. an output file).
pub fn experiment(name: &str, args: &[String]) -> Result<(ReposeExperiment, Vec<String>), String> {
    let (args, pack) = pack_friction_option(args)?;
    let [scene, solver, mu, rest @ ..] = args.as_slice() else {
        return Err(format!(
            "usage: {name} SCENE SOLVER MU [SEED] [--pack-friction MU|run]"
        ));
    };
    let mut scene = load_scene(&resolve_scene(scene)).map_err(|e| e.to_string())?;
    scene.solver = solver.parse::<SolverKind>().map_err(|e| e.to_string())?;
    scene.params.friction = mu
        .parse::<f64>()
        .ok()
        .filter(|m| m.is_finite() && *m >= 0.0)
        .ok_or(format!("MU must be a number ≥ 0, got {mu}"))?;
    if let Some(seed) = rest.first() {
        scene.seed = seed
            .parse()
            .map_err(|_| format!("SEED must be an integer, got {seed}"))?;
    }
    let mut config = ReposeConfig::for_scene(&scene);
    if let Some(pack) = pack {
        config.pack_friction = pack;
    }
    let world = scene.build_world().map_err(|e| e.to_string())?;
    let experiment = ReposeExperiment::new(world, config).map_err(|e| e.to_string())?;
    println!(
        "{} under {}, seed {}: packs at μ = {}, slumps at μ = {}",
        scene.name,
        scene.solver,
        scene.seed,
        experiment.tracker.pack_friction(),
        experiment.tracker.friction()
    );
    Ok((experiment, rest.iter().skip(1).cloned().collect()))
}

/// Run `run` on the command-line arguments (the experiment and the positional arguments
/// after `SEED`); an error goes to stderr with exit code 2.
pub fn main(name: &str, run: fn(ReposeExperiment, &[String]) -> Result<(), String>) -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match experiment(name, &args).and_then(|(e, rest)| run(e, &rest)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("{name}: {msg}");
            ExitCode::from(2)
        }
    }
}
