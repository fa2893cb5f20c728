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
//! rebuilds the comparison from the scene and catches it up. Stepping the runs takes at
//! most half the last frame's time, within [`FRAME_BUDGET`] and [`MAX_FRAME_BUDGET`] (at
//! least one step); while the comparison is behind the app's world, the app's clock is
//! held at the comparison's step ([`SimControl::hold_at`]), so the app goes on drawing
//! frames and the whole comparison plays at the pace of its slowest run. Opening another
//! scene file leaves compare mode. Scrubbing the timeline back (`super::timeline`)
//! leaves the comparison ahead of the app's world, which rebuilds and catches it up the
//! same way, so every run shows the scrubbed step (recomputed: the runs are
//! deterministic). This clock stays on the app's thread, not the physics thread: the
//! comparison steps in the frame. Disturbances of the app's world (a dragged body, a
//! spawned one, parameters changed in the solver panel) are not copied into the runs:
//! the comparison always shows the scene as written.
//!
//! Starting ([`StartComparison`], read by [`start_comparison`]): a start without a
//! lesson (`gui --compare`, the teaching panel) enters [`LabMode::Compare`], whose
//! `OnEnter` ([`enter_compare`]) opens the scene anew with the first solver, paused at
//! step 0 like a lesson, with the camera framing the scene's region of interest for the
//! view's shape; a lesson's comparison stays in [`LabMode::Lesson`] and keeps the
//! lesson's world (opened with the first solver), run controls and camera. Either way
//! the comparison is built from the state published next ([`step_comparison`]).
//! Entering [`LabMode::Sandbox`] ("Stop comparing", closing the lesson, opening
//! another scene) stops it.
//!
//! Display ([`CompareView`]): the app's world (= run 0) is drawn by the render plugin.
//! Overlay: runs 1 and 2 drawn over it as wire outlines in [`RUN_COLORS`], with a
//! legend over the view.
//! Side by side: the 3D view split into one viewport per run, each a camera
//! ([`CompareCamera`]) following the orbit camera and seeing only its run's bodies
//! (run i's ghosts on render layer i, drawn opaque; the app's bodies on layer 0;
//! containers and lights on every layer). The teaching panel shows the energy of every
//! run in one plot (same colours) and the divergence from run 0 (largest position
//! difference and its body, orientation difference, total-energy difference).

use super::interaction::{CameraFollow, OrbitCamera, RegionFraming, largest_moving_radius};
use super::messages::{SimCommand, StartComparison};
use super::render::{ContainerVisual, shape_mesh};
use super::sets::{SimulationStage, SimulationSystems, UiSystems};
use super::sim_state::LabMode;
use super::simulation::{SimControl, Simulation};
pub use super::view::{CompareCamera, MainViewCamera};
use crate::compare::{Comparison, RunSpec};
use crate::dynamics::solver::{SolverKind, SolverParams};
use bevy::camera::{Viewport, visibility::RenderLayers};
use bevy::prelude::*;
use std::collections::HashMap;

/// Wall time a frame may always spend stepping the comparison's runs (at least one step
/// is taken). A frame spends up to half the last frame's time, within this and
/// [`MAX_FRAME_BUDGET`]: a slow method (MDP takes about 10 s for 2,000 steps of
/// `pour_mixed`) must not stop the app from drawing, and on a software renderer (frames
/// of 150-250 ms) a fixed 25 ms would leave cheap methods at a tenth of real time.
pub const FRAME_BUDGET: std::time::Duration = std::time::Duration::from_millis(25);

/// Most wall time a frame spends stepping the comparison's runs (see [`FRAME_BUDGET`]).
pub const MAX_FRAME_BUDGET: std::time::Duration = std::time::Duration::from_millis(250);

/// Colour of run i (run 0 is drawn in the bodies' own colours; this is its plot colour).
pub const RUN_COLORS: [[u8; 3]; 3] = [[40, 110, 210], [235, 120, 25], [170, 60, 200]];

