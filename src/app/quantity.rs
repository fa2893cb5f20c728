//! What the plots show: the energy ledger or one quantity of the run over time
//! ([`QUANTITIES`]), for the current run and for the runs the user pinned
//! ([`Plots`]), in up to [`MAX_PLOTS`] plots stacked in the energy panel.
//!
//! - A quantity is read from the run's traces, one value per step: the energy samples
//!   ([`EnergySample`], every ledger column and the contact count) or the probe samples
//!   the physics thread records beside them ([`ProbeSample`]: the method's iterations
//!   and contact-pass sweeps, the repose experiment's slope every
//!   [`ProbeSample::SLOPE_EVERY`] steps, and the probed body's height, speed and spin).
//! - The probed body is the selected one, else the first dynamic body; its trace starts
//!   when it is first probed, and a curve only uses the samples of the body it names.
//! - Pinning keeps a copy of the run's traces under a label naming the method and the
//!   parameters it reads that a comparison usually varies (e, μ, λ). The ledger plot
//!   shows the current run's series; a plot of one quantity overlays every run, one
//!   colour and legend entry each (the current run in the theme's strong text colour,
//!   the pinned runs in the Okabe-Ito colours of [`PIN_COLORS`]).

use super::messages::{PlotRequest, StatusMessage};
use super::plot::{Curve, SeriesColor, Style, thin};
use super::sim_state::{EnergyHistory, ProbeSample, Simulation};
use crate::dynamics::solver::{Param, SolverKind};
use crate::energy::EnergySample;
use bevy::prelude::*;
use bevy_egui::egui;
use std::collections::VecDeque;

/// Where a quantity's values come from.
#[derive(Clone, Copy)]
pub enum Source {
    /// The energy ledger's series, switched on and off in its legend.
    Ledger,
    /// A function of an energy sample and PE₀ (the potential energy of the first sample).
    Energy(fn(&EnergySample, f64) -> f64),
    /// A function of a probe sample (the run's effort, the pile's slope), where the
    /// sample has it.
    Probe(fn(&ProbeSample) -> Option<f64>),
    /// A function of the probed body's record.
    Body(fn(&super::sim_state::BodyProbe) -> f64),
}

/// A plottable quantity.
pub struct Quantity {
    /// Its name in scripts and exported files.
    pub id: &'static str,
    /// Its name in the picker and on the y axis.
    pub label: &'static str,
    /// SI unit ("" for a count).
    pub unit: &'static str,
    pub source: Source,
}

/// Every quantity the picker offers; the first is the ledger.
pub const QUANTITIES: &[Quantity] = &[
    Quantity {
        id: "ledger",
        label: "energy ledger",
        unit: "J",
        source: Source::Ledger,
    },
    Quantity {
        id: "kinetic",
        label: "kinetic energy",
        unit: "J",
        source: Source::Energy(|s, _| s.kinetic),
    },
    Quantity {
        id: "kinetic_translational",
        label: "kinetic energy (translational)",
        unit: "J",
        source: Source::Energy(|s, _| s.kinetic_translational),
    },
    Quantity {
        id: "kinetic_rotational",
        label: "kinetic energy (rotational)",
        unit: "J",
        source: Source::Energy(|s, _| s.kinetic_rotational),
    },
    Quantity {
        id: "potential",
        label: "potential energy − PE₀",
        unit: "J",
        source: Source::Energy(|s, pe0| s.potential - pe0),
    },
    Quantity {
        id: "total",
        label: "total energy − PE₀",
        unit: "J",
        source: Source::Energy(|s, pe0| s.total - pe0),
    },
    Quantity {
        id: "elastic",
        label: "elastic energy",
        unit: "J",
        source: Source::Energy(|s, _| s.elastic),
    },
    Quantity {
        id: "dissipated_restitution",
        label: "dissipated (restitution)",
        unit: "J",
        source: Source::Energy(|s, _| s.dissipated_restitution),
    },
    Quantity {
        id: "dissipated_friction",
        label: "dissipated (friction)",
        unit: "J",
        source: Source::Energy(|s, _| s.dissipated_friction),
    },
    Quantity {
        id: "external_work",
        label: "external work",
        unit: "J",
        source: Source::Energy(|s, _| s.external_work),
    },
    Quantity {
        id: "projection",
        label: "position projection",
        unit: "J",
        source: Source::Energy(|s, _| s.projection),
    },
    Quantity {
        id: "integration",
        label: "integration",
        unit: "J",
        source: Source::Energy(|s, _| s.integration),
    },
    Quantity {
        id: "residual",
        label: "residual (artificial)",
        unit: "J",
        source: Source::Energy(|s, _| s.residual),
    },
    Quantity {
        id: "contacts",
        label: "contacts",
        unit: "",
        source: Source::Energy(|s, _| s.contacts as f64),
    },
    Quantity {
        id: "iterations",
        label: "solver iterations",
        unit: "",
        source: Source::Probe(|p| Some(f64::from(p.iterations))),
    },
    Quantity {
        id: "contact_sweeps",
        label: "contact-pass sweeps",
        unit: "",
        source: Source::Probe(|p| Some(f64::from(p.contact_sweeps))),
    },
    Quantity {
        id: "repose_slope",
        label: "repose slope",
        unit: "°",
        source: Source::Probe(|p| p.slope_deg),
    },
    Quantity {
        id: "body_height",
        label: "body height",
        unit: "m",
        source: Source::Body(|b| b.height),
    },
    Quantity {
        id: "body_speed",
        label: "body speed",
        unit: "m/s",
        source: Source::Body(|b| b.speed),
    },
    Quantity {
        id: "body_spin",
        label: "body spin",
        unit: "rad/s",
        source: Source::Body(|b| b.spin),
    },
];

