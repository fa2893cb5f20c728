//! The simulated world and its fixed time step.
//!
//! One step of length h, in named phases (the same names label the benchmark's columns):
//! 1. **detect**: broad phase, then narrow phase → contacts at the current positions xₙ;
//! 2. **integrate velocities**: v⁻ = vₙ + h (g + F/m), ω⁻ from the rotation integrator;
//! 3. **resolve collisions**: the collision solver turns v⁻, ω⁻ into v⁺, ω⁺ (and may
//!    project positions); then **resolve contacts**: the contact pass (warm-started
//!    projected Gauss-Seidel and shock propagation, `dynamics::contact_pass`) takes the
//!    resting contacts and what the solver left approaching, and, for the methods without
//!    their own (all but jolt, MDP and CCP, which correct positions inside the
//!    solver), paper 001's position projection separates what still overlaps;
//! 4. **integrate positions**: xₙ₊₁ = xₙ + h v⁺ (semi-implicit Euler), or
//!    xₙ₊₁ = xₙ + h (vₙ + v⁺)/2 for a solver formulated with Newmark (CCP, paper 002
//!    eq. 51; [`CollisionSolver::position_update`]), orientation by the rotation
//!    integrator; islands at rest fall asleep (see below);
//! 5. **measure energy**: the ledger books the solver's dissipation and the integration
//!    error, and samples the state.
//!
//! **Island sleeping** (as in Box2D and Rapier), on by default ([`SleepParams`]): an
//! island (bodies joined by contacts; static bodies and containers do not join) whose
//! bodies have all been *still* (|v| and |ω| × bounding radius below
//! [`SleepParams::velocity`] after the solver) for [`SleepParams::time`] falls asleep: its
//! velocities are set to zero and it is left out of the kick, the solver, the contact
//! pass and the drift until woken. The kinetic energy this removes (below ½ m v_sleep²
//! per body) is not explained by any ledger column, so it shows in the residual. An
//! island wakes when, at the start of a step, it touches an awake body, when one of its
//! bodies was given a velocity from outside, when a container or gravity changed (a wall
//! removed from a settled pile) or on [`World::wake_all`]. Sleeping only stops bodies
//! the solver has already brought to rest; it cannot stop a jittering pile (a body
//! faster than the sleep velocity resets its island's timer).

use crate::body::RigidBody;
use crate::collision::{
    CollisionPipeline, Contact, ManifoldCache, ManifoldCounts, RecycleRule, relative_velocity,
};
use crate::container::Container;
use crate::dynamics::contact_pass::ContactPass;
use crate::dynamics::graph::ContactGraph;
use crate::dynamics::impact::ImpactTiming;
use crate::dynamics::rotation::RotationIntegrator;
use crate::dynamics::solver::{
    CollisionSolver, PositionUpdate, RestingModel, SolverContext, SolverError, SolverKind,
    SolverParams, SolverReport, TraceRow, total_kinetic_energy,
};
use crate::dynamics::warm_start::{ContactImpulses, ImpulseMemory};
use crate::energy::{EnergyLedger, EnergySample, StateEnergy};
use crate::math::Vec3;
use rayon::prelude::*;
use std::time::{Duration, Instant};

/// Fewest bodies a thread takes in the per-body loops of the step (kick and drift).
const PER_BODY_CHUNK: usize = 256;

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

/// Island sleeping parameters (see the module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct SleepParams {
    /// Whether islands at rest fall asleep. Default: true.
    pub enabled: bool,
    /// A body is still when |v| < `velocity` and |ω| × bounding radius < `velocity`
    /// (m/s). Default: 0.01 (Box2D's linear sleep tolerance).
    pub velocity: f64,
    /// An island falls asleep after all its bodies have been still this long (s).
    /// Default: 0.5 (Box2D's time to sleep).
    pub time: f64,
}

impl Default for SleepParams {
    fn default() -> Self {
        SleepParams {
            enabled: true,
            velocity: 0.01,
            time: 0.5,
        }
    }
}

