//! Collision microscope in the app: one step's impact, iteration by iteration
//! ([`crate::microscope`]).
//!
//! "Catch next impact" ([`MicroscopeRequest::CatchNextImpact`]) steps the world until a
//! step in which a contact (of the selected body, if one is selected) receives a solver
//! impulse, at most [`Microscope::max_steps`] steps; "This step"
//! ([`MicroscopeRequest::ThisStep`]) records the next step. The steps are the physics
//! thread's ([`SimCommand::Microscope`]): taken through [`Simulation::step`] like every
//! other step, with the scene's forces, recorded by the timeline and the energy trace;
//! the mouse spring is let go first. The run pauses and the record comes back as a
//! [`MicroscopeOutcome`], kept in [`Microscope::record`].
//!
//! The teaching panel shows the record; in the 3D view ([`MicroscopeRenderPlugin`]) an
//! arrow at each contact point draws the cumulative impulse on body a up to the
//! iteration chosen with the panel's slider ([`Microscope::iteration`]).

pub use super::messages::MicroscopeRequest;
use super::messages::{MicroscopeOutcome, SimCommand};
use super::render::typical_size;
use super::sets::{SimulationStage, SimulationSystems};
use super::simulation::Simulation;
use super::view::{Selection, to_render};
use crate::microscope::ImpactRecord;
use bevy::prelude::*;

/// The microscope's state.
#[derive(Resource, Debug)]
pub struct Microscope {
    /// Whether the panel is shown (and the arrows drawn).
    pub open: bool,
    /// Most steps "catch next impact" takes. Default 3000.
    pub max_steps: u64,
    pub record: Option<ImpactRecord>,
    /// The run the record was taken in ([`Simulation::run`]): a new run (another scene,
    /// a reset) clears the record and its message.
    pub record_run: Option<u64>,
    /// Index into the record's iterations (the slider).
    pub iteration: usize,
    /// Where "Export CSV" writes.
    pub csv_path: String,
    /// Outcome of the last request or export (text, ok).
    pub message: Option<(String, bool)>,
}

impl Default for Microscope {
    fn default() -> Self {
        Microscope {
            open: false,
            max_steps: 3000,
            record: None,
            record_run: None,
            iteration: 0,
            csv_path: "out/impact.csv".into(),
            message: None,
        }
    }
}

impl Microscope {
    /// Write the record as CSV to [`Microscope::csv_path`]; the row count on success.
    pub fn export_csv(&self) -> Result<usize, String> {
        let Some(r) = &self.record else {
            return Err("no impact recorded".into());
        };
        let path = std::path::PathBuf::from(self.csv_path.trim());
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let mut out = crate::output::OutputFile::create(&path).map_err(|e| e.to_string())?;
        r.write_csv(&mut out)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        out.commit().map_err(|e| e.to_string())?;
        Ok(r.rows.len())
    }
}

/// Adds [`Microscope`] and the system carrying out its requests (no rendering).
#[derive(Default)]
pub struct MicroscopePlugin {
    /// Catch the next impact at startup (`--microscope`).
    pub catch_at_start: bool,
}

impl Plugin for MicroscopePlugin {
    fn build(&self, app: &mut App) {
        app.insert_resource(Microscope {
            open: self.catch_at_start,
            ..default()
        })
        .add_message::<MicroscopeRequest>()
        .add_systems(
            Update,
            (
                send_microscope_requests.in_set(SimulationStage::Mode),
                (take_microscope_outcomes, forget_other_runs)
                    .chain()
                    .in_set(SimulationStage::AfterSync),
            ),
        );
        if self.catch_at_start {
            app.world_mut()
                .write_message(MicroscopeRequest::CatchNextImpact);
        }
    }
}

/// Hand the microscope's requests to the physics thread (module doc), for the
/// selected body if one is selected.
pub fn send_microscope_requests(
    mut requests: MessageReader<MicroscopeRequest>,
    mut m: ResMut<Microscope>,
    mut commands: MessageWriter<SimCommand>,
    selection: Option<Res<Selection>>,
) {
    let body = selection.and_then(|s| s.body);
    for request in requests.read() {
        m.open = true;
        commands.write(SimCommand::Microscope {
            catch: *request == MicroscopeRequest::CatchNextImpact,
            body,
            max_steps: m.max_steps,
        });
    }
}