/// How the runs are shown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CompareView {
    /// Run 0 solid, the others as translucent ghosts in the same view.
    #[default]
    Overlay,
    /// One viewport per run, side by side.
    Split,
}

/// Compare mode's state.
#[derive(Resource, Default)]
pub struct CompareMode {
    pub view: CompareView,
    /// The solvers compared (empty: compare mode is off).
    pub solvers: Vec<SolverKind>,
    pub comparison: Option<Comparison>,
    /// The last error (compare mode stops on one).
    pub error: Option<String>,
    /// Bumped whenever the comparison is rebuilt or stopped (the ghosts are respawned).
    pub generation: u64,
    /// The app world's generation the comparison was built for.
    sim_generation: Option<u64>,
    /// The scene file compared (opening another scene leaves compare mode).
    scene_path: Option<std::path::PathBuf>,
    /// Parameters per run (same order as `solvers`); `None`: every run uses the
    /// parameters the app's world had when compare mode started (shared).
    pub run_params: Option<Vec<SolverParams>>,
    /// The shared parameters in use (the app world's at the start).
    shared_params: Option<SolverParams>,
    /// The run a start was asked on: the comparison is built from the first state of
    /// another run (the world the start opens), never from this one.
    asked_on_run: Option<u64>,
    /// Wall time a frame may spend stepping the runs (`None`: half the last frame's,
    /// within [`FRAME_BUDGET`] and [`MAX_FRAME_BUDGET`]).
    pub frame_budget: Option<std::time::Duration>,
}

impl CompareMode {
    pub fn is_on(&self) -> bool {
        self.comparison.is_some()
    }

    /// Take the solvers and parameters of a start: the comparison is built from the
    /// next state published on `scene` ([`step_comparison`]).
    fn prepare(
        &mut self,
        start: &StartComparison,
        scene: Option<std::path::PathBuf>,
        run: u64,
    ) -> Result<(), String> {
        let n = start.solvers.len();
        if !(2..=crate::compare::MAX_RUNS).contains(&n) {
            return Err(format!(
                "compare mode needs 2 to {} solvers, got {n}",
                crate::compare::MAX_RUNS
            ));
        }
        if let Some(p) = &start.run_params {
            if p.len() != n {
                return Err(format!("{} parameter sets for {n} solvers", p.len()));
            }
            for (i, p) in p.iter().enumerate() {
                p.validate()
                    .map_err(|(field, message)| format!("run {}: {field}: {message}", i + 1))?;
            }
        }
        self.stop();
        self.solvers = start.solvers.clone();
        self.run_params = start.run_params.clone();
        self.shared_params = None;
        self.asked_on_run = Some(run);
        self.scene_path = scene;
        self.error = None;
        Ok(())
    }

    /// Leave compare mode.
    pub fn stop(&mut self) {
        self.solvers.clear();
        self.comparison = None;
        self.sim_generation = None;
        self.scene_path = None;
        self.generation += 1;
    }

    /// The parameters of run `i`: its own, or the shared ones.
    fn params_of(&self, i: usize) -> Option<SolverParams> {
        match &self.run_params {
            Some(p) => p.get(i).cloned(),
            None => self.shared_params.clone(),
        }
    }