/// An external force applied to a body every step (not gravity): a point force `force`
/// (N, world) at the body-fixed offset `offset` (m, world-aligned, from the centre of mass).
#[derive(Clone, Debug, PartialEq)]
pub struct AppliedForce {
    pub body: usize,
    pub force: Vec3,
    pub offset: Vec3,
}

/// Space a step rebuilds before reading it: a copy of the world (the app's timeline
/// keeps one per step) starts it empty instead of copying it.
#[derive(Debug, Default)]
struct Scratch<T: Default>(T);

impl<T: Default> Clone for Scratch<T> {
    fn clone(&self) -> Self {
        Scratch(T::default())
    }
}

#[derive(Clone)]
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
    /// The step of the last recorded trace: the contacts its rows index, the kinetic
    /// energy and normal velocities around the solver (see [`TraceFrame`]).
    pub trace_frame: TraceFrame,
    /// Island sleeping (see the module doc).
    pub sleep: SleepParams,
    /// Time the impulses of speculative impacts on static surfaces at the moment of
    /// impact (`dynamics::impact`), for the methods that resolve such contacts as
    /// touching: rebounds then follow e² at the default time step. Default: true.
    pub impact_timing: bool,
    /// Per body: asleep (left out of the step until woken).
    sleeping: Vec<bool>,
    /// Per body: how long it has been still (s).
    still_time: Vec<f64>,
    /// Containers and gravity when the sleep state was last checked (a change wakes all).
    containers_seen: Vec<Container>,
    gravity_seen: Vec3,
    /// The contact graph of this step's contacts (its islands for sleeping; the
    /// solver's and the contact pass's when none sleep).
    graph: ContactGraph,
    /// The graph of the awake contacts (the solver's and the pass's when some islands
    /// sleep).
    awake_graph: ContactGraph,
    /// Scratch: one flag per island root.
    island_flag: Vec<bool>,
    /// The step's contacts that involve an awake dynamic body (what the solver sees).
    awake_contacts: Scratch<Vec<Contact>>,
    /// The impulses the last step's contacts ended it with, by identity
    /// (`dynamics::warm_start`): part of the state.
    impulses: ImpulseMemory,
    /// Scratch: the impulses of the contacts the solver sees, aligned with them.
    contact_impulses: Scratch<Vec<ContactImpulses>>,
    solver: Box<dyn CollisionSolver>,
    collision: CollisionPipeline,
    contact_pass: ContactPass,
    /// Scratch, reused every step: start-of-step linear and angular velocities, applied
    /// (force, torque).
    velocity_start: Vec<Vec3>,
    omega_start: Vec<Vec3>,
    /// Scratch: ω after the kick, before the solver (what free flight would keep).
    omega_kick: Vec<Vec3>,
    /// Scratch: per body, (vₙ − v⁻)/2 under a Newmark drift (the contact pass's
    /// booking, `ContactPass::set_newmark_drift`); empty otherwise.
    half_kick: Vec<Vec3>,
    /// Per body: the kick's kinetic-energy change (summed in body order).
    kick_energies: Vec<f64>,
    /// Scratch: external acceleration g + F/m of each body.
    acceleration: Vec<Vec3>,
    /// Scratch: per body, (v, ω) after the kick (computed before detection).
    kicked: Vec<(Vec3, Vec3)>,
    impact: ImpactTiming,
    wrench: Vec<(Vec3, Vec3)>,
    /// The ledger was put back from a saved state: the next [`World::start_ledger`]
    /// keeps it.
    ledger_resumed: bool,
}

