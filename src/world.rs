//! The simulated world and its fixed time step.
//!
//! One step of length h, in named phases (the same names label the benchmark's columns):
//! 1. **detect**: broad phase, then narrow phase → contacts at the current positions xₙ;
//! 2. **integrate velocities**: v⁻ = vₙ + h (g + F/m), ω⁻ from the rotation integrator;
//! 3. **resolve collisions**: the collision solver turns v⁻, ω⁻ into v⁺, ω⁺ (and may
//!    project positions); then **resolve contacts**: the shock-propagation pass settles
//!    what the solver left approaching (`dynamics::contact_pass`);
//! 4. **integrate positions**: xₙ₊₁ = xₙ + h v⁺ (semi-implicit Euler), or
//!    xₙ₊₁ = xₙ + h (vₙ + v⁺)/2 for a solver formulated with Newmark (CCP, paper 002
//!    eq. 51; [`CollisionSolver::position_update`]), orientation by the rotation integrator;
//! 5. **measure energy**: the ledger books the solver's dissipation and the integration
//!    error, and samples the state.

use crate::body::RigidBody;
use crate::collision::{CollisionPipeline, Contact};
use crate::container::Container;
use crate::dynamics::contact_pass::ContactPass;
use crate::dynamics::rotation::RotationIntegrator;
use crate::dynamics::solver::{
    CollisionSolver, PositionUpdate, SolverContext, SolverError, SolverKind, SolverParams,
    SolverReport, TraceRow,
};
use crate::energy::{EnergyLedger, EnergySample, StateEnergy};
use crate::math::Vec3;
use std::time::{Duration, Instant};

/// Wall-clock time spent in each phase of the last step.
#[derive(Clone, Copy, Debug, Default)]
pub struct PhaseTimes {
    pub broad_phase: Duration,
    pub narrow_phase: Duration,
    pub solve: Duration,
    pub contact_pass: Duration,
    pub integrate: Duration,
    pub measure: Duration,
}

/// An external force applied to a body every step (not gravity): a point force `force`
/// (N, world) at the body-fixed offset `offset` (m, world-aligned, from the centre of mass).
#[derive(Clone, Debug, PartialEq)]
pub struct AppliedForce {
    pub body: usize,
    pub force: Vec3,
    pub offset: Vec3,
}

pub struct World {
    pub bodies: Vec<RigidBody>,
    pub containers: Vec<Container>,
    pub gravity: Vec3,
    /// Time step h (s).
    pub dt: f64,
    pub time: f64,
    pub step_index: u64,
    pub params: SolverParams,
    pub rotation: RotationIntegrator,
    pub forces: Vec<AppliedForce>,
    /// Contacts of the last step (for display and diagnostics).
    pub contacts: Vec<Contact>,
    pub ledger: EnergyLedger,
    pub last_report: SolverReport,
    pub last_times: PhaseTimes,
    /// Contacts are generated for gaps below this distance (m); solvers treat contacts with
    /// a positive gap as speculative. Default: 0.005.
    pub contact_margin: f64,
    /// When true, the next step records the solver's inner iterations into `trace`
    /// (and clears this flag).
    pub record_trace: bool,
    /// The last recorded collision trace.
    pub trace: Vec<TraceRow>,
    solver: Box<dyn CollisionSolver>,
    collision: CollisionPipeline,
    contact_pass: ContactPass,
    /// Scratch, reused every step: start-of-step linear and angular velocities, applied
    /// (force, torque).
    velocity_start: Vec<Vec3>,
    omega_start: Vec<Vec3>,
    wrench: Vec<(Vec3, Vec3)>,
}