/// Keep what the physics thread's microscope steps found (module doc).
pub fn take_microscope_outcomes(
    mut outcomes: MessageReader<MicroscopeOutcome>,
    mut m: ResMut<Microscope>,
    sim: Res<Simulation>,
) {
    for outcome in outcomes.read() {
        let who = outcome
            .body
            .map_or(String::new(), |b| format!(" of body {b}"));
        match &outcome.result {
            Err(e) => m.message = Some((e.clone(), false)),
            Ok(Some(r)) => {
                m.message = Some((
                    format!(
                        "step {}: {} contacts{who}, {} rows, {} iterations",
                        r.step,
                        r.contacts.len(),
                        r.rows.len(),
                        r.iterations.len()
                    ),
                    true,
                ));
                // Open at maximum compression when there is one, else at the end.
                m.iteration = peak_iteration(r).unwrap_or(r.iterations.len().saturating_sub(1));
                m.record = Some(r.clone());
                m.record_run = Some(sim.run);
            }
            Ok(None) => {
                m.message = Some((
                    format!("no impact{who} in {} steps", outcome.max_steps),
                    false,
                ));
            }
        }
    }
}

/// A record of another run (another scene, a reset) is not this run's: it goes, with its
/// message and arrows.
pub fn forget_other_runs(mut m: ResMut<Microscope>, sim: Res<Simulation>) {
    if m.record_run.is_some_and(|r| r != sim.run) {
        m.record = None;
        m.record_run = None;
        m.message = None;
        m.iteration = 0;
    }
}

/// The iteration index of the row with the largest stored elastic energy.
pub fn peak_iteration(r: &ImpactRecord) -> Option<usize> {
    let row = r
        .rows
        .iter()
        .filter(|x| x.elastic_total > 0.0)
        .max_by(|x, y| x.elastic_total.total_cmp(&y.elastic_total))?;
    r.iterations.iter().position(|&k| k == row.iteration)
}

/// The index of the last row of iteration index `k` (rows are in iteration order).
pub fn last_row_of(r: &ImpactRecord, k: usize) -> Option<usize> {
    let it = *r.iterations.get(k)?;
    r.rows.iter().rposition(|x| x.iteration == it)
}

/// Draws the microscope's impulse arrows (windowed app only), in front of the bodies:
/// the impulse on body a points into it.
pub struct MicroscopeRenderPlugin;

/// The gizmo group of the impulse arrows (drawn over the bodies, wide lines).
#[derive(Default, Reflect, GizmoConfigGroup)]
pub struct MicroscopeGizmos;

impl Plugin for MicroscopeRenderPlugin {
    fn build(&self, app: &mut App) {
        app.init_gizmo_group::<MicroscopeGizmos>()
            .add_systems(Startup, configure_gizmos)
            .add_systems(Update, draw_impulses.after(SimulationSystems));
    }
}

fn configure_gizmos(mut store: ResMut<GizmoConfigStore>) {
    let (config, _) = store.config_mut::<MicroscopeGizmos>();
    config.depth_bias = -1.0;
    config.line.width = 4.0;
}

fn draw_impulses(m: Res<Microscope>, sim: Res<Simulation>, mut gizmos: Gizmos<MicroscopeGizmos>) {
    let Some(r) = m.record.as_ref().filter(|_| m.open) else {
        return;
    };
    // The largest cumulative impulse over the record draws as 1.5 typical body sizes.
    let largest = r
        .cumulative
        .iter()
        .flatten()
        .map(|p| p.norm())
        .fold(0.0, f64::max);
    if largest <= 0.0 {
        return;
    }
    let size = typical_size(&sim) as f32;
    let scale = 1.5 * size / largest as f32;
    let impulses = r.impulses_at(m.iteration);
    for (c, p) in r.contacts.iter().zip(&impulses) {
        let at = to_render(&c.point);
        gizmos.sphere(Isometry3d::from_translation(at), 0.03 * size, Color::BLACK);
        let v = to_render(p) * scale;
        if v.length() > 1e-6 {
            gizmos.arrow(at, at + v, Color::srgb(0.9, 0.1, 0.1));
        }
    }
}
