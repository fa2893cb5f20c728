//! What the repose diagnostics share: `SCENE SOLVER MU [SEED]` on the command line, a
//! repose experiment built from them, and a `main` that prints errors instead of
//! panicking.

use impulse_lab::dynamics::solver::SolverKind;
use impulse_lab::repose::{ReposeConfig, ReposeExperiment};
use impulse_lab::scene::{load_scene, resolve_scene};
use std::process::ExitCode;

/// The repose experiment of `SCENE` (a file or a bundled scene's name) under `SOLVER`
/// at friction `MU` (≥ 0), with the scene's seed or `SEED`.
pub fn experiment(name: &str, args: &[String]) -> Result<ReposeExperiment, String> {
    let [scene, solver, mu, rest @ ..] = args else {
        return Err(format!("usage: {name} SCENE SOLVER MU [SEED]"));
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
    let world = scene.build_world().map_err(|e| e.to_string())?;
    ReposeExperiment::new(world, ReposeConfig::default()).map_err(|e| e.to_string())
}

/// Run `run` on the command-line arguments; an error goes to stderr with exit code 2.
pub fn main(name: &str, run: fn(ReposeExperiment) -> Result<(), String>) -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match experiment(name, &args).and_then(run) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("{name}: {msg}");
            ExitCode::from(2)
        }
    }
}