impl World {
    /// An empty world stepping with `solver`.
    pub fn new(
        gravity: Vec3,
        dt: f64,
        solver: SolverKind,
        params: SolverParams,
    ) -> Result<Self, SolverError> {
        Ok(World {
            bodies: Vec::new(),
            containers: Vec::new(),
            gravity,
            dt,
            time: 0.0,
            step_index: 0,
            params,
            rotation: RotationIntegrator::default(),
            forces: Vec::new(),
            contacts: Vec::new(),
            ledger: EnergyLedger::default(),
            last_report: SolverReport::default(),
            last_times: PhaseTimes::default(),
            contact_margin: 0.005,
            record_trace: false,
            trace: Vec::new(),
            solver: solver.create()?,
            collision: CollisionPipeline::default(),
            contact_pass: ContactPass::default(),
            velocity_start: Vec::new(),
            omega_start: Vec::new(),
            wrench: Vec::new(),
        })
    }

    /// Detect contacts at the current positions without stepping (fills `contacts`).
    pub fn detect(&mut self) -> &[Contact] {
        self.collision
            .broad_phase(&self.bodies, self.contact_margin, self.dt);
        self.collision.narrow_phase(
            &self.bodies,
            &self.containers,
            self.contact_margin,
            &mut self.contacts,
        );
        &self.contacts
    }

    pub fn add_body(&mut self, body: RigidBody) -> usize {
        self.bodies.push(body);
        self.bodies.len() - 1
    }

    pub fn add_container(&mut self, c: Container) -> usize {
        self.containers.push(c);
        self.containers.len() - 1
    }

    pub fn solver_kind(&self) -> SolverKind {
        self.solver.kind()
    }

    /// Switch the collision method; bodies keep their state.
    pub fn set_solver(&mut self, kind: SolverKind) -> Result<(), SolverError> {
        self.solver = kind.create()?;
        Ok(())
    }

    /// Instantaneous energies: (translational KE, rotational KE, potential).
    pub fn energies(&self) -> (f64, f64, f64) {
        let mut kt = 0.0;
        let mut kr = 0.0;
        let mut pe = 0.0;
        for b in self.bodies.iter().filter(|b| !b.is_static()) {
            kt += b.kinetic_energy_translational();
            kr += b.kinetic_energy_rotational();
            pe -= b.mass * self.gravity.dot(&b.position);
        }
        (kt, kr, pe)
    }

    /// Instantaneous energies of the current state, with `elastic` stored in contacts.
    pub fn state_energy(&self, elastic: f64) -> StateEnergy {
        let (kinetic_translational, kinetic_rotational, potential) = self.energies();
        StateEnergy {
            kinetic_translational,
            kinetic_rotational,
            potential,
            elastic,
        }
    }

    /// Reset the ledger so that the current state is the reference (call once after the
    /// scene is built) and return the step-0 sample.
    pub fn start_ledger(&mut self) -> EnergySample {
        let e = self.state_energy(0.0);
        self.ledger = EnergyLedger {
            initial_total: e.total(),
            ..Default::default()
        };
        self.ledger.sample(self.step_index, self.time, e, 0)
    }