    fn rebuild(&mut self, sim: &Simulation) -> Result<(), String> {
        let specs: Vec<RunSpec> = self
            .solvers
            .iter()
            .enumerate()
            .map(|(i, &solver)| RunSpec {
                solver,
                params: self.params_of(i),
            })
            .collect();
        let c = Comparison::new(&sim.scene, &specs).map_err(|e| e.to_string())?;
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
    /// Start with side-by-side viewports (`--split`).
    pub split: bool,
}

impl Plugin for ComparePlugin {
    fn build(&self, app: &mut App) {
        app.insert_resource(CompareMode {
            view: if self.split {
                CompareView::Split
            } else {
                CompareView::Overlay
            },
            ..default()
        })
        .add_message::<StartComparison>()
        .add_systems(OnEnter(LabMode::Compare), enter_compare)
        .add_systems(OnEnter(LabMode::Sandbox), |mut cm: ResMut<CompareMode>| {
            if !cm.solvers.is_empty() {
                cm.stop()
            }
        })
        .add_systems(
            Update,
            (
                start_comparison.in_set(SimulationStage::Mode),
                step_comparison.in_set(SimulationStage::AfterSync),
            ),
        );
        if !self.solvers.is_empty() {
            app.world_mut().write_message(StartComparison {
                solvers: self.solvers.clone(),
                run_params: None,
                lesson_scene: None,
            });
        }
    }
}

/// Take a comparison's start (module doc): a lesson's at once (its world is being
/// opened this frame); otherwise enter [`LabMode::Compare`] (anew if already in it:
/// `set` runs its `OnEnter` again).
pub fn start_comparison(
    mut starts: MessageReader<StartComparison>,
    mut cm: ResMut<CompareMode>,
    mut next_mode: ResMut<NextState<LabMode>>,
    sim: Res<Simulation>,
) {
    for start in starts.read() {
        let scene = start.lesson_scene.clone().or(sim.scene_path.clone());
        if let Err(e) = cm.prepare(start, scene, sim.run) {
            cm.stop();
            cm.error = Some(e);
            continue;
        }
        if start.lesson_scene.is_none() {
            next_mode.set(LabMode::Compare);
        }
    }
}

/// `OnEnter(LabMode::Compare)`, the set-up of a start without a lesson (module doc):
/// open the scene anew with the first solver (run 0's parameters), paused at step 0,
/// the camera on the scene's region of interest ([`RegionFraming`], which holds every
/// body inside the region in each view: the overlaid one and the narrow side-by-side
/// viewports alike).
pub fn enter_compare(
    mut cm: ResMut<CompareMode>,
    sim: Res<Simulation>,
    mut commands: MessageWriter<SimCommand>,
    mut control: ResMut<SimControl>,
    framing: Option<ResMut<RegionFraming>>,
    follow: Option<ResMut<CameraFollow>>,
) {
    let Some(&first) = cm.solvers.first() else {
        return;
    };
    // Shared parameters: those the app's world runs with now (the Solver panel's).
    cm.shared_params = Some(sim.world.params.clone());
    match Simulation::from_scene(sim.scene.clone(), sim.scene_path.clone(), Some(first)) {
        Ok(mut next) => {
            if let Some(p) = cm.params_of(0) {
                next.world.params = p;
            }
            commands.write(SimCommand::Open(Box::new(next)));
        }
        Err(e) => {
            cm.stop();
            cm.error = Some(e);
            return;
        }
    }
    control.paused = true;
    control.impact_paused = None;
    if let Some(mut framing) = framing
        && let Ok(region) = sim.scene.region_of_interest()
    {
        framing.frame(region, largest_moving_radius(&sim.world));
        if let Some(mut f) = follow {
            f.stop();
        }
    }
}

/// Rebuild the comparison after a reset or load, and step it to the app world's step
/// (module doc).
pub fn step_comparison(
    mut cm: ResMut<CompareMode>,
    sim: Res<Simulation>,
    mut control: ResMut<SimControl>,
    mode: Res<State<LabMode>>,
    mut next_mode: ResMut<NextState<LabMode>>,
) {
    // The app's clock runs free unless the comparison is behind it (set below).
    if control.hold_at.is_some() {
        control.hold_at = None;
    }
    if cm.solvers.is_empty() || (cm.comparison.is_none() && cm.asked_on_run == Some(sim.run)) {
        // Off, or its world not opened yet.
        return;
    }
    let mut leave = |cm: &mut CompareMode| {
        cm.stop();
        if *mode.get() == LabMode::Compare {
            next_mode.set(LabMode::Sandbox);
        }
    };
    if cm.scene_path != sim.scene_path {
        leave(&mut cm);
        return;
    }
    let stale = cm.sim_generation != Some(sim.generation)
        || cm
            .comparison
            .as_ref()
            .is_some_and(|c| c.steps() > sim.world.step_index);
    if (stale || cm.comparison.is_none())
        && let Err(e) = cm.rebuild(&sim)
    {
        leave(&mut cm);
        cm.error = Some(e);
        return;
    }
    let target = sim.world.step_index;
    let budget = cm
        .frame_budget
        .unwrap_or_else(|| (control.stats.frame_time / 2).clamp(FRAME_BUDGET, MAX_FRAME_BUDGET));
    let Some(c) = cm.comparison.as_mut() else {
        return;
    };
    // At least one step a frame, then while the budget lasts.
    let start = std::time::Instant::now();
    let mut failed = None;
    while c.steps() < target {
        if let Err(e) = c.step() {
            failed = Some(e.to_string());
            break;
        }
        if start.elapsed() >= budget {
            break;
        }
    }
    if c.steps() < target {
        control.hold_at = Some(c.steps());
    }
    if let Some(e) = failed {
        leave(&mut cm);
        cm.error = Some(e);
        control.paused = true;
    }
}

/// Draws runs 1 and 2 of the comparison as ghosts or in their own viewports (windowed
/// app only).
pub struct CompareRenderPlugin;

impl Plugin for CompareRenderPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<GhostState>()
            .add_systems(
                Update,
                (sync_ghosts, draw_ghost_outlines).after(SimulationSystems),
            )
            .add_systems(
                bevy_egui::EguiPrimaryContextPass,
                split_viewports.in_set(UiSystems::Overlays),
            );
    }
}

