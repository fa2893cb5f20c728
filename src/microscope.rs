//! Collision microscope: one step's impact, iteration by iteration.
//!
//! [`record_step`] steps a world once with the solver's trace on and packs what the
//! world recorded ([`World::trace`], [`World::trace_frame`]) into an [`ImpactRecord`];
//! [`catch_next_impact`] steps until a step in which some contact (of a given body, if
//! asked) receives a non-zero impulse from the *solver* (the contact pass that follows
//! it is not traced).
//!
//! What a record holds, for a UI that scrubs through the iterations:
//! - the step's contacts (bodies, point, normal) with u_n before and after the solver;
//! - the ordered trace rows (paper 000 Fig. 4 / Fig. 6b for ETM: compression,
//!   restitution and separation increments; one row per impulse for SQM, SMM, jolt; one
//!   per contact and sweep for CCP and MDP);
//! - per iteration k the cumulative impulse at every contact, P_c(k) = Σ Δp_c over the
//!   rows of iterations ≤ k (the rows' `impulse` is the increment applied in that row,
//!   on body a, world frame);
//! - a summary: kinetic energy before and after the solver, the peak of the stored
//!   elastic energy W and the kinetic energy at that row (maximum compression: for one
//!   contact W_mc = K₀ − K_mc, paper 000 eqs. 62-64), the drift of K + W across the rows
//!   against K₀ + W₀ (0 for an exact single-contact ETM collision, paper 000 §7.1,
//!   eq. 69), the number of compression increments, and for the sequential methods
//!   (SQM, jolt) the order in which contacts were resolved (paper 000 App. A: SQM pops
//!   the most-approaching contact first).
//!
//! CSV export ([`ImpactRecord::write_csv`]): one line per trace row, header
//! [`CSV_HEADER`]; [`read_csv`] reads it back.

use crate::collision::Contact;
use crate::dynamics::solver::{SolverError, SolverKind, TraceRow};
use crate::math::Vec3;
use crate::world::World;
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};

/// One contact of the recorded step.
#[derive(Clone, Debug, PartialEq)]
pub struct ImpactContact {
    /// Body a (the trace's impulses act on it; `-impulse` acts on b).
    pub a: usize,
    /// Body b, `None` for a container.
    pub b: Option<usize>,
    /// The container when `b` is `None`.
    pub container: Option<usize>,
    /// World contact point (m).
    pub point: Vec3,
    /// Unit normal from b to a.
    pub normal: Vec3,
    /// Signed gap along the normal (m, negative: overlap; positive: speculative).
    pub gap: f64,
    /// Relative normal velocity before the solver (m/s).
    pub normal_velocity_before: f64,
    /// Relative normal velocity after the solver, before the contact pass (m/s).
    pub normal_velocity_after: f64,
}

impl ImpactContact {
    fn new(c: &Contact, before: f64, after: f64) -> Self {
        ImpactContact {
            a: c.a,
            b: c.b,
            container: c.container,
            point: c.point,
            normal: c.normal,
            gap: c.gap,
            normal_velocity_before: before,
            normal_velocity_after: after,
        }
    }

    /// Whether body `body` takes part in this contact.
    pub fn involves(&self, body: usize) -> bool {
        self.a == body || self.b == Some(body)
    }
}

/// Figures of one recorded step (module doc).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ImpactSummary {
    /// K₀: kinetic energy of all bodies after the velocity kick, before the solver (J).
    pub kinetic_before: f64,
    /// W₀: elastic energy stored before the solver (J; ETM only).
    pub elastic_before: f64,
    /// Kinetic energy after the solver, before the contact pass (J).
    pub kinetic_after: f64,
    /// Elastic energy left stored after the solver (J).
    pub elastic_after: f64,
    /// Largest total stored elastic energy over the rows, W_max (J; 0 if not tracked).
    pub elastic_peak: f64,
    /// Kinetic energy at the row of `elastic_peak` (maximum compression) (J); `None`
    /// when no row stores elastic energy.
    pub kinetic_at_max_compression: Option<f64>,
    /// max over rows |(K + W)_row − (K₀ + W₀)| (J). Zero for an exact conservative
    /// impact (ETM, e = 1, μ = 0, one contact); for a dissipative one (e < 1, friction)
    /// it includes the energy the impact dissipates, which is physical.
    pub energy_drift: f64,
    /// `energy_drift` / (K₀ + W₀) (NaN if that is 0).
    pub energy_drift_relative: f64,
    /// Number of rows in the "compression" stage (ETM).
    pub compression_iterations: usize,
    /// Contact index of each impulse in the order applied, for the sequential methods
    /// (SQM, jolt); empty for the others (SMM solves all contacts at once; ETM, CCP and
    /// MDP sweep them repeatedly: read the rows).
    pub resolution_order: Vec<usize>,
}