/// The quantity with script/file id `id`.
pub fn quantity_by_id(id: &str) -> Option<usize> {
    QUANTITIES.iter().position(|q| q.id == id)
}

/// At most this many plots are stacked.
pub const MAX_PLOTS: usize = 3;
/// At most this many runs are pinned (a pin holds up to two traces of 200,000 steps).
pub const MAX_PINS: usize = 8;

/// Okabe-Ito colours of the pinned runs in pin order (on a dark panel, on a light one):
/// vermillion, sky blue, bluish green, orange, reddish purple, blue, yellow.
pub const PIN_COLORS: [SeriesColor; 7] = [
    SeriesColor::Rgb([213, 94, 0], [213, 94, 0]),
    SeriesColor::Rgb([86, 180, 233], [0, 114, 178]),
    SeriesColor::Rgb([0, 158, 115], [0, 158, 115]),
    SeriesColor::Rgb([230, 159, 0], [230, 159, 0]),
    SeriesColor::Rgb([204, 121, 167], [204, 121, 167]),
    SeriesColor::Rgb([0, 114, 178], [86, 180, 233]),
    SeriesColor::Rgb([240, 228, 66], [150, 130, 0]),
];

/// A pinned run's traces: a copy of the run's [`EnergyHistory`] when it was pinned.
#[derive(Clone, Debug, Default)]
pub struct RunTrace {
    /// Names the run in the legend.
    pub label: String,
    /// The scene's name (a pinned run of another scene says so in the legend).
    pub scene: String,
    pub samples: VecDeque<EnergySample>,
    pub probes: VecDeque<ProbeSample>,
    /// The potential energy of the run's first sample.
    pub pe0: f64,
}

/// A run's traces as the plots read them, borrowed: a pinned run's ([`RunTrace::view`])
/// or the current run's, straight from its [`EnergyHistory`] ([`current_view`]).
#[derive(Clone, Copy, Debug)]
pub struct Trace<'a> {
    pub label: &'a str,
    pub scene: &'a str,
    pub samples: &'a VecDeque<EnergySample>,
    pub probes: &'a VecDeque<ProbeSample>,
    pub pe0: f64,
}

impl RunTrace {
    pub fn view(&self) -> Trace<'_> {
        Trace {
            label: &self.label,
            scene: &self.scene,
            samples: &self.samples,
            probes: &self.probes,
            pe0: self.pe0,
        }
    }
}

impl PinnedRun {
    /// " (scene NAME)" when the run is of another scene than `current`, else "".
    pub fn scene_note(&self, current: &str) -> String {
        if self.trace.scene == current {
            String::new()
        } else {
            format!(" ({})", self.trace.scene)
        }
    }
}