/// Every render layer a run can use (containers and lights are on all of them).
fn all_layers() -> RenderLayers {
    RenderLayers::from_layers(&super::render::CONTAINER_LAYERS)
}

/// Split the 3D viewport the UI left free into one per run (module doc), and label them.
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
fn split_viewports(
    mut commands: Commands,
    cm: Res<CompareMode>,
    mut contexts: bevy_egui::EguiContexts,
    window: Single<&Window, With<bevy::window::PrimaryWindow>>,
    mut main: Query<(&mut Camera, &Transform), (With<OrbitCamera>, Without<CompareCamera>)>,
    mut extra: Query<(Entity, &CompareCamera, &mut Camera, &mut Transform), Without<OrbitCamera>>,
    unlayered: Query<
        Entity,
        (
            Or<(With<ContainerVisual>, With<DirectionalLight>)>,
            Without<RenderLayers>,
        ),
    >,
) -> Result {
    for e in &unlayered {
        commands.entity(e).insert(all_layers());
    }
    let n = match (&cm.comparison, cm.view) {
        (Some(c), CompareView::Split) => c.runs.len(),
        _ => 1,
    };
    let Ok((mut cam, eye)) = main.single_mut() else {
        return Ok(());
    };
    // Below the extra cameras, which draw over it without clearing.
    cam.order = -(crate::compare::MAX_RUNS as isize);
    let mut have = vec![false; n];
    for (e, CompareCamera(i), ..) in &extra {
        if *i >= n || have[*i] {
            commands.entity(e).despawn();
        } else {
            have[*i] = true;
        }
    }
    for (i, present) in have.iter().enumerate().skip(1) {
        if !present {
            commands.spawn((
                Camera3d::default(),
                Camera {
                    order: -(crate::compare::MAX_RUNS as isize) + i as isize,
                    clear_color: ClearColorConfig::None,
                    is_active: false,
                    ..default()
                },
                RenderLayers::layer(i),
                CompareCamera(i),
                *eye,
            ));
        }
    }
    let Some(vp) = cam.viewport.clone() else {
        return Ok(());
    };
    if n <= 1 {
        overlay_legend(&cm, &mut contexts, &window, &vp)?;
        return Ok(());
    }
    let w = (vp.physical_size.x / n as u32).max(1);
    cam.viewport = Some(Viewport {
        physical_size: UVec2::new(w, vp.physical_size.y),
        ..vp.clone()
    });
    for (_, CompareCamera(i), mut c, mut t) in &mut extra {
        if *i < n {
            c.viewport = Some(Viewport {
                physical_position: vp.physical_position + UVec2::new(w * *i as u32, 0),
                physical_size: UVec2::new(w, vp.physical_size.y),
                ..vp.clone()
            });
            c.is_active = true;
            *t = *eye;
        }
    }
    // Each viewport's run label, over the view.
    if let Some(c) = &cm.comparison {
        use bevy_egui::egui;
        let ctx = contexts.ctx_mut()?;
        let painter = ctx.layer_painter(egui::LayerId::new(
            egui::Order::Foreground,
            egui::Id::new("compare_labels"),
        ));
        let size = ctx.global_style().text_styles[&egui::TextStyle::Heading].size;
        let scale = window.scale_factor();
        for (i, run) in c.runs.iter().enumerate() {
            let x = (vp.physical_position.x + w * i as u32) as f32 / scale;
            let y = vp.physical_position.y as f32 / scale;
            let [r, g, b] = RUN_COLORS[i % RUN_COLORS.len()];
            painter.text(
                egui::pos2(x + 8.0, y + 6.0),
                egui::Align2::LEFT_TOP,
                run.label.to_uppercase(),
                egui::FontId::proportional(size),
                egui::Color32::from_rgb(r, g, b),
            );
        }
    }
    Ok(())
}