/// One step's impact (module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct ImpactRecord {
    /// 1-based index of the step (as `impulse-lab run --trace-collision STEP`).
    pub step: u64,
    /// Time at the start of the step (s).
    pub time: f64,
    /// Time step h (s).
    pub dt: f64,
    pub solver: SolverKind,
    /// The contacts the solver saw; the rows' `contact` indexes this list.
    pub contacts: Vec<ImpactContact>,
    /// The solver's trace rows, in order.
    pub rows: Vec<TraceRow>,
    /// The distinct `iteration` values of the rows, in order of appearance.
    pub iterations: Vec<u32>,
    /// `cumulative[k][c]`: impulse applied at contact c (on body a) by the end of
    /// iteration `iterations[k]` (N s).
    pub cumulative: Vec<Vec<Vec3>>,
    pub summary: ImpactSummary,
}

impl ImpactRecord {
    /// Cumulative impulse at every contact after iteration index `k` (clamped to the
    /// last); all zeros before any iteration.
    pub fn impulses_at(&self, k: usize) -> Vec<Vec3> {
        match self.cumulative.get(k).or(self.cumulative.last()) {
            Some(v) => v.clone(),
            None => vec![Vec3::zeros(); self.contacts.len()],
        }
    }

    /// Total impulse per contact over the step (N s).
    pub fn total_impulses(&self) -> Vec<Vec3> {
        self.impulses_at(usize::MAX)
    }

    /// Whether some contact (of `body`, if given) received a non-zero impulse.
    pub fn has_impulse(&self, body: Option<usize>) -> bool {
        self.rows.iter().any(|r| {
            r.impulse.iter().any(|&x| x != 0.0)
                && self
                    .contacts
                    .get(r.contact)
                    .is_some_and(|c| body.is_none_or(|b| c.involves(b)))
        })
    }

    /// Write the rows as CSV (header [`CSV_HEADER`]), with each row's contact bodies and
    /// the cumulative impulse at that contact after the row.
    pub fn write_csv<W: Write>(&self, out: W) -> csv::Result<()> {
        let mut w = csv::Writer::from_writer(out);
        let mut sum = vec![Vec3::zeros(); self.contacts.len()];
        for r in &self.rows {
            let c = &self.contacts[r.contact];
            sum[r.contact] += Vec3::from(r.impulse);
            let p = sum[r.contact];
            w.serialize(ImpactCsvRow {
                step: self.step,
                time: self.time,
                solver: self.solver.name().to_string(),
                iteration: r.iteration,
                stage: r.stage.to_string(),
                contact: r.contact,
                body_a: c.a,
                body_b: c.b,
                container: c.container,
                normal_velocity: r.normal_velocity,
                impulse_x: r.impulse[0],
                impulse_y: r.impulse[1],
                impulse_z: r.impulse[2],
                cumulative_x: p.x,
                cumulative_y: p.y,
                cumulative_z: p.z,
                elastic_energy: r.elastic_energy,
                elastic_total: r.elastic_total,
                kinetic_energy: r.kinetic_energy,
                total_energy: r.total_energy,
            })?;
        }
        if self.rows.is_empty() {
            w.write_record(CSV_HEADER)?;
        }
        w.flush()?;
        Ok(())
    }
}

/// The CSV columns of [`ImpactRecord::write_csv`].
pub const CSV_HEADER: [&str; 20] = [
    "step",
    "time",
    "solver",
    "iteration",
    "stage",
    "contact",
    "body_a",
    "body_b",
    "container",
    "normal_velocity",
    "impulse_x",
    "impulse_y",
    "impulse_z",
    "cumulative_x",
    "cumulative_y",
    "cumulative_z",
    "elastic_energy",
    "elastic_total",
    "kinetic_energy",
    "total_energy",
];

