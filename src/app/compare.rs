//! Compare mode in the app: the open scene under 2-3 solvers from the same initial
//! state, in synchronised time ([`crate::compare::Comparison`]).
//!
//! How it is kept in step: starting compare mode rebuilds the app's world
//! ([`Simulation`]) from the scene with the first solver and builds a [`Comparison`] of
//! all the solvers from the same scene. Run 0 of the comparison is the twin of the app's
//! world: built and stepped the same way, so bit-identical to it as long as the world is
//! not disturbed. After the app's world has stepped (play, step, step N: the usual run
//! controls), [`step_comparison`] steps every run until the comparison has taken as many
//! steps as the app's world; so the runs share time and h, and each run's world is
//! stepped exactly as it would be alone (`tests/app_teach.rs`). A reset, a new scene, a
//! spawned body or a removed wall (anything that bumps [`Simulation::generation`])
//! rebuilds the comparison from the scene and catches it up, at most
//! [`CATCH_UP_PER_FRAME`] steps per frame; opening another scene file leaves compare
//! mode. Disturbances of the app's world (a dragged
//! body, a spawned one, parameters changed in the solver panel) are not copied into the
//! runs: the comparison always shows the scene as written.
//!
//! Display: overlay only. The app's world (= run 0) is drawn solid by the render plugin;
//! runs 1 and 2 are drawn as translucent ghosts tinted [`RUN_COLORS`]. The teaching
//! panel shows the energy of every run in one plot (same colours) and the divergence
//! from run 0 (largest position difference and its body, orientation difference,
//! total-energy difference). Side-by-side viewports are not implemented.

use super::render::shape_mesh;
use super::simulation::{
    EnergyHistory, SimControl, Simulation, SimulationSystems, advance_simulation,
    reload_changed_scene,
};
use crate::compare::Comparison;
use crate::dynamics::solver::SolverKind;
use bevy::prelude::*;
use std::collections::HashMap;

/// Most comparison steps taken per frame to catch up after a rebuild.
pub const CATCH_UP_PER_FRAME: u64 = 2_000;

/// Colour of run i (run 0 is drawn in the bodies' own colours; this is its plot colour).
pub const RUN_COLORS: [[u8; 3]; 3] = [[40, 110, 210], [235, 120, 25], [170, 60, 200]];

/// Compare mode's state.
#[derive(Resource, Default)]
pub struct CompareMode {
    /// The solvers compared (empty: compare mode is off).
    pub solvers: Vec<SolverKind>,
    pub comparison: Option<Comparison>,
    /// Start compare mode with these solvers on the next update.
    pub request: Option<Vec<SolverKind>>,
    /// The last error (compare mode stops on one).
    pub error: Option<String>,
    /// Bumped whenever the comparison is rebuilt or stopped (the ghosts are respawned).
    pub generation: u64,
    /// The app world's generation the comparison was built for.
    sim_generation: Option<u64>,
    /// The scene file compared (opening another scene leaves compare mode).
    scene_path: Option<std::path::PathBuf>,
}

impl CompareMode {
    pub fn is_on(&self) -> bool {
        self.comparison.is_some()
    }

    /// Leave compare mode.
    pub fn stop(&mut self) {
        self.solvers.clear();
        self.comparison = None;
        self.sim_generation = None;
        self.scene_path = None;
        self.generation += 1;
    }

    fn rebuild(&mut self, sim: &Simulation) -> Result<(), String> {
        let c = Comparison::of_solvers(&sim.scene, &self.solvers).map_err(|e| e.to_string())?;
        self.comparison = Some(c);
        self.sim_generation = Some(sim.generation);
        self.generation += 1;
        Ok(())
    }
}

/// Adds [`CompareMode`] and the lockstep stepping (no rendering: see
/// [`CompareRenderPlugin`]).
#[derive(Default)]
pub struct ComparePlugin {
    /// Start in compare mode with these solvers (`--compare etm,sqm`).
    pub solvers: Vec<SolverKind>,
}

impl Plugin for ComparePlugin {
    fn build(&self, app: &mut App) {
        app.insert_resource(CompareMode {
            request: (!self.solvers.is_empty()).then(|| self.solvers.clone()),
            ..default()
        })
        .add_systems(
            Update,
            (
                start_comparison
                    .in_set(SimulationSystems)
                    .after(super::lessons::apply_lesson_request)
                    .before(reload_changed_scene),
                step_comparison
                    .in_set(SimulationSystems)
                    .after(advance_simulation),
            ),
        );
    }
}

/// Start a requested comparison (before this frame's steps).
pub fn start_comparison(
    mut cm: ResMut<CompareMode>,
    mut sim: ResMut<Simulation>,
    mut control: ResMut<SimControl>,
    mut history: ResMut<EnergyHistory>,
) {
    let Some(solvers) = cm.request.take() else {
        return;
    };
    if let Err(e) = start(&mut cm, &mut sim, solvers) {
        cm.stop();
        cm.error = Some(e);
        return;
    }
    history.restart(sim.last_sample);
    control.clear_backlog();
}