/// Overlay: which run is drawn how, over the view's top-left corner.
fn overlay_legend(
    cm: &CompareMode,
    contexts: &mut bevy_egui::EguiContexts,
    window: &Window,
    vp: &Viewport,
) -> Result {
    use bevy_egui::egui;
    let Some(c) = &cm.comparison else {
        return Ok(());
    };
    let ctx = contexts.ctx_mut()?;
    let painter = ctx.layer_painter(egui::LayerId::new(
        egui::Order::Foreground,
        egui::Id::new("compare_legend"),
    ));
    let size = ctx.global_style().text_styles[&egui::TextStyle::Body].size * 1.2;
    let scale = window.scale_factor();
    let x = vp.physical_position.x as f32 / scale + 8.0;
    let mut y = vp.physical_position.y as f32 / scale + 6.0;
    for (i, run) in c.runs.iter().enumerate() {
        let [r, g, b] = RUN_COLORS[i % RUN_COLORS.len()];
        let how = if i == 0 { "solid bodies" } else { "outlines" };
        let text = format!("{}: {how}", run.label.to_uppercase());
        let galley = painter.layout_no_wrap(
            text,
            egui::FontId::proportional(size),
            egui::Color32::from_rgb(r, g, b),
        );
        let rect = egui::Rect::from_min_size(egui::pos2(x, y), galley.size()).expand(3.0);
        painter.rect_filled(rect, 3.0, egui::Color32::from_black_alpha(150));
        painter.galley(egui::pos2(x, y), galley, egui::Color32::WHITE);
        y += rect.height() + 2.0;
    }
    Ok(())
}

/// One body of run `run` drawn as a ghost.
#[derive(Component, Debug, Clone, Copy)]
pub struct Ghost {
    pub run: usize,
    pub body: usize,
}