/// One CSV line of an impact record (the columns of [`CSV_HEADER`]; `body_b` and
/// `container` are empty when absent).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ImpactCsvRow {
    pub step: u64,
    pub time: f64,
    pub solver: String,
    pub iteration: u32,
    pub stage: String,
    pub contact: usize,
    pub body_a: usize,
    pub body_b: Option<usize>,
    pub container: Option<usize>,
    pub normal_velocity: f64,
    pub impulse_x: f64,
    pub impulse_y: f64,
    pub impulse_z: f64,
    pub cumulative_x: f64,
    pub cumulative_y: f64,
    pub cumulative_z: f64,
    pub elastic_energy: f64,
    pub elastic_total: f64,
    pub kinetic_energy: f64,
    pub total_energy: f64,
}

/// Read the rows of [`ImpactRecord::write_csv`] back (checks the header).
pub fn read_csv<R: Read>(input: R) -> Result<Vec<ImpactCsvRow>, String> {
    let mut r = csv::Reader::from_reader(input);
    let header = r.headers().map_err(|e| e.to_string())?.clone();
    if header.iter().ne(CSV_HEADER.iter().copied()) {
        return Err(format!(
            "unexpected header {:?}, expected {:?}",
            header, CSV_HEADER
        ));
    }
    r.deserialize()
        .map(|row| row.map_err(|e| e.to_string()))
        .collect()
}

/// Step `world` once with the trace on and return that step's record (possibly without
/// impulses: check [`ImpactRecord::has_impulse`]).
pub fn record_step(world: &mut World) -> Result<ImpactRecord, SolverError> {
    let time = world.time;
    world.record_trace = true;
    world.step()?;
    Ok(pack(world, time))
}

/// Step `world` (trace on) until a step in which a contact, of `body` if given, receives
/// a non-zero impulse from the solver, at most `max_steps` steps; `None` if none did.
pub fn catch_next_impact(
    world: &mut World,
    body: Option<usize>,
    max_steps: u64,
) -> Result<Option<ImpactRecord>, SolverError> {
    for _ in 0..max_steps {
        let record = record_step(world)?;
        if record.has_impulse(body) {
            return Ok(Some(record));
        }
    }
    Ok(None)
}

/// The record of the step `world` just took with `record_trace` on, which started at
/// time `time` (what [`record_step`] returns; for a caller that steps the world its own
/// way, e.g. with applied forces).
pub fn pack(world: &World, time: f64) -> ImpactRecord {
    let frame = &world.trace_frame;
    let rows = world.trace.clone();
    let contacts: Vec<ImpactContact> = frame
        .contacts
        .iter()
        .enumerate()
        .map(|(i, c)| {
            ImpactContact::new(
                c,
                frame.normal_velocity_before[i],
                frame.normal_velocity_after[i],
            )
        })
        .collect();
    // Cumulative impulse per contact at the end of each distinct iteration.
    let mut iterations = Vec::new();
    let mut cumulative: Vec<Vec<Vec3>> = Vec::new();
    let mut sum = vec![Vec3::zeros(); contacts.len()];
    for (k, r) in rows.iter().enumerate() {
        debug_assert!(r.contact < contacts.len(), "trace row names a contact");
        sum[r.contact] += Vec3::from(r.impulse);
        let last_of_iteration = rows.get(k + 1).is_none_or(|n| n.iteration != r.iteration);
        if last_of_iteration {
            iterations.push(r.iteration);
            cumulative.push(sum.clone());
        }
    }
    let e0 = frame.kinetic_before + frame.elastic_before;
    let energy_drift = rows
        .iter()
        .map(|r| (r.total_energy - e0).abs())
        .fold(0.0, f64::max);
    let peak = rows
        .iter()
        .filter(|r| r.elastic_total > 0.0)
        .max_by(|x, y| x.elastic_total.total_cmp(&y.elastic_total));
    let resolution_order = if world.solver().sequential() {
        rows.iter().map(|r| r.contact).collect()
    } else {
        Vec::new()
    };
    let summary = ImpactSummary {
        kinetic_before: frame.kinetic_before,
        elastic_before: frame.elastic_before,
        kinetic_after: frame.kinetic_after,
        elastic_after: frame.elastic_after,
        elastic_peak: peak.map_or(0.0, |r| r.elastic_total),
        kinetic_at_max_compression: peak.map(|r| r.kinetic_energy),
        energy_drift,
        energy_drift_relative: if e0 == 0.0 {
            f64::NAN
        } else {
            energy_drift / e0
        },
        compression_iterations: rows.iter().filter(|r| r.stage == "compression").count(),
        resolution_order,
    };
    ImpactRecord {
        step: frame.step,
        time,
        dt: world.dt,
        solver: world.solver_kind(),
        contacts,
        rows,
        iterations,
        cumulative,
        summary,
    }
}

