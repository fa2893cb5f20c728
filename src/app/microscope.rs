//! Collision microscope in the app: one step's impact, iteration by iteration
//! ([`crate::microscope`]).
//!
//! "Catch next impact" ([`MicroscopeRequest::CatchNextImpact`]) steps the app's world
//! with [`catch_next_impact`], one step per call, until a step in which a contact (of the
//! selected body, if one is selected) receives a solver impulse, at most
//! [`Microscope::max_steps`] steps; "This step" ([`MicroscopeRequest::ThisStep`]) records
//! the next step with [`record_step`]. Either way the run pauses and the record is kept
//! in [`Microscope::record`].
//!
//! The energy history stays consistent: these steps bypass [`Simulation::step`], so
//! after each of them the sample the world's step produced is rebuilt from the world's
//! ledger, exactly as [`crate::World::step`] builds it ([`step_sample`]), and pushed to
//! [`EnergyHistory`] and [`Simulation::last_sample`], as the simulation plugin does for
//! its own steps. The mouse spring is released first (its force is not applied during
//! these steps), and the world's `record_trace` flag is restored afterwards.
//!
//! The teaching panel shows the record; in the 3D view ([`MicroscopeRenderPlugin`]) an
//! arrow at each contact point draws the cumulative impulse on body a up to the
//! iteration chosen with the panel's slider ([`Microscope::iteration`]).

use super::render::typical_size;
use super::sets::{SimulationStage, SimulationSystems};
use super::simulation::{EnergyHistory, SimControl, Simulation};
use super::view::{Selection, to_render};
use crate::energy::EnergySample;
use crate::microscope::{ImpactRecord, catch_next_impact, record_step};
use crate::world::World;
use bevy::prelude::*;

/// What the microscope is asked to do on the next update.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MicroscopeRequest {
    CatchNextImpact,
    ThisStep,
}

/// The microscope's state.
#[derive(Resource, Debug)]
pub struct Microscope {
    /// Whether the panel is shown (and the arrows drawn).
    pub open: bool,
    pub request: Option<MicroscopeRequest>,
    /// Most steps "catch next impact" takes. Default 3000.
    pub max_steps: u64,
    pub record: Option<ImpactRecord>,
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
            request: None,
            max_steps: 3000,
            record: None,
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
            request: self
                .catch_at_start
                .then_some(MicroscopeRequest::CatchNextImpact),
            ..default()
        })
        .add_systems(Update, run_microscope.in_set(SimulationStage::AfterSync));
    }
}

/// The sample [`World::step`] returned for the step just taken, rebuilt from the
/// world's ledger and state (the same expression as the step's).
pub fn step_sample(w: &World) -> EnergySample {
    w.ledger.sample(
        w.step_index,
        w.time,
        w.state_energy(w.last_report.elastic),
        w.contacts.len(),
    )
}

/// Carry out a microscope request (module doc).
pub fn run_microscope(
    mut m: ResMut<Microscope>,
    mut sim: ResMut<Simulation>,
    mut control: ResMut<SimControl>,
    mut history: ResMut<EnergyHistory>,
    selection: Option<Res<Selection>>,
) {
    let Some(request) = m.request.take() else {
        return;
    };
    m.open = true;
    control.paused = true;
    control.clear_backlog();
    sim.grab = None;
    sim.world.forces.clear();
    let body = selection.and_then(|s| s.body);
    let trace_was = sim.world.record_trace;
    let max = match request {
        MicroscopeRequest::CatchNextImpact => m.max_steps.max(1),
        MicroscopeRequest::ThisStep => 1,
    };
    let mut found = None;
    let mut error = None;
    for _ in 0..max {
        let r = match request {
            MicroscopeRequest::CatchNextImpact => catch_next_impact(&mut sim.world, body, 1),
            MicroscopeRequest::ThisStep => record_step(&mut sim.world).map(Some),
        };
        let r = match r {
            Ok(r) => r,
            Err(e) => {
                error = Some(e.at_step(sim.world.step_index + 1));
                break;
            }
        };
        let s = step_sample(&sim.world);
        sim.last_sample = s;
        history.push(s);
        if r.is_some() {
            found = r;
            break;
        }
    }
    sim.world.record_trace = trace_was;
    if let Some(e) = error {
        m.message = Some((e.clone(), false));
        sim.error = Some(e);
        return;
    }
    match found {
        Some(r) => {
            let who = body.map_or(String::new(), |b| format!(" of body {b}"));
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
            m.iteration = peak_iteration(&r).unwrap_or(r.iterations.len().saturating_sub(1));
            m.record = Some(r);
        }
        None => {
            m.message = Some((
                format!(
                    "no impact{} in {max} steps",
                    body.map_or(String::new(), |b| format!(" of body {b}"))
                ),
                false,
            ));
        }
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