/// A pinned run.
#[derive(Clone, Debug)]
pub struct PinnedRun {
    pub trace: RunTrace,
    /// Its colour: an index into [`PIN_COLORS`] (kept when other pins are removed).
    pub color: usize,
    /// Whether its curves are drawn (its legend entry switches it).
    pub shown: bool,
}

/// The plots: what each stacked plot shows, and the runs the user pinned to compare the
/// current run with.
#[derive(Resource, Debug)]
pub struct Plots {
    /// The stacked plots, top first: each an index into [`QUANTITIES`] (at least one, at
    /// most [`MAX_PLOTS`]).
    pub layout: Vec<usize>,
    pub pins: Vec<PinnedRun>,
    /// Pins so far (the next pin's number and colour).
    pinned: usize,
}

impl Default for Plots {
    fn default() -> Self {
        Plots {
            layout: vec![0],
            pins: Vec::new(),
            pinned: 0,
        }
    }
}

impl Plots {
    /// Pin a copy of `trace` (the oldest pin goes past [`MAX_PINS`]). A top plot showing
    /// the ledger (the current run only) switches to the kinetic energy, where the runs
    /// are overlaid.
    pub fn pin(&mut self, mut trace: RunTrace) {
        if self.pins.len() >= MAX_PINS {
            self.pins.remove(0);
        }
        self.pinned += 1;
        trace.label = format!("#{}: {}", self.pinned, trace.label);
        self.pins.push(PinnedRun {
            trace,
            color: (self.pinned - 1) % PIN_COLORS.len(),
            shown: true,
        });
        if self.layout.first() == Some(&0) {
            self.layout[0] = quantity_by_id("kinetic").unwrap_or(0);
        }
    }

    /// Pin the run of `sim` and `history` ([`Plots::pin`]); returns the status line
    /// that says so.
    pub fn pin_current(&mut self, sim: &Simulation, history: &EnergyHistory) -> String {
        let trace = current_trace(sim, history);
        let said = format!("pinned: {}", trace.label);
        self.pin(trace);
        said
    }

    /// Show quantity `q` in plot `k` (one past the last adds a plot, up to
    /// [`MAX_PLOTS`]).
    pub fn show(&mut self, k: usize, q: usize) {
        if k < self.layout.len() {
            self.layout[k] = q;
        } else if self.layout.len() < MAX_PLOTS {
            self.layout.push(q);
        }
    }
}

/// The label of the run `sim` holds: the method and the values of e, μ and λ where it
/// reads them.
pub fn run_label(sim: &Simulation) -> String {
    let kind: SolverKind = sim.world.solver_kind();
    let read = kind.parameters();
    let p = &sim.world.params;
    let mut label = kind.name().to_string();
    for (param, symbol, value) in [
        (Param::Restitution, "e", p.restitution),
        (Param::Friction, "μ", p.friction),
        (Param::Lambda, "λ", p.lambda),
    ] {
        if read.contains(&param) {
            label.push_str(&format!(", {symbol} = {}", short_number(value)));
        }
    }
    label
}

/// A parameter value in at most 4 significant digits, without trailing zeros.
fn short_number(v: f64) -> String {
    let s = format!("{:.4}", v);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() || s == "-" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// Adds [`Plots`], carries out [`PlotRequest`]s and keeps the physics thread probing
/// the body the plots show ([`probed_body`]).
pub struct PlotQuantityPlugin;

impl Plugin for PlotQuantityPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<Plots>()
            .init_resource::<super::view::Selection>()
            .add_message::<PlotRequest>()
            .add_message::<StatusMessage>()
            .add_systems(
                Update,
                (handle_plot_requests, probe_selected_body).before(super::sets::SimulationSystems),
            );
    }
}

fn handle_plot_requests(
    mut requests: MessageReader<PlotRequest>,
    mut plots: ResMut<Plots>,
    sim: Res<Simulation>,
    history: Res<EnergyHistory>,
    mut status: MessageWriter<StatusMessage>,
) {
    for request in requests.read() {
        match request {
            PlotRequest::Pin => {
                let said = plots.pin_current(&sim, &history);
                status.write(StatusMessage::from((said, true)));
            }
            PlotRequest::Show { plot, quantity } => match quantity_by_id(quantity) {
                Some(q) => plots.show(*plot, q),
                None => {
                    status.write(StatusMessage::from((
                        format!("no quantity '{quantity}' to plot"),
                        false,
                    )));
                }
            },
        }
    }
}