    /// Advance one step of length `dt` (see the module doc for the phases).
    pub fn step(&mut self) -> Result<EnergySample, SolverError> {
        let h = self.dt;
        // 1. detect
        let t0 = Instant::now();
        self.collision
            .broad_phase(&self.bodies, self.contact_margin, self.dt);
        let t1 = Instant::now();
        self.collision.narrow_phase(
            &self.bodies,
            &self.containers,
            self.contact_margin,
            &mut self.contacts,
        );
        let t2 = Instant::now();

        // 2. integrate velocities (kick); remember the start-of-step v, ω for the drift.
        self.solver.begin_step(&self.bodies);
        let n = self.bodies.len();
        self.velocity_start.clear();
        self.velocity_start
            .extend(self.bodies.iter().map(|b| b.velocity));
        self.omega_start.clear();
        self.omega_start
            .extend(self.bodies.iter().map(|b| b.angular_velocity));
        self.wrench.clear();
        self.wrench.resize(n, (Vec3::zeros(), Vec3::zeros()));
        for f in &self.forces {
            self.wrench[f.body].0 += f.force;
            self.wrench[f.body].1 += f.offset.cross(&f.force);
        }
        let mut kick_energy = 0.0;
        for (b, (force, torque)) in self.bodies.iter_mut().zip(&self.wrench) {
            if b.is_static() {
                continue;
            }
            let k0 = b.kinetic_energy_translational() + b.kinetic_energy_rotational();
            b.velocity += h * (self.gravity + force * b.inv_mass);
            b.angular_velocity = self.rotation.integrate_angular_velocity(
                &b.inertia,
                &b.orientation,
                &b.angular_velocity,
                torque,
                h,
            );
            kick_energy += b.kinetic_energy_translational() + b.kinetic_energy_rotational() - k0;
        }

        // 3. resolve
        let recording = std::mem::take(&mut self.record_trace);
        if recording {
            self.trace.clear();
        }
        let mut report = self.solver.resolve(SolverContext {
            bodies: &mut self.bodies,
            contacts: &self.contacts,
            params: &self.params,
            dt: h,
            trace: if recording {
                Some(&mut self.trace)
            } else {
                None
            },
        })?;
        let t3a = Instant::now();
        // 3b. resolve contacts (shock propagation), only what the solver left approaching.
        // Not after a Newmark solver: its contact law bounds the step's displacement
        // h (vₙ + v⁺)/2, so an approaching v⁺ can be its exact answer (paper 002, eq. 44).
        let newmark = self.solver.position_update() == PositionUpdate::Newmark;
        if self.params.contact_pass && !newmark {
            self.contact_pass.run(
                &mut self.bodies,
                &self.contacts,
                self.params.friction,
                h,
                self.params.max_iterations,
                &mut report,
            );
        }
        let t3 = Instant::now();
        let pe_after_solve = self.energies().2;

        // 4. integrate positions (drift) with the velocity the position update uses:
        // v⁺ (semi-implicit Euler) or (vₙ + v⁺)/2 (Newmark, paper 002 eq. 51); applied
        // forces work along that same displacement.
        let drift = |start: &Vec3, end: &Vec3| if newmark { 0.5 * (start + end) } else { *end };
        let mut external = 0.0;
        for f in &self.forces {
            let b = &self.bodies[f.body];
            let v = drift(&self.velocity_start[f.body], &b.velocity);
            let w = drift(&self.omega_start[f.body], &b.angular_velocity);
            external += h * (f.force.dot(&v) + f.offset.cross(&f.force).dot(&w));
        }
        for (i, b) in self.bodies.iter_mut().enumerate() {
            if b.is_static() {
                continue;
            }
            b.position += h * drift(&self.velocity_start[i], &b.velocity);
            let (q, w) = self.rotation.integrate_orientation(
                &b.orientation,
                &self.omega_start[i],
                &b.angular_velocity,
                h,
            );
            b.orientation = q;
            b.angular_velocity = w;
        }
        let t4 = Instant::now();

        // 5. measure energy
        let energy = self.state_energy(report.elastic);
        self.step_index += 1;
        self.time = self.step_index as f64 * h;
        self.ledger.dissipated_restitution += report.dissipated_restitution;
        self.ledger.dissipated_friction += report.dissipated_friction;
        self.ledger.external_work += external;
        // Free-flight discretisation error: the kick's energy plus the drift's potential
        // change, less the work of the applied forces and the part of the drift that the
        // solver booked as its impulses' work (Newmark).
        self.ledger.integration +=
            kick_energy + (energy.potential - pe_after_solve) - external - report.drift_work;
        let sample = self
            .ledger
            .sample(self.step_index, self.time, energy, self.contacts.len());
        self.last_report = report;
        let t5 = Instant::now();
        self.last_times = PhaseTimes {
            broad_phase: t1 - t0,
            narrow_phase: t2 - t1,
            solve: t3a - t2,
            contact_pass: t3 - t3a,
            integrate: t4 - t3,
            measure: t5 - t4,
        };
        Ok(sample)
    }
}