/// Rebuild the comparison after a reset or load, and step it to the app world's step
/// (module doc).
pub fn step_comparison(
    mut cm: ResMut<CompareMode>,
    sim: Res<Simulation>,
    mut control: ResMut<SimControl>,
) {
    if cm.comparison.is_none() {
        return;
    }
    if cm.scene_path != sim.scene_path {
        cm.stop();
        return;
    }
    let stale = cm.sim_generation != Some(sim.generation)
        || cm
            .comparison
            .as_ref()
            .is_some_and(|c| c.steps() > sim.world.step_index);
    if stale && let Err(e) = cm.rebuild(&sim) {
        cm.stop();
        cm.error = Some(e);
        return;
    }
    let target = sim.world.step_index;
    let Some(c) = cm.comparison.as_mut() else {
        return;
    };
    let mut taken = 0;
    let mut failed = None;
    while c.steps() < target && taken < CATCH_UP_PER_FRAME {
        if let Err(e) = c.step() {
            failed = Some(e.to_string());
            break;
        }
        taken += 1;
    }
    if let Some(e) = failed {
        cm.stop();
        cm.error = Some(e);
        control.paused = true;
    }
}

/// Rebuild the app's world with the first solver and the comparison of all of them.
fn start(
    cm: &mut CompareMode,
    sim: &mut Simulation,
    solvers: Vec<SolverKind>,
) -> Result<(), String> {
    if !(2..=crate::compare::MAX_RUNS).contains(&solvers.len()) {
        return Err(format!(
            "compare mode needs 2 to {} solvers, got {}",
            crate::compare::MAX_RUNS,
            solvers.len()
        ));
    }
    let mut next =
        Simulation::from_scene(sim.scene.clone(), sim.scene_path.clone(), Some(solvers[0]))?;
    next.generation = sim.generation + 1;
    *sim = next;
    cm.solvers = solvers;
    cm.error = None;
    cm.scene_path = sim.scene_path.clone();
    cm.rebuild(sim)
}

/// Draws runs 1 and 2 of the comparison as translucent ghosts (windowed app only).
pub struct CompareRenderPlugin;

impl Plugin for CompareRenderPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<GhostState>()
            .add_systems(Update, sync_ghosts.after(SimulationSystems));
    }
}

/// One body of run `run` drawn as a ghost.
#[derive(Component, Debug, Clone, Copy)]
pub struct Ghost {
    pub run: usize,
    pub body: usize,
}

#[derive(Resource, Default)]
struct GhostState {
    generation: Option<u64>,
    meshes: HashMap<String, Handle<Mesh>>,
    materials: Vec<Handle<StandardMaterial>>,
}

fn sync_ghosts(
    mut commands: Commands,
    cm: Res<CompareMode>,
    mut state: ResMut<GhostState>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
    mut ghosts: Query<(Entity, &Ghost, &mut Transform)>,
) {
    if state.generation != Some(cm.generation) {
        state.generation = Some(cm.generation);
        for (e, _, _) in &ghosts {
            commands.entity(e).despawn();
        }
        for h in state.materials.drain(..) {
            materials.remove(&h);
        }
        let Some(c) = &cm.comparison else {
            return;
        };
        for (r, run) in c.runs.iter().enumerate().skip(1) {
            let [red, green, blue] = RUN_COLORS[r % RUN_COLORS.len()];
            let material = materials.add(StandardMaterial {
                base_color: Color::srgba_u8(red, green, blue, 110),
                alpha_mode: AlphaMode::Blend,
                perceptual_roughness: 0.6,
                ..default()
            });
            state.materials.push(material.clone());
            for (i, b) in run.world.bodies.iter().enumerate() {
                if b.is_static() {
                    continue;
                }
                let key = format!("{:?}", b.shape);
                let mesh = state
                    .meshes
                    .entry(key)
                    .or_insert_with(|| meshes.add(shape_mesh(&b.shape)))
                    .clone();
                commands.spawn((
                    Ghost { run: r, body: i },
                    Mesh3d(mesh),
                    MeshMaterial3d(material.clone()),
                    body_transform(b),
                ));
            }
        }
        return;
    }
    let Some(c) = &cm.comparison else {
        return;
    };
    for (_, g, mut t) in &mut ghosts {
        if let Some(b) = c.runs.get(g.run).and_then(|r| r.world.bodies.get(g.body)) {
            *t = body_transform(b);
        }
    }
}

fn body_transform(b: &crate::body::RigidBody) -> Transform {
    let q = b.orientation.quaternion();
    Transform::from_translation(super::render::to_render(&b.position))
        .with_rotation(Quat::from_xyzw(q.i as f32, q.j as f32, q.k as f32, q.w as f32).normalize())
}