fn probe_selected_body(
    sim: Res<Simulation>,
    selection: Res<super::view::Selection>,
    mut control: ResMut<super::sim_state::SimControl>,
) {
    let body = probed_body(&sim, selection.body);
    if control.probe_body != body {
        control.probe_body = body;
    }
}

/// A copy of the current run's traces from `history`, named by `sim` (to pin it).
pub fn current_trace(sim: &Simulation, history: &EnergyHistory) -> RunTrace {
    RunTrace {
        label: run_label(sim),
        scene: sim.scene.name.clone(),
        samples: history.samples.clone(),
        probes: history.probes.clone(),
        pe0: history.samples.front().map_or(0.0, |s| s.potential),
    }
}

/// The current run's traces in `history`, borrowed, named `label` ([`run_label`]).
pub fn current_view<'a>(
    label: &'a str,
    sim: &'a Simulation,
    history: &'a EnergyHistory,
) -> Trace<'a> {
    Trace {
        label,
        scene: &sim.scene.name,
        samples: &history.samples,
        probes: &history.probes,
        pe0: history.samples.front().map_or(0.0, |s| s.potential),
    }
}

/// The body the plots probe: the selected one, else the first dynamic body.
pub fn probed_body(sim: &Simulation, selected: Option<usize>) -> Option<usize> {
    selected
        .filter(|&i| i < sim.world.bodies.len())
        .or_else(|| sim.world.bodies.iter().position(|b| !b.is_static()))
}

/// The points of quantity `q` over `trace` with times in `range`; body quantities use
/// the samples of body `body` only.
pub fn points(q: &Quantity, trace: &Trace, range: [f64; 2], body: Option<usize>) -> Vec<[f64; 2]> {
    fn within<T>(
        items: &VecDeque<T>,
        time: impl Fn(&T) -> f64,
        [a, b]: [f64; 2],
    ) -> std::collections::vec_deque::Iter<'_, T> {
        let first = items.partition_point(|s| time(s) < a);
        let end = items.partition_point(|s| time(s) <= b);
        items.range(first..end.max(first))
    }
    match q.source {
        Source::Ledger => Vec::new(),
        Source::Energy(f) => thin(within(trace.samples, |s| s.time, range))
            .into_iter()
            .map(|s| [s.time, f(s, trace.pe0)])
            .collect(),
        Source::Probe(f) => {
            let some: Vec<[f64; 2]> = within(trace.probes, |s| s.time, range)
                .filter_map(|s| f(s).map(|v| [s.time, v]))
                .collect();
            thin(some.iter()).into_iter().copied().collect()
        }
        Source::Body(f) => {
            let of_body: Vec<[f64; 2]> = within(trace.probes, |s| s.time, range)
                .filter_map(|s| {
                    s.body
                        .filter(|b| Some(b.index) == body)
                        .map(|b| [s.time, f(&b)])
                })
                .collect();
            thin(of_body.iter()).into_iter().copied().collect()
        }
    }
}

/// The time range a plot shows for a current run from `t0` to `t1` and a time window
/// `window` (s, 0 = everything): the window's last seconds, or its first while the run
/// is shorter (as the plot's axis, `plot::energy_bounds`). Pinned runs are drawn over
/// the same range, so runs are compared at equal times.
pub fn shown_range(t0: f64, t1: f64, window: f64) -> [f64; 2] {
    if window > 0.0 {
        [t0.max(t1 - window), t1.max(t0 + window)]
    } else {
        [f64::NEG_INFINITY, f64::INFINITY]
    }
}

/// The body a pinned run's body quantities show: the one it probed last.
pub fn trace_body(trace: &Trace) -> Option<usize> {
    trace
        .probes
        .iter()
        .rev()
        .find_map(|p| p.body.map(|b| b.index))
}