/// Finds impacts as a run goes, without the solver's trace: a step in which contacts
/// change some body's motion sharply, as a collision does and a resting, sliding or
/// rolling contact does not (the app's "pause at the next impact").
///
/// For each dynamic body the change over the step that the applied forces and gravity
/// do not explain is the contacts' impulse J (with moment M about the centre):
/// J/m = v⁺ − v⁻ − h (g + F/m) and M = I⁺ω⁺ − I⁻ω⁻ − h τ (angular momentum about the
/// centre, world frame; torque-free it is conserved). A body's contact speed change is
/// s = max(|J|/m, |M|/(m R)), R its bounding radius (an impulse J at a point within R
/// of the centre has |M| ≤ R |J|, so s ≤ |J|/m for a single impulse; the second term
/// catches a twist). A resting contact carries about m |g| h per step, a rolling or
/// sliding one at most μ times more; a step is an impact when some body's s exceeds
/// [`ImpactWatch::threshold`] = max(20 |g| h, [`ImpactWatch::MIN_SPEED`]). Only the
/// first step of a run of impact steps counts (a collision that lasts several steps, or
/// a body bouncing on, is one impact until a step without one).
#[derive(Clone, Debug, Default)]
pub struct ImpactWatch {
    /// v⁻ and I⁻ω⁻ of every body at the start of the step.
    before: Vec<(Vec3, Vec3)>,
    /// Whether the last step was an impact step.
    in_impact: bool,
}

impl ImpactWatch {
    /// Least contact speed change (m/s) that counts as an impact without gravity.
    pub const MIN_SPEED: f64 = 0.01;

    /// The contact speed change above which a step is an impact (type doc).
    pub fn threshold(world: &World) -> f64 {
        (20.0 * world.gravity.norm() * world.dt).max(Self::MIN_SPEED)
    }

    /// Remember the bodies' motion before `world` steps.
    pub fn before_step(&mut self, world: &World) {
        self.before.clear();
        self.before.extend(
            world
                .bodies
                .iter()
                .map(|b| (b.velocity, b.inertia_world() * b.angular_velocity)),
        );
    }

    /// After the step: the body with the largest contact speed change, if the step is
    /// the first of an impact (type doc). Bodies added during the step are skipped.
    pub fn after_step(&mut self, world: &World) -> Option<usize> {
        let h = world.dt;
        let n = world.bodies.len().min(self.before.len());
        let mut wrench = vec![(Vec3::zeros(), Vec3::zeros()); n];
        for f in world.forces.iter().filter(|f| f.body < n) {
            wrench[f.body].0 += f.force;
            wrench[f.body].1 += f.offset.cross(&f.force);
        }
        let mut worst: Option<(usize, f64)> = None;
        for (i, b) in world.bodies.iter().enumerate().take(n) {
            if b.is_static() || world.is_sleeping(i) {
                continue;
            }
            let (v0, l0) = self.before[i];
            let (force, torque) = wrench[i];
            let j = b.velocity - v0 - h * (world.gravity + force * b.inv_mass);
            let m = b.inertia_world() * b.angular_velocity - l0 - h * torque;
            let r = b.shape.bounding_radius().max(1e-9);
            let s = j.norm().max(m.norm() * b.inv_mass / r);
            if s.is_finite() && worst.is_none_or(|(_, w)| s > w) {
                worst = Some((i, s));
            }
        }
        let hit = worst.filter(|&(_, s)| s > Self::threshold(world));
        let first = hit.is_some() && !self.in_impact;
        self.in_impact = hit.is_some();
        hit.filter(|_| first).map(|(i, _)| i)
    }
}