/// What a world carries from one step to the next besides its bodies, containers,
/// settings, time and ledger ([`World::carried_state`]): with those, the whole state a
/// step reads, so a world given it continues bit for bit as the one it was taken from.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CarriedState {
    /// Per body: asleep (see the module doc).
    pub sleeping: Vec<bool>,
    /// Per body: how long it has been still (s).
    pub still_time: Vec<f64>,
    /// The containers or gravity changed since the last step, so the next one wakes
    /// every body.
    pub wake_pending: bool,
    /// The impulses the last step's contacts ended it with, the method's (for a method
    /// that keeps them, [`CollisionSolver::keeps_impulses`]) and the contact pass's
    /// (`dynamics::warm_start`).
    pub impulses: ImpulseMemory,
    /// The contact pass's last position projection per body (Δx, Δθ), or empty.
    pub projection: Vec<(Vec3, Vec3)>,
    /// The kept contact manifolds of the flat-faced pairs
    /// (`collision::manifold_cache`).
    pub manifolds: ManifoldCache,
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
            trace_frame: TraceFrame::default(),
            sleep: SleepParams::default(),
            impact_timing: true,
            sleeping: Vec::new(),
            still_time: Vec::new(),
            containers_seen: Vec::new(),
            gravity_seen: gravity,
            graph: ContactGraph::default(),
            awake_graph: ContactGraph::default(),
            island_flag: Vec::new(),
            awake_contacts: Scratch::default(),
            impulses: ImpulseMemory::default(),
            contact_impulses: Scratch::default(),
            solver: solver.create(),
            collision: CollisionPipeline::default(),
            contact_pass: ContactPass::default(),
            velocity_start: Vec::new(),
            omega_start: Vec::new(),
            omega_kick: Vec::new(),
            half_kick: Vec::new(),
            kick_energies: Vec::new(),
            acceleration: Vec::new(),
            kicked: Vec::new(),
            impact: ImpactTiming::default(),
            wrench: Vec::new(),
            ledger_resumed: false,
        })
    }

    /// Detect contacts at the current positions without stepping (fills `contacts`).
    /// Its broad and narrow phase times go to `last_times` (the other phases read 0).
    pub fn detect(&mut self) -> &[Contact] {
        let t0 = Instant::now();
        self.collision
            .broad_phase(&self.bodies, self.contact_margin, self.dt);
        let t1 = Instant::now();
        self.collision.narrow_phase(
            &self.bodies,
            &self.containers,
            self.contact_margin,
            None,
            &mut self.contacts,
        );
        self.last_times = PhaseTimes {
            broad_phase: t1 - t0,
            narrow_phase: t1.elapsed(),
            ..PhaseTimes::default()
        };
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

    /// The current collision method (for its capabilities).
    pub fn solver(&self) -> &dyn CollisionSolver {
        self.solver.as_ref()
    }

    /// Switch the collision method; bodies keep their state. The new method starts
    /// cold (its contacts' impulses forgotten, the contact pass's kept); the current one
    /// (`kind` unchanged) keeps its warm-start state.
    pub fn set_solver(&mut self, kind: SolverKind) {
        if kind != self.solver.kind() {
            self.solver = kind.create();
            self.impulses.forget_method();
        }
    }

    /// The state carried from one step to the next besides the bodies (see
    /// [`CarriedState`]), per-body lists one per body.
    pub fn carried_state(&self) -> CarriedState {
        let n = self.bodies.len();
        let mut sleeping = self.sleeping.clone();
        sleeping.resize(n, false);
        let mut still_time = self.still_time.clone();
        still_time.resize(n, 0.0);
        let displacement = self.contact_pass.displacement();
        CarriedState {
            sleeping,
            still_time,
            wake_pending: self.containers != self.containers_seen
                || self.gravity != self.gravity_seen,
            impulses: self.impulses.clone(),
            // The pass reads its displacements only if there is one per body.
            projection: if displacement.len() == n {
                displacement.to_vec()
            } else {
                Vec::new()
            },
            manifolds: self.collision.manifolds().clone(),
        }
    }

    /// Put back a state taken by [`World::carried_state`] from a world with the same
    /// bodies and containers (the caller checks the lengths and indices) and the same
    /// method (whose impulses `state` carries, if it keeps any).
    pub fn set_carried_state(&mut self, state: CarriedState) {
        self.sleeping = state.sleeping;
        self.still_time = state.still_time;
        if state.wake_pending {
            // Unequal to any containers and gravity: the next step wakes every body.
            self.containers_seen.clear();
            self.gravity_seen = Vec3::repeat(f64::NAN);
        } else {
            self.containers_seen.clone_from(&self.containers);
            self.gravity_seen = self.gravity;
        }
        self.impulses = state.impulses;
        self.contact_pass.set_displacement(state.projection);
        self.collision.set_manifolds(state.manifolds);
    }

    /// Put back the ledger of a saved run: the next [`World::start_ledger`] keeps it
    /// instead of starting a new one, so the loaded run's ledger continues the saved
    /// run's.
    pub fn resume_ledger(&mut self, ledger: EnergyLedger) {
        self.ledger = ledger;
        self.ledger_resumed = true;
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

    /// Potential energy −Σ m g·x of the dynamic bodies (J).
    pub fn potential_energy(&self) -> f64 {
        self.bodies
            .iter()
            .filter(|b| !b.is_static())
            .map(|b| -b.mass * self.gravity.dot(&b.position))
            .sum()
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
    /// scene is built) and return the current step's sample. A ledger put back by
    /// [`World::resume_ledger`] is kept by the first call, which only samples it.
    pub fn start_ledger(&mut self) -> EnergySample {
        let e = self.state_energy(0.0);
        if !std::mem::take(&mut self.ledger_resumed) {
            self.ledger = EnergyLedger {
                initial_total: e.total(),
                ..Default::default()
            };
        }
        self.ledger.sample(self.step_index, self.time, e, 0)
    }

    /// How the flat-faced pairs of the last step got their manifolds: recycled,
    /// recomputed, new (`collision::manifold_cache`).
    pub fn manifold_counts(&self) -> ManifoldCounts {
        self.collision.manifold_counts
    }

    /// The shared contact pass (its state after the last step).
    pub fn contact_pass(&self) -> &ContactPass {
        &self.contact_pass
    }

    /// Number of bodies asleep.
    pub fn sleeping_bodies(&self) -> usize {
        self.sleeping.iter().filter(|&&s| s).count()
    }

    /// Whether body `i` is asleep.
    pub fn is_sleeping(&self, i: usize) -> bool {
        self.sleeping.get(i).copied().unwrap_or(false)
    }

    /// Wake every body (call after editing bodies from outside, e.g. dragging one).
    pub fn wake_all(&mut self) {
        self.sleeping.iter_mut().for_each(|s| *s = false);
        self.still_time.iter_mut().for_each(|t| *t = 0.0);
    }

    /// Start of a step, after detection: wake what must wake, group the bodies into
    /// islands by this step's contacts and pick the contacts the solver sees. Returns
    /// whether any body sleeps (then the solver gets `awake_contacts`).
    fn wake_and_filter(&mut self) -> bool {
        let n = self.bodies.len();
        self.sleeping.resize(n, false);
        self.still_time.resize(n, 0.0);
        if !self.sleep.enabled
            || self.containers != self.containers_seen
            || self.gravity != self.gravity_seen
        {
            self.wake_all();
            if self.containers != self.containers_seen {
                self.containers_seen.clone_from(&self.containers);
            }
            self.gravity_seen = self.gravity;
        }
        self.graph.build(&self.bodies, &self.contacts);
        let bodies = &self.bodies;
        if !self.sleeping.iter().any(|&s| s) {
            return false;
        }
        // An island with an awake dynamic body (or a sleeper given a velocity from
        // outside) wakes as a whole.
        let mut wake_root = std::mem::take(&mut self.island_flag);
        wake_root.clear();
        wake_root.resize(n, false);
        for (i, b) in bodies.iter().enumerate() {
            if b.is_static() {
                continue;
            }
            let moved = b.velocity != Vec3::zeros() || b.angular_velocity != Vec3::zeros();
            if !self.sleeping[i] || moved {
                wake_root[self.graph.root(i)] = true;
            }
        }
        let mut any = false;
        for i in 0..n {
            if self.sleeping[i] && wake_root[self.graph.root(i)] {
                self.sleeping[i] = false;
                self.still_time[i] = 0.0;
            }
            any |= self.sleeping[i];
        }
        self.island_flag = wake_root;
        if !any {
            return false;
        }
        let sleeping = &self.sleeping;
        let awake = |i: usize| !bodies[i].is_static() && !sleeping[i];
        self.awake_contacts.0.clear();
        self.awake_contacts.0.extend(
            self.contacts
                .iter()
                .filter(|c| awake(c.a) || c.b.is_some_and(awake))
                .cloned(),
        );
        true
    }

    /// End of a step: update the still timers and put islands still for
    /// `sleep.time` to sleep.
    fn fall_asleep(&mut self) {
        if !self.sleep.enabled {
            return;
        }
        let n = self.bodies.len();
        let v_sleep = self.sleep.velocity;
        for (i, b) in self.bodies.iter().enumerate() {
            if b.is_static() || self.sleeping[i] {
                continue;
            }
            let still = b.velocity.norm() < v_sleep
                && b.angular_velocity.norm() * b.shape.bounding_radius() < v_sleep;
            self.still_time[i] = if still {
                self.still_time[i] + self.dt
            } else {
                0.0
            };
        }
        if !self.still_time.iter().any(|&t| t >= self.sleep.time) {
            return;
        }
        // An island sleeps when its least still body has been still long enough.
        let mut island_ready = std::mem::take(&mut self.island_flag);
        island_ready.clear();
        island_ready.resize(n, true);
        for i in 0..n {
            if !self.bodies[i].is_static() && self.still_time[i] < self.sleep.time {
                island_ready[self.graph.root(i)] = false;
            }
        }
        for i in 0..n {
            let b = &mut self.bodies[i];
            if !b.is_static() && !self.sleeping[i] && island_ready[self.graph.root(i)] {
                self.sleeping[i] = true;
                b.velocity = Vec3::zeros();
                b.angular_velocity = Vec3::zeros();
            }
        }
        self.island_flag = island_ready;
    }

    /// Advance one step of length `dt` (see the module doc for the phases). Fails with
    /// the solver's error, or with [`SolverError::NonFinite`] when the step leaves a
    /// body's state or an energy NaN or infinite (the world is then not usable; its
    /// sample is not returned).
    ///
    /// The step runs on a worker of rayon's pool: called from outside one (a test, a
    /// program's own thread), it moves there once (`rayon::scope`), so that its parallel
    /// loops and the contact pass's halves fork from inside the pool; forked from
    /// outside, each would hand its work over and wait to be woken. The numbers do not
    /// depend on where it runs or on the pool's size.
    pub fn step(&mut self) -> Result<EnergySample, SolverError> {
        if rayon::current_thread_index().is_none() {
            return rayon::scope(|_| self.step_in_pool());
        }
        self.step_in_pool()
    }

    fn step_in_pool(&mut self) -> Result<EnergySample, SolverError> {
        let h = self.dt;
        // The kick's velocities, computed before detection (a body's own arithmetic,
        // per body in parallel): detection reads them to keep impacts from recycled
        // manifolds (`collision::manifold_cache`), and the kick below applies them.
        let n = self.bodies.len();
        self.wrench.clear();
        self.wrench.resize(n, (Vec3::zeros(), Vec3::zeros()));
        for f in &self.forces {
            self.wrench[f.body].0 += f.force;
            self.wrench[f.body].1 += f.offset.cross(&f.force);
        }
        let (gravity, rotation) = (self.gravity, self.rotation);
        self.bodies
            .par_iter()
            .zip(&self.wrench)
            .with_min_len(PER_BODY_CHUNK)
            .map(|(b, (force, torque))| {
                if b.is_static() {
                    return (b.velocity, b.angular_velocity);
                }
                let v = b.velocity + h * (gravity + force * b.inv_mass);
                let w = rotation.integrate_angular_velocity(
                    &b.inertia,
                    &b.orientation,
                    &b.angular_velocity,
                    torque,
                    h,
                );
                (v, w)
            })
            .collect_into_vec(&mut self.kicked);

        // 1. detect
        let t0 = Instant::now();
        self.collision
            .broad_phase(&self.bodies, self.contact_margin, self.dt);
        let t1 = Instant::now();
        let recycle = RecycleRule {
            rest_speed: self.params.resting_speed(),
            slack: self.contact_margin,
            kicked: &self.kicked,
        };
        self.collision.narrow_phase(
            &self.bodies,
            &self.containers,
            self.contact_margin,
            Some(recycle),
            &mut self.contacts,
        );
        let some_asleep = self.wake_and_filter();
        let t2 = Instant::now();

        // 2. integrate velocities (kick); remember the start-of-step v, ω for the drift.
        self.solver.begin_step(&self.bodies);
        self.velocity_start.clear();
        self.velocity_start
            .extend(self.bodies.iter().map(|b| b.velocity));
        self.omega_start.clear();
        self.omega_start
            .extend(self.bodies.iter().map(|b| b.angular_velocity));
        // Per body in parallel, the energy changes summed in body order after: the same
        // numbers on any number of threads.
        self.kick_energies.clear();
        self.bodies
            .par_iter_mut()
            .zip(&self.kicked)
            .zip(&self.sleeping)
            .with_min_len(PER_BODY_CHUNK)
            .map(|((b, &(v, w)), &asleep)| {
                if b.is_static() || asleep {
                    return 0.0;
                }
                let k0 = b.kinetic_energy_translational() + b.kinetic_energy_rotational();
                b.velocity = v;
                b.angular_velocity = w;
                b.kinetic_energy_translational() + b.kinetic_energy_rotational() - k0
            })
            .collect_into_vec(&mut self.kick_energies);
        let mut kick_energy = 0.0;
        for ((b, &dk), &asleep) in self
            .bodies
            .iter()
            .zip(&self.kick_energies)
            .zip(&self.sleeping)
        {
            if !b.is_static() && !asleep {
                kick_energy += dk;
            }
        }
        self.omega_kick.clear();
        self.omega_kick
            .extend(self.bodies.iter().map(|b| b.angular_velocity));

        // 3. resolve
        let recording = std::mem::take(&mut self.record_trace);
        if recording {
            self.trace.clear();
        }
        let contacts = if some_asleep {
            &self.awake_contacts.0
        } else {
            &self.contacts
        };
        let normal_velocities = |bodies: &[RigidBody], contacts: &[Contact]| -> Vec<f64> {
            contacts
                .iter()
                .map(|c| relative_velocity(bodies, c).dot(&c.normal))
                .collect()
        };
        if recording {
            self.trace_frame = TraceFrame {
                step: self.step_index + 1,
                contacts: contacts.clone(),
                kinetic_before: total_kinetic_energy(&self.bodies),
                elastic_before: self.last_report.elastic,
                normal_velocity_before: normal_velocities(&self.bodies, contacts),
                ..Default::default()
            };
        }
        // Impulses at the moment of impact of speculative contacts (`dynamics::impact`).
        let timed = self.impact_timing
            && self.solver.position_update() == PositionUpdate::SemiImplicitEuler
            && self.solver.resolves_speculative_as_touching();
        if timed {
            self.acceleration.clear();
            self.acceleration.extend(
                self.bodies
                    .iter()
                    .zip(&self.wrench)
                    .map(|(b, (force, _))| self.gravity + force * b.inv_mass),
            );
            kick_energy += self.impact.begin(
                &mut self.bodies,
                contacts,
                &self.acceleration,
                self.params.resting_speed(),
                h,
            );
        }
        // A solver that corrects positions itself moves bodies inside `resolve`; the
        // potential-energy change across it is that correction's (booked as projection).
        let corrects = self.solver.corrects_positions(&self.params);
        let pe_before_resolve = if corrects {
            self.potential_energy()
        } else {
            0.0
        };
        let graph = if some_asleep {
            self.awake_graph.build(&self.bodies, contacts);
            &self.awake_graph
        } else {
            &self.graph
        };
        // Each contact starts from the impulses it ended the last step with.
        self.impulses.recall(contacts, &mut self.contact_impulses.0);
        let mut report = self.solver.resolve(SolverContext {
            bodies: &mut self.bodies,
            contacts,
            graph,
            impulses: &mut self.contact_impulses.0,
            params: &self.params,
            dt: h,
            trace: if recording {
                Some(&mut self.trace)
            } else {
                None
            },
        })?;
        if recording {
            self.trace_frame.kinetic_after = total_kinetic_energy(&self.bodies);
            self.trace_frame.elastic_after = report.elastic;
            self.trace_frame.normal_velocity_after = normal_velocities(&self.bodies, contacts);
        }
        if corrects {
            self.ledger.projection +=
                self.potential_energy() - pe_before_resolve + report.projection_work;
        }
        if timed {
            kick_energy += self.impact.finish(&mut self.bodies, &self.gravity);
        }
        let t3a = Instant::now();
        // 3b. resolve contacts (shock propagation): the resting contacts the solver left
        // and what it left approaching, for the methods that use the contact pass. Then
        // position projection (paper 001) for the methods that do not correct positions
        // themselves.
        let newmark = self.solver.position_update() == PositionUpdate::Newmark;
        if self.params.contact_pass && self.solver.uses_contact_pass() {
            // Under a Newmark drift the pass books its impulses' work over the step
            // (`ContactPass::set_newmark_drift`): each body's (vₙ − v⁻)/2.
            self.half_kick.clear();
            if newmark {
                let (gravity, sleeping) = (self.gravity, &self.sleeping);
                self.half_kick
                    .extend(self.bodies.iter().zip(&self.wrench).zip(sleeping).map(
                        |((b, (force, _)), &asleep)| {
                            if b.is_static() || asleep {
                                Vec3::zeros()
                            } else {
                                -0.5 * h * (gravity + force * b.inv_mass)
                            }
                        },
                    ));
            }
            self.contact_pass.set_newmark_drift(&self.half_kick);
            self.contact_pass
                .set_method_floors(self.solver.pass_floors());
            self.contact_pass.run(
                &mut self.bodies,
                contacts,
                graph,
                &mut self.contact_impulses.0,
                &self.params,
                -self.gravity.try_normalize(0.0).unwrap_or_else(Vec3::zeros),
                h,
                &mut report,
            );
            if self.params.resting_model == RestingModel::Soft {
                self.ledger.projection +=
                    self.contact_pass.push_out(&mut self.bodies, &self.gravity);
            } else if self.params.kp > 0.0 && !corrects {
                self.ledger.projection += self.contact_pass.project(
                    &mut self.bodies,
                    contacts,
                    self.params.kp,
                    crate::dynamics::contact_pass::REST_TOLERANCE * self.params.resting_speed() * h,
                    &self.gravity,
                );
            }
        }
        self.impulses.remember(contacts, &self.contact_impulses.0);
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
        let (sleeping, velocity_start) = (&self.sleeping, &self.velocity_start);
        let (omega_start, omega_kick) = (&self.omega_start, &self.omega_kick);
        let rotation = self.rotation;
        self.bodies
            .par_iter_mut()
            .enumerate()
            .with_min_len(PER_BODY_CHUNK)
            .for_each(|(i, b)| {
                if b.is_static() || sleeping[i] {
                    return;
                }
                b.position += h * drift(&velocity_start[i], &b.velocity);
                // The solver's change of ω is an angular impulse: kept in the world frame.
                let (q, w) = rotation.integrate_orientation_with_impulse(
                    &b.inertia,
                    &b.orientation,
                    &omega_start[i],
                    &omega_kick[i],
                    &b.angular_velocity,
                    h,
                );
                b.orientation = q;
                b.angular_velocity = w;
            });
        self.fall_asleep();
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
        self.check_finite(&sample)?;
        Ok(sample)
    }

    /// [`SolverError::NonFinite`] naming the first body whose position, orientation,
    /// velocity, angular velocity or kinetic or potential energy is NaN or infinite after
    /// the step, or the world if only the sample's energies are; one pass over the bodies.
    fn check_finite(&self, sample: &EnergySample) -> Result<(), SolverError> {
        let fail = |body, quantity, value: String| {
            Err(SolverError::NonFinite {
                step: self.step_index,
                body,
                quantity,
                value,
            })
        };
        let v3 = |v: &Vec3| format!("{}, {}, {}", v.x, v.y, v.z);
        for (i, b) in self.bodies.iter().enumerate() {
            if b.is_static() {
                continue;
            }
            let q = b.orientation.quaternion();
            if !b.position.iter().all(|x| x.is_finite()) {
                return fail(Some(i), "position", v3(&b.position));
            }
            if !q.coords.iter().all(|x| x.is_finite()) {
                return fail(Some(i), "orientation", format!("{q}"));
            }
            if !b.velocity.iter().all(|x| x.is_finite()) {
                return fail(Some(i), "velocity", v3(&b.velocity));
            }
            if !b.angular_velocity.iter().all(|x| x.is_finite()) {
                return fail(Some(i), "angular velocity", v3(&b.angular_velocity));
            }
        }
        if sample.total.is_finite() && sample.residual.is_finite() {
            return Ok(());
        }
        // Finite states whose energies overflow (|v| > ~1e154): find the body.
        for (i, b) in self
            .bodies
            .iter()
            .enumerate()
            .filter(|(_, b)| !b.is_static())
        {
            let k = b.kinetic_energy_translational() + b.kinetic_energy_rotational();
            if !k.is_finite() {
                return fail(Some(i), "kinetic energy", format!("{k} J"));
            }
            let p = -b.mass * self.gravity.dot(&b.position);
            if !p.is_finite() {
                return fail(Some(i), "potential energy", format!("{p} J"));
            }
        }
        let (quantity, x) = if sample.total.is_finite() {
            ("energy residual", sample.residual)
        } else {
            ("total energy", sample.total)
        };
        fail(None, quantity, format!("{x} J"))
    }
}

/// What the world keeps of the step whose solver trace was recorded
/// ([`World::record_trace`]), so that the rows of [`World::trace`] can be read: their
/// `contact` field indexes [`TraceFrame::contacts`] (the contacts the solver saw, which
/// leave out sleeping islands, so they can differ from [`World::contacts`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TraceFrame {
    /// 1-based index of the recorded step (the value of `step_index` after it).
    pub step: u64,
    /// The contacts handed to the solver, in its order.
    pub contacts: Vec<Contact>,
    /// Kinetic energy of all bodies after the velocity kick, before the solver (J).
    pub kinetic_before: f64,
    /// Elastic energy stored in contacts before the solver (J): what the previous step
    /// left (ETM only; 0 for the other methods).
    pub elastic_before: f64,
    /// Kinetic energy right after the solver, before the contact pass (J).
    pub kinetic_after: f64,
    /// Elastic energy stored after the solver (J).
    pub elastic_after: f64,
    /// Relative normal velocity u_n = (v_a − v_b)·n at each contact before the solver
    /// (m/s; negative: approaching).
    pub normal_velocity_before: Vec<f64>,
    /// The same after the solver, before the contact pass (m/s).
    pub normal_velocity_after: Vec<f64>,
}