/// The curves of quantity `q` for the current run and the shown pinned runs, over the
/// current run's time window ([`shown_range`]).
pub fn run_curves(
    q: &Quantity,
    current: &Trace,
    body: Option<usize>,
    pins: &[PinnedRun],
    window: f64,
    visuals: &egui::Visuals,
) -> Vec<Curve> {
    let t0 = current.samples.front().map_or(0.0, |s| s.time);
    let t1 = current.samples.back().map_or(t0, |s| s.time);
    let range = shown_range(t0, t1, window);
    let body_suffix = |b: Option<usize>| match (q.source, b) {
        (Source::Body(_), Some(i)) => format!(" (body {i})"),
        _ => String::new(),
    };
    let mut curves = Vec::new();
    for pin in pins.iter().filter(|p| p.shown) {
        let trace = pin.trace.view();
        let b = trace_body(&trace);
        curves.push(Curve {
            name: format!(
                "{}{}{}",
                pin.trace.label,
                pin.scene_note(current.scene),
                body_suffix(b)
            ),
            color: PIN_COLORS[pin.color % PIN_COLORS.len()].resolve(visuals),
            style: Style::Solid,
            points: points(q, &trace, range, b),
        });
    }
    curves.push(Curve {
        name: format!("now: {}{}", current.label, body_suffix(body)),
        color: SeriesColor::Text.resolve(visuals),
        style: Style::Solid,
        points: points(q, current, range, body),
    });
    curves
}