#[derive(Resource, Default)]
struct GhostState {
    generation: Option<(u64, CompareView)>,
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
    if state.generation != Some((cm.generation, cm.view)) {
        state.generation = Some((cm.generation, cm.view));
        for (e, _, _) in &ghosts {
            commands.entity(e).despawn();
        }
        for h in state.materials.drain(..) {
            materials.remove(&h);
        }
        let Some(c) = &cm.comparison else {
            return;
        };
        // Overlaid runs are drawn as outlines (`draw_ghost_outlines`): translucent meshes
        // show their hidden inner faces and sort per body, not per triangle.
        if cm.view != CompareView::Split {
            return;
        }
        for (r, run) in c.runs.iter().enumerate().skip(1) {
            let [red, green, blue] = RUN_COLORS[r % RUN_COLORS.len()];
            let split = cm.view == CompareView::Split;
            let material = materials.add(StandardMaterial {
                base_color: Color::srgba_u8(red, green, blue, if split { 255 } else { 110 }),
                alpha_mode: if split {
                    AlphaMode::Opaque
                } else {
                    AlphaMode::Blend
                },
                perceptual_roughness: 0.6,
                ..default()
            });
            let layers = if split {
                RenderLayers::layer(r)
            } else {
                RenderLayers::layer(0)
            };
            state.materials.push(material.clone());
            // Side by side, each viewport also needs the run's static bodies.
            let fixed = materials.add(StandardMaterial {
                base_color: Color::srgb(0.45, 0.45, 0.48),
                perceptual_roughness: 0.6,
                ..default()
            });
            state.materials.push(fixed.clone());
            for (i, b) in run.world.bodies.iter().enumerate() {
                if b.is_static() && !split {
                    continue;
                }
                let material = if b.is_static() {
                    fixed.clone()
                } else {
                    material.clone()
                };
                let key = format!("{:?}", b.shape);
                let mesh = state
                    .meshes
                    .entry(key)
                    .or_insert_with(|| meshes.add(shape_mesh(&b.shape)))
                    .clone();
                commands.spawn((
                    Ghost { run: r, body: i },
                    Mesh3d(mesh),
                    MeshMaterial3d(material),
                    body_transform(b),
                    layers.clone(),
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

/// Overlay: the bodies of runs 1 and 2 as wire outlines in their run's colour (spheres,
/// boxes, crosses' bars and rods exactly; other shapes as their bounding sphere), drawn
/// with depth so that the app's own bodies hide what lies behind them.
fn draw_ghost_outlines(cm: Res<CompareMode>, mut gizmos: Gizmos) {
    use crate::shapes::Shape;
    if cm.view == CompareView::Split {
        return;
    }
    let Some(c) = &cm.comparison else {
        return;
    };
    for (r, run) in c.runs.iter().enumerate().skip(1) {
        let [red, green, blue] = RUN_COLORS[r % RUN_COLORS.len()];
        let color = Color::srgb_u8(red, green, blue);
        for b in run.world.bodies.iter().filter(|b| !b.is_static()) {
            let t = body_transform(b);
            let iso = Isometry3d::new(t.translation, t.rotation);
            let cuboid = |gizmos: &mut Gizmos, h: &crate::math::Vec3| {
                gizmos.primitive_3d(
                    &Cuboid::new(2.0 * h.x as f32, 2.0 * h.y as f32, 2.0 * h.z as f32),
                    iso,
                    color,
                );
            };
            match &b.shape {
                Shape::Sphere { radius } => {
                    gizmos.sphere(iso, *radius as f32, color).resolution(16);
                }
                Shape::Cuboid { half_extents } => cuboid(&mut gizmos, half_extents),
                Shape::Cross { c } => {
                    for h in Shape::cross_bars(*c) {
                        cuboid(&mut gizmos, &h);
                    }
                }
                Shape::Rod { length, radius } => {
                    // Bevy's capsule runs along y; the core's rod along z.
                    let along_z = Quat::from_rotation_x(std::f32::consts::FRAC_PI_2);
                    gizmos.primitive_3d(
                        &Capsule3d::new(*radius as f32, *length as f32),
                        Isometry3d::new(t.translation, t.rotation * along_z),
                        color,
                    );
                }
                other => {
                    gizmos
                        .sphere(iso, other.bounding_radius() as f32, color)
                        .resolution(16);
                }
            }
        }
    }
}

fn body_transform(b: &crate::body::RigidBody) -> Transform {
    let q = b.orientation.quaternion();
    Transform::from_translation(super::render::to_render(&b.position))
        .with_rotation(Quat::from_xyzw(q.i as f32, q.j as f32, q.k as f32, q.w as f32).normalize())
}