/// Write `plots` (a quantity's name and its curves) as CSV rows
/// `plot,quantity,unit,run,time,value`, whole or not at all; returns the row count.
pub fn export_curves(
    path: &std::path::Path,
    plots: &[(&Quantity, Vec<Curve>)],
) -> Result<usize, String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let out = crate::output::OutputFile::create(path).map_err(|e| e.to_string())?;
    let mut w = csv::Writer::from_writer(out);
    let err = |e: csv::Error| format!("{}: {e}", path.display());
    w.write_record(["plot", "quantity", "unit", "run", "time", "value"])
        .map_err(err)?;
    let mut rows = 0;
    for (k, (q, curves)) in plots.iter().enumerate() {
        for c in curves {
            for p in &c.points {
                w.write_record([
                    (k + 1).to_string(),
                    q.id.to_string(),
                    q.unit.to_string(),
                    c.name.clone(),
                    p[0].to_string(),
                    p[1].to_string(),
                ])
                .map_err(err)?;
                rows += 1;
            }
        }
    }
    w.into_inner()
        .map_err(|e| format!("{}: {}", path.display(), e.error()))?
        .commit()
        .map_err(|e| e.to_string())?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(step: u64, kinetic: f64) -> EnergySample {
        EnergySample {
            step,
            time: step as f64 * 0.01,
            kinetic,
            ..Default::default()
        }
    }

    #[test]
    fn quantity_ids_are_unique_and_the_ledger_comes_first() {
        assert!(matches!(QUANTITIES[0].source, Source::Ledger));
        for (i, q) in QUANTITIES.iter().enumerate() {
            assert_eq!(quantity_by_id(q.id), Some(i), "{}", q.id);
        }
    }

    /// A body quantity reads only the samples of the body it names, and the window cuts
    /// at the run's own end.
    #[test]
    fn points_follow_the_named_body_and_the_window() {
        let probe = |step: u64, index: usize, height: f64| ProbeSample {
            step,
            time: step as f64 * 0.01,
            body: Some(super::super::sim_state::BodyProbe {
                index,
                height,
                speed: 0.0,
                spin: 0.0,
            }),
            ..Default::default()
        };
        let trace = RunTrace {
            label: "run".into(),
            samples: (0..=10).map(|k| sample(k, k as f64)).collect(),
            probes: [probe(1, 0, 1.0), probe(2, 3, 2.0), probe(3, 3, 3.0)].into(),
            pe0: 0.0,
            ..Default::default()
        };
        let all = shown_range(0.0, 0.1, 0.0);
        let height = &QUANTITIES[quantity_by_id("body_height").unwrap()];
        assert_eq!(
            points(height, &trace.view(), all, Some(3)),
            vec![[0.02, 2.0], [0.03, 3.0]]
        );
        assert_eq!(
            points(height, &trace.view(), all, Some(0)),
            vec![[0.01, 1.0]]
        );
        let kinetic = &QUANTITIES[quantity_by_id("kinetic").unwrap()];
        // The last 0.025 s of a run at 0.1 s.
        let last = points(kinetic, &trace.view(), shown_range(0.0, 0.1, 0.025), None);
        assert_eq!(last, vec![[0.08, 8.0], [0.09, 9.0], [0.1, 10.0]]);
        // A run at 0.03 s with a 0.055 s window: its first 0.055 s (a pinned run's too).
        let first = points(kinetic, &trace.view(), shown_range(0.0, 0.03, 0.055), None);
        assert_eq!(first.len(), 6);
    }

    /// The repose slope is measured every `SLOPE_EVERY` steps while an experiment runs,
    /// as the experiment's own measurement of the pile as it stands; the plot draws
    /// those samples only.
    #[test]
    fn the_slope_is_the_experiments_measurement_every_few_steps() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/repose_tiny.ron"
        );
        let mut sim = Simulation::load(path, None).unwrap();
        let none = ProbeSample::of(&sim, None);
        assert_eq!(none.slope_deg, None, "no experiment, no slope");
        sim.start_repose(crate::repose::ReposeConfig::for_scene(&sim.scene))
            .unwrap();
        let mut trace = RunTrace::default();
        for _ in 0..2 * ProbeSample::SLOPE_EVERY {
            sim.step().unwrap();
            let p = ProbeSample::of(&sim, None);
            let measured = sim.repose.as_ref().unwrap().measure_now(&sim.world);
            if sim
                .world
                .step_index
                .is_multiple_of(ProbeSample::SLOPE_EVERY)
            {
                assert_eq!(p.slope_deg, Some(measured.unwrap().angle_deg));
            } else {
                assert_eq!(p.slope_deg, None);
            }
            trace.probes.push_back(p);
        }
        let slope = &QUANTITIES[quantity_by_id("repose_slope").unwrap()];
        let drawn = points(slope, &trace.view(), shown_range(0.0, 1.0, 0.0), None);
        assert_eq!(drawn.len(), 2);
    }

    #[test]
    fn pins_are_numbered_and_coloured_in_order_and_capped() {
        let mut plots = Plots::default();
        for k in 0..MAX_PINS + 2 {
            plots.pin(RunTrace {
                label: format!("e = {k}"),
                ..Default::default()
            });
        }
        // The ledger shows the current run only: pinning switched to kinetic energy.
        assert_eq!(plots.layout, vec![quantity_by_id("kinetic").unwrap()]);
        let pins = &plots.pins;
        assert_eq!(pins.len(), MAX_PINS);
        assert_eq!(pins[0].trace.label, "#3: e = 2");
        assert_eq!(pins[0].color, 2);
        let last = pins.last().unwrap();
        assert_eq!(
            last.trace.label,
            format!("#{}: e = {}", MAX_PINS + 2, MAX_PINS + 1)
        );
        assert_eq!(last.color, (MAX_PINS + 1) % PIN_COLORS.len());
    }

    /// A run pinned on another scene says which in the legend; one of the same scene
    /// does not repeat it.
    #[test]
    fn a_pin_of_another_scene_names_it() {
        let mut plots = Plots::default();
        plots.pin(RunTrace {
            label: "jolt, e = 0.3".into(),
            scene: "Pour: mixed".into(),
            ..Default::default()
        });
        let pin = &plots.pins[0];
        assert_eq!(pin.scene_note("Pour: mixed"), "");
        assert_eq!(pin.scene_note("Bounce: a dropped ball"), " (Pour: mixed)");
        let current = RunTrace {
            scene: "Bounce: a dropped ball".into(),
            ..Default::default()
        };
        let kinetic = &QUANTITIES[quantity_by_id("kinetic").unwrap()];
        let curves = run_curves(
            kinetic,
            &current.view(),
            None,
            &plots.pins,
            0.0,
            &egui::Visuals::dark(),
        );
        assert_eq!(curves[0].name, "#1: jolt, e = 0.3 (Pour: mixed)");
    }

    #[test]
    fn parameter_values_are_short() {
        assert_eq!(short_number(0.3), "0.3");
        assert_eq!(short_number(30.0), "30");
        assert_eq!(short_number(0.0), "0");
        assert_eq!(short_number(0.12345), "0.1235");
    }
}
