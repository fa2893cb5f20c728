//! Side-by-side benchmark: the same piles in Rapier (`rapier3d-f64`, single thread, its
//! default settings) and in this project's world under each collision method. Rapier
//! runs twice: at its defaults (`rapier`, the simplified friction model: one friction
//! constraint per manifold plus a twist), which every ratio is taken against, and with
//! `FrictionModel::Coulomb` (`rapier-c`: one friction cone per contact point, as ours).
//!
//! `cargo bench --no-default-features --bench peer [-- SCENE[,SCENE...] [STEPS] [METHOD...]
//! [--threads N] [--chunk N] [--budget SECONDS] [--resting hard|soft] [--restitution E]
//! [--friction MU] [--seed N]]` (`--restitution`, `--friction`: every engine's e or μ in
//! every scene instead of the scene's; `--seed`: the lattice's seed (orientations,
//! jitter) instead of the scene's, for a spread over piles; default: `all`,
//! the five scenes below; 3,000 steps = 5 s at dt = 1/600; every method; one thread;
//! chunks of 100 steps; no budget; `SolverParams::resting_model` at its default). `--no-default-features` only spares building the app; `cargo bench --bench
//! peer` runs the same program.
//!
//! **Scenes** ([`PILES`]), each built once as an engine-neutral [`Pile`] (the bodies'
//! principal-frame shapes, masses, principal inertias, poses and velocities, the open box,
//! dt, e, μ, sleeping) and handed to both engines:
//! - `spheres_540`, `spheres_1080`: spheres of radius 3 m, density 2,500 kg/m³, falling
//!   from a lattice of pitch 6.6 m (v = (0, 0, −5) m/s, ±1 m/s jitter per component) into
//!   an open box 60 m × 48 m (paper 000 §7.4's scenes with the spheres' radius 3 m);
//!   e = 0.3, μ = 0.3;
//! - `cubes_325`, `crosses_325`: 325 cubes (b = 2.4 m) or crosses (3c = 3.78 m: three
//!   orthogonal 3c × c × c bars; in Rapier a compound of three cuboids) with random
//!   orientations and velocities (±2 m/s per component) on a 5 × 5 × 13 lattice of pitch
//!   4.3 m in a 22 m × 22 m box (paper 000 §7.5's packing, the half before the wall is
//!   removed); e = 0.3, μ = 0.3;
//! - `elastic_1080`: `spheres_1080` with e = 1, μ = 0 and sleeping off in both engines,
//!   for the energy drift.
//!
//! Masses and inertias are this project's exact ones ([`impulse_lab::shapes`]); Rapier
//! gets them explicitly ([`rp::MassProperties`] on each collider), so a cross does not
//! count its shared centre cube three times. Our box is a [`Container::Box`] (an infinite
//! floor plane and four one-sided walls up to its height); Rapier's is a fixed body with a
//! floor slab and four wall slabs 5 m thick whose inner faces are the same planes. Every
//! collider has the scene's e and μ: Rapier combines them per pair (average by default),
//! which with equal values gives the same e and μ.
//!
//! **Timing.** Only the step is timed (`World::step`, `PhysicsWorld::step`). The engines
//! run interleaved: each advances `--chunk` steps in turn, from the same initial state,
//! carrying its own state forward, so load changes on the machine hit all of them alike;
//! steps/s is over the whole run. With `--budget S`, an engine whose step time in a scene
//! exceeds S seconds stops there; its row says how many steps it did, and its ratio to
//! Rapier compares the same steps (Rapier's time over those steps). Our worlds step in a
//! rayon pool of `--threads` threads; Rapier is built without its `parallel` feature
//! (one thread whatever `--threads` says).
//!
//! **Output.** Per scene: steps/s of each engine, the ratio to Rapier's steps/s in the
//! same run, our time per phase (`World::last_times`: broad phase, narrow phase, solve,
//! contact pass, integrate, measure; µs per step), contacts per step (ours: the contacts
//! of `World::contacts`, gaps up to the contact margin; Rapier's: the solver contacts of
//! its manifolds, gaps up to its prediction distance), solver iterations per step, and the
//! relative change of the total energy E = kinetic + potential (−Σ m g·x, zero on the
//! floor) + elastic (ETM's stored energy) at the end, (E − E₀)/E₀, with, for our methods,
//! the ledger residual over E₀ (`src/energy.rs`). Then the pile at the end, measured
//! alike for every engine from its final poses (`pile_state`): pairs of bodies whose
//! surfaces are within 1 cm (our narrow phase on those poses), the mean height of the
//! centres, the largest speed and the kinetic energy. A summary table follows, and
//! `target/bench/peer.csv` gets one row per scene and engine.

mod common;

use common::{BenchArgs, PHASE_COLUMNS, PhaseSums};
use impulse_lab::World;
use impulse_lab::body::RigidBody;
use impulse_lab::container::Container;
use impulse_lab::dynamics::solver::{RestingModel, SolverKind, SolverParams};
use impulse_lab::math::Vec3;
use impulse_lab::scene::{
    ContainerSpec, GeneratorSpec, OrientationSpec, Region, Scene, ShapeSpec, V3, Vector, Walls,
};
use impulse_lab::shapes::Shape;
use rapier3d_f64::dynamics::FrictionModel;
use rapier3d_f64::prelude as rp;
use std::fmt::Write as _;
use std::io::Write;
use std::time::{Duration, Instant};

/// The scenes, in the default order.
const PILES: [&str; 5] = [
    "spheres_540",
    "spheres_1080",
    "cubes_325",
    "crosses_325",
    "elastic_1080",
];

/// Our methods in the order they are reported.
const METHODS: [SolverKind; 6] = [
    SolverKind::Jolt,
    SolverKind::Sqm,
    SolverKind::Etm,
    SolverKind::Smm,
    SolverKind::Ccp,
    SolverKind::Mdp,
];

/// Thickness of Rapier's floor and wall slabs (m).
const SLAB: f64 = 5.0;

/// An engine-neutral pile: what both engines are built from.
struct Pile {
    name: String,
    description: String,
    /// Dynamic bodies: shape in the principal frame, mass, principal inertia, centre of
    /// mass, orientation (principal frame → world), velocity and angular velocity.
    bodies: Vec<RigidBody>,
    /// Open-top box: floor centre, inner half-widths (x, y), wall height.
    center: Vec3,
    half_size: [f64; 2],
    height: f64,
    gravity: Vec3,
    dt: f64,
    restitution: f64,
    friction: f64,
    sleeping: bool,
}

/// Build the pile `name` through the project's scene types (lattice generator, exact
/// mass properties), with its own lattice seed or `override_seed`, or say which names
/// exist.
fn pile(name: &str, override_seed: Option<u64>) -> Result<Pile, String> {
    let sphere_box = |count: usize| {
        // 9 × 7 sites per layer of pitch 6.6 m; the walls reach 20 m above the top layer.
        let layers = count.div_ceil(63) as f64;
        let top = 6.6 * layers;
        (
            ShapeSpec::Sphere { radius: 3.0 },
            count,
            [30.0, 24.0],
            top + 20.0,
            Region {
                min: V3::new(-29.7, -23.1, 0.0),
                max: V3::new(29.7, 23.1, top),
            },
            6.6,
            OrientationSpec::Identity,
            V3::new(0.0, 0.0, -5.0),
            1.0,
        )
    };
    let repose_box = |shape: ShapeSpec| {
        (
            shape,
            325,
            [11.0, 11.0],
            80.0,
            Region {
                min: V3::new(-10.9, -10.9, 0.0),
                max: V3::new(10.9, 10.9, 75.0),
            },
            4.3,
            OrientationSpec::Random,
            V3::new(0.0, 0.0, 0.0),
            2.0,
        )
    };
    let (e, mu, sleeping, seed) = match name {
        "elastic_1080" => (1.0, 0.0, false, 1080),
        "spheres_540" => (0.3, 0.3, true, 540),
        "spheres_1080" => (0.3, 0.3, true, 1080),
        _ => (0.3, 0.3, true, 75),
    };
    let (shape, count, half_size, height, region, spacing, orientation, velocity, jitter) =
        match name {
            "spheres_540" => sphere_box(540),
            "spheres_1080" | "elastic_1080" => sphere_box(1080),
            "cubes_325" => repose_box(ShapeSpec::Cube { edge: 2.4 }),
            "crosses_325" => repose_box(ShapeSpec::Cross { size: 3.78 }),
            _ => {
                return Err(format!(
                    "unknown scene '{name}'; expected one of {}",
                    PILES.join(", ")
                ));
            }
        };
    let description = format!(
        "{count} {} falling into a {} m × {} m open box, e = {e}, μ = {mu}, sleeping {}",
        match &shape {
            ShapeSpec::Sphere { radius } => format!("spheres of radius {radius} m"),
            ShapeSpec::Cube { edge } => format!("cubes b = {edge} m"),
            ShapeSpec::Cross { size } => format!("crosses 3c = {size} m"),
            _ => unreachable!("the piles use spheres, cubes and crosses"),
        },
        2.0 * half_size[0],
        2.0 * half_size[1],
        if sleeping { "on" } else { "off" }
    );
    let mut scene = Scene::new(name);
    scene.seed = override_seed.unwrap_or(seed);
    scene.containers.push(ContainerSpec::Box {
        center: V3::default(),
        half_size: Vector(half_size),
        height,
        walls: Walls::default(),
        dividers: Vec::new(),
    });
    scene.generators.push(GeneratorSpec::Lattice {
        count,
        shape: Some(shape),
        mix: Vec::new(),
        density: 2500.0,
        region,
        spacing,
        orientation,
        velocity,
        velocity_jitter: jitter,
        angular_velocity_jitter: 0.0,
    });
    let world = scene.build_world().map_err(|e| e.to_string())?;
    Ok(Pile {
        name: name.to_string(),
        description,
        bodies: world.bodies,
        center: Vec3::zeros(),
        half_size,
        height,
        gravity: scene.gravity.vec3(),
        dt: scene.dt,
        restitution: e,
        friction: mu,
        sleeping,
    })
}

impl Pile {
    /// Our world for `kind` (default parameters but the pile's e and μ).
    fn world(&self, kind: SolverKind, resting: Option<RestingModel>) -> Result<World, String> {
        let defaults = SolverParams::default();
        let params = SolverParams {
            restitution: self.restitution,
            friction: self.friction,
            resting_model: resting.unwrap_or(defaults.resting_model),
            ..defaults
        };
        let mut world =
            World::new(self.gravity, self.dt, kind, params).map_err(|e| e.to_string())?;
        world.add_container(Container::Box {
            center: self.center,
            half_size: self.half_size,
            height: self.height,
            walls: [true; 4],
            dividers: Vec::new(),
        });
        for b in &self.bodies {
            world.add_body(b.clone());
        }
        world.sleep.enabled = self.sleeping;
        world.start_ledger();
        Ok(world)
    }

    /// Rapier's world: default integration parameters but dt and the friction model,
    /// gravity along our −z.
    fn rapier(
        &self,
        friction: rapier3d_f64::dynamics::FrictionModel,
    ) -> Result<RapierPile, String> {
        let v = |x: &Vec3| rp::Vector::new(x.x, x.y, x.z);
        let mut w = rp::PhysicsWorld::new();
        w.gravity = v(&self.gravity);
        w.integration_parameters.dt = self.dt;
        w.integration_parameters.friction_model = friction;
        let material =
            |c: rp::ColliderBuilder| c.friction(self.friction).restitution(self.restitution);

        // The box: floor slab below z = floor, wall slabs outside the inner faces.
        let walls = w.bodies.insert(rp::RigidBodyBuilder::fixed());
        let [hx, hy] = self.half_size;
        let (c, h) = (self.center, self.height);
        let slabs = [
            (
                Vec3::new(c.x, c.y, c.z - SLAB),
                Vec3::new(hx + 2.0 * SLAB, hy + 2.0 * SLAB, SLAB),
            ),
            (
                Vec3::new(c.x - hx - SLAB, c.y, c.z + 0.5 * h),
                Vec3::new(SLAB, hy + 2.0 * SLAB, 0.5 * h),
            ),
            (
                Vec3::new(c.x + hx + SLAB, c.y, c.z + 0.5 * h),
                Vec3::new(SLAB, hy + 2.0 * SLAB, 0.5 * h),
            ),
            (
                Vec3::new(c.x, c.y - hy - SLAB, c.z + 0.5 * h),
                Vec3::new(hx, SLAB, 0.5 * h),
            ),
            (
                Vec3::new(c.x, c.y + hy + SLAB, c.z + 0.5 * h),
                Vec3::new(hx, SLAB, 0.5 * h),
            ),
        ];
        for (centre, half) in slabs {
            let slab = material(rp::ColliderBuilder::cuboid(half.x, half.y, half.z))
                .translation(v(&centre));
            w.colliders.insert_with_parent(slab, walls, &mut w.bodies);
        }

        let mut handles = Vec::with_capacity(self.bodies.len());
        for b in &self.bodies {
            let cuboid = |h: &Vec3| rp::SharedShape::cuboid(h.x, h.y, h.z);
            let shape = match &b.shape {
                Shape::Sphere { radius } => rp::SharedShape::ball(*radius),
                Shape::Cuboid { half_extents } => cuboid(half_extents),
                Shape::Cross { c } => rp::SharedShape::compound(
                    Shape::cross_bars(*c)
                        .iter()
                        .map(|h| (rp::Pose::IDENTITY, cuboid(h)))
                        .collect(),
                ),
                other => return Err(format!("no Rapier shape for a {}", other.kind_name())),
            };
            // Centre of mass at the body origin, principal axes along the body axes.
            let mass = rp::MassProperties::new(rp::Vector::ZERO, b.mass, v(&b.inertia));
            let collider = material(rp::ColliderBuilder::new(shape)).mass_properties(mass);
            let q = b.orientation.quaternion().coords;
            let body = rp::RigidBodyBuilder::dynamic()
                .pose(rp::Pose::from_parts(
                    v(&b.position),
                    rp::Rotation::from_xyzw(q.x, q.y, q.z, q.w),
                ))
                .linvel(v(&b.velocity))
                .angvel(v(&b.angular_velocity))
                .can_sleep(self.sleeping);
            handles.push(w.insert(body, collider).0);
        }
        Ok(RapierPile {
            world: w,
            handles,
            masses: self.bodies.iter().map(|b| (b.mass, b.inertia)).collect(),
        })
    }
}

/// A pile in Rapier, with our mass properties to measure its energy.
struct RapierPile {
    world: rp::PhysicsWorld,
    handles: Vec<rp::RigidBodyHandle>,
    /// Per body: mass and principal inertia (the ones Rapier was given).
    masses: Vec<(f64, Vec3)>,
}

impl RapierPile {
    /// Total energy: ½ m |v|² + ½ Σ I_k ω_k² (body frame) − m g·x.
    fn energy(&self) -> f64 {
        let g = self.world.gravity;
        let mut e = 0.0;
        for (&h, &(m, inertia)) in self.handles.iter().zip(&self.masses) {
            let b = &self.world.bodies[h];
            let w = b.rotation().inverse() * b.angvel();
            e += 0.5 * m * b.linvel().length_squared()
                + 0.5 * (inertia.x * w.x * w.x + inertia.y * w.y * w.y + inertia.z * w.z * w.z)
                - m * g.dot(b.translation());
        }
        e
    }

    /// Contact points handed to the solver (all manifolds, clusters where formed).
    fn contacts(&self) -> usize {
        self.world
            .narrow_phase
            .contact_pairs()
            .filter_map(|p| p.rigid())
            .flat_map(|r| r.solver_manifolds())
            .map(|m| m.data.solver_contacts.len())
            .sum()
    }
}

enum Engine {
    Rapier(Box<RapierPile>),
    Ours(Box<World>),
}

/// Two bodies touch at the end of a run when their surfaces are at most this far apart
/// (m): 1 cm, a third of a percent of the spheres' 3 m radius and of the cubes' 2.4 m
/// edge, far below a pile's spacing and above both engines' resting overlaps.
const TOUCH: f64 = 0.01;

/// The pile at the end of a run, measured the same way for every engine from the
/// bodies' poses and velocities alone (see `pile_state`).
struct PileState {
    /// Pairs of bodies whose surfaces are within [`TOUCH`] (our narrow phase on the
    /// engine's final poses).
    touching: usize,
    /// Mean height of the bodies' centres above the floor (m).
    mean_height: f64,
    /// Largest speed of a body's centre (m/s).
    max_speed: f64,
    /// Kinetic energy of the bodies, translational and rotational (J).
    kinetic: f64,
    /// Bodies whose centre has left the box's footprint or dropped below its floor
    /// (thrown out; counted in the other figures too).
    outside: usize,
    /// Deepest overlap of two bodies or of a body and the box (m, ≥ 0).
    deepest: f64,
}

impl Engine {
    /// Each body's position, orientation, velocity and angular velocity now, in the
    /// pile's order.
    fn poses(&self) -> Vec<Pose> {
        use impulse_lab::math::Quat;
        match self {
            Engine::Ours(w) => w
                .bodies
                .iter()
                .map(|b| (b.position, b.orientation, b.velocity, b.angular_velocity))
                .collect(),
            Engine::Rapier(r) => r
                .handles
                .iter()
                .map(|&h| {
                    let b = &r.world.bodies[h];
                    let (x, q, v, w) = (b.translation(), b.rotation(), b.linvel(), b.angvel());
                    let q = Quat::from_quaternion(nalgebra::Quaternion::new(q.w, q.x, q.y, q.z));
                    (
                        Vec3::new(x.x, x.y, x.z),
                        q,
                        Vec3::new(v.x, v.y, v.z),
                        Vec3::new(w.x, w.y, w.z),
                    )
                })
                .collect(),
        }
    }
}

/// A body's position, orientation (principal frame → world), velocity and angular
/// velocity.
type Pose = (Vec3, impulse_lab::math::Quat, Vec3, Vec3);

/// The end state of a run ([`PileState`]): the pile's bodies moved to `poses` in a world
/// of ours whose contact margin is [`TOUCH`], and its contacts detected.
fn pile_state(p: &Pile, poses: &[Pose]) -> PileState {
    let mut w = p.world(SolverKind::Jolt, None).unwrap_or_else(|e| fail(&e));
    for (b, &(x, q, v, omega)) in w.bodies.iter_mut().zip(poses) {
        b.position = x;
        b.orientation = q;
        b.velocity = v;
        b.angular_velocity = omega;
    }
    let kinetic = w
        .bodies
        .iter()
        .map(|b| b.kinetic_energy_translational() + b.kinetic_energy_rotational())
        .sum();
    w.contact_margin = TOUCH;
    let contacts = w.detect();
    let deepest = contacts.iter().fold(0.0f64, |d, c| d.max(-c.gap));
    let mut pairs: Vec<(usize, usize)> = contacts
        .iter()
        .filter(|c| c.gap <= TOUCH)
        .filter_map(|c| c.b.map(|b| (c.a.min(b), c.a.max(b))))
        .collect();
    pairs.sort_unstable();
    pairs.dedup();
    let n = poses.len().max(1) as f64;
    let [hx, hy] = p.half_size;
    let outside = poses
        .iter()
        .filter(|(x, _, _, _)| {
            let d = x - p.center;
            d.x.abs() > hx || d.y.abs() > hy || d.z < 0.0
        })
        .count();
    PileState {
        deepest,
        outside,
        touching: pairs.len(),
        mean_height: poses
            .iter()
            .map(|(x, _, _, _)| x.z - p.center.z)
            .sum::<f64>()
            / n,
        max_speed: poses.iter().fold(0.0, |m, (_, _, v, _)| m.max(v.norm())),
        kinetic,
    }
}

/// One engine's run through a scene.
struct Run {
    label: String,
    engine: Engine,
    sums: PhaseSums,
    /// Step time after each chunk (cumulative), and the steps done by then.
    checkpoints: Vec<(u64, Duration)>,
    /// Stopped by the budget or an error (the message).
    stopped: Option<String>,
    initial_energy: f64,
    energy: f64,
    /// Ours: the ledger's residual at the last step (J).
    residual: Option<f64>,
}

impl Run {
    fn new(label: String, engine: Engine) -> Run {
        let initial_energy = match &engine {
            Engine::Rapier(r) => r.energy(),
            Engine::Ours(w) => w.ledger.initial_total,
        };
        Run {
            label,
            engine,
            sums: PhaseSums::default(),
            checkpoints: Vec::new(),
            stopped: None,
            initial_energy,
            energy: initial_energy,
            residual: None,
        }
    }

    /// Advance `n` steps, timing each step only.
    fn advance(&mut self, n: u64) {
        match &mut self.engine {
            Engine::Rapier(r) => {
                for _ in 0..n {
                    let t0 = Instant::now();
                    r.world.step();
                    let wall = t0.elapsed();
                    self.sums.add_step(wall, r.contacts());
                }
                self.energy = r.energy();
            }
            Engine::Ours(w) => {
                for _ in 0..n {
                    let t0 = Instant::now();
                    let sample = w.step();
                    let wall = t0.elapsed();
                    match sample {
                        Ok(s) => {
                            self.sums.add(w, wall);
                            self.energy = s.total;
                            self.residual = Some(s.residual);
                        }
                        Err(e) => {
                            self.stopped = Some(format!("error at step {}: {e}", w.step_index));
                            break;
                        }
                    }
                }
            }
        }
        self.checkpoints.push((self.sums.steps, self.sums.wall));
    }

    /// Step time over the first `steps` steps (at a checkpoint), if this run got there.
    fn time_at(&self, steps: u64) -> Option<Duration> {
        self.checkpoints
            .iter()
            .find(|(s, _)| *s == steps)
            .map(|&(_, t)| t)
    }

    fn relative_energy_change(&self) -> f64 {
        (self.energy - self.initial_energy) / self.initial_energy
    }
}

struct Options {
    steps: u64,
    chunk: u64,
    budget: Option<Duration>,
    threads: usize,
    /// The resting model of our worlds (`None`: the default).
    resting: Option<RestingModel>,
}

fn main() {
    let args = BenchArgs::from_env(&[
        "threads",
        "chunk",
        "budget",
        "resting",
        "restitution",
        "friction",
        "seed",
    ])
    .unwrap_or_else(|e| fail(&e));
    let mut scenes = args.scenes(&PILES);
    if scenes == ["all"] {
        scenes = PILES.map(str::to_string).to_vec();
    }
    let steps = args.steps(3000).unwrap_or_else(|e| fail(&e));
    let chosen = args.solvers().unwrap_or_else(|e| fail(&e));
    let methods: Vec<SolverKind> = METHODS.into_iter().filter(|k| chosen.contains(k)).collect();
    let threads: usize = args.option("threads", 1).unwrap_or_else(|e| fail(&e));
    let chunk: u64 = args.option("chunk", 100).unwrap_or_else(|e| fail(&e));
    let budget: f64 = args.option("budget", 0.0).unwrap_or_else(|e| fail(&e));
    if threads == 0 || chunk == 0 || !(budget.is_finite() && budget >= 0.0) {
        fail("--threads and --chunk must be ≥ 1 and --budget a number of seconds ≥ 0");
    }
    let restitution: Option<f64> = match args.option::<String>("restitution", String::new()) {
        Ok(v) if v.is_empty() => None,
        Ok(v) => match v.parse::<f64>() {
            Ok(e) if (0.0..=1.0).contains(&e) => Some(e),
            _ => fail("--restitution must be a number in [0, 1]"),
        },
        Err(e) => fail(&e),
    };
    let friction: Option<f64> = match args.option::<String>("friction", String::new()) {
        Ok(v) if v.is_empty() => None,
        Ok(v) => match v.parse::<f64>() {
            Ok(mu) if mu.is_finite() && mu >= 0.0 => Some(mu),
            _ => fail("--friction must be a number ≥ 0"),
        },
        Err(e) => fail(&e),
    };
    let seed: Option<u64> = match args.option::<String>("seed", String::new()) {
        Ok(v) if v.is_empty() => None,
        Ok(v) => Some(
            v.parse()
                .unwrap_or_else(|_| fail("--seed must be a whole number ≥ 0")),
        ),
        Err(e) => fail(&e),
    };
    let piles: Vec<Pile> = scenes
        .iter()
        .map(|s| {
            let mut p = pile(s, seed).unwrap_or_else(|e| fail(&e));
            if let Some(seed) = seed {
                p.description = format!("{} (seed {seed})", p.description);
            }
            if let Some(restitution) = restitution {
                p.restitution = restitution;
                p.description = format!("{} (e set to {restitution})", p.description);
            }
            if let Some(friction) = friction {
                p.friction = friction;
                p.description = format!("{} (μ set to {friction})", p.description);
            }
            p
        })
        .collect();
    let options = Options {
        steps,
        chunk,
        budget: (budget > 0.0).then(|| Duration::from_secs_f64(budget)),
        threads,
        resting: args
            .option::<String>("resting", String::new())
            .ok()
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().unwrap_or_else(|e: String| fail(&e))),
    };

    println!("{}", rapier_settings(&piles[0]));
    println!(
        "our worlds: {} rayon thread(s); methods at their default parameters (SolverParams::default()) but e and μ{}; sleeping as the scene says",
        options.threads,
        options.resting.map_or(String::new(), |r| format!(
            " and resting model {}",
            r.name()
        ))
    );
    println!(
        "{} steps per scene in chunks of {}, budget {}; load average at start: {}",
        options.steps,
        options.chunk,
        options.budget.map_or("none".to_string(), |b| format!(
            "{} s per engine and scene",
            b.as_secs_f64()
        )),
        load_average()
    );

    let path = common::out_dir().join("peer.csv");
    let mut csv = std::fs::File::create(&path)
        .unwrap_or_else(|e| fail(&format!("cannot write {}: {e}", path.display())));
    writeln!(csv, "scene,engine,bodies,threads,steps_requested,steps_done,mean_contacts,{PHASE_COLUMNS},step_us,steps_per_s,ratio_to_rapier,iterations_per_step,capped_steps,contact_pass_sweeps_per_step,simulated_s,relative_energy_change,ledger_residual_over_e0,stopped").unwrap();
    let pool = common::thread_pool(options.threads);
    let mut summary = Vec::new();
    for p in &piles {
        let runs = pool.install(|| bench_pile(p, &methods, &options));
        report(p, &runs, &options, &mut csv);
        summary.push((p.name.clone(), runs));
    }
    println!("load average at end: {}", load_average());
    println!("\nsummary: steps/s (ratio to Rapier's steps/s in this run)\n");
    print!("{}", summary_table(&summary));
    println!("\nCSV: {}", path.display());
}

/// A clear message and exit status 2 for bad arguments.
fn fail(message: &str) -> ! {
    eprintln!("peer: {message}");
    std::process::exit(2)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "n/a".into())
}

/// Rapier's settings as this benchmark uses them (its defaults but dt and gravity).
fn rapier_settings(p: &Pile) -> String {
    let ip = p
        .rapier(FrictionModel::default())
        .map(|r| r.world.integration_parameters)
        .unwrap_or_else(|e| fail(&e));
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Rapier {} (rapier3d-f64, no `parallel` feature: one thread), IntegrationParameters::default() but dt:",
        rapier3d_f64::VERSION
    );
    let _ = writeln!(
        s,
        "  dt = {:.6} s; num_solver_iterations (substeps) = {}, num_internal_pgs_iterations = {}, num_internal_stabilization_iterations = {}, warmstart_coefficient = {}",
        ip.dt,
        ip.num_solver_iterations,
        ip.num_internal_pgs_iterations,
        ip.num_internal_stabilization_iterations,
        ip.warmstart_coefficient
    );
    let _ = writeln!(
        s,
        "  contact_softness = {} Hz, ζ = {}; static_contact_softness = {} Hz, ζ = {}; friction_model = {:?}; friction_in_bias_pass = {}",
        ip.contact_softness.natural_frequency,
        ip.contact_softness.damping_ratio,
        ip.static_contact_softness.natural_frequency,
        ip.static_contact_softness.damping_ratio,
        ip.friction_model,
        ip.friction_in_bias_pass
    );
    let _ = writeln!(
        s,
        "  allowed_linear_error = {} m, max_corrective_velocity = {} m/s, prediction_distance = {} m, max_linear_velocity = {} m/s, length_unit = {}",
        ip.allowed_linear_error(),
        ip.max_corrective_velocity(),
        ip.prediction_distance(),
        ip.max_linear_velocity(),
        ip.length_unit
    );
    let _ = writeln!(
        s,
        "  max_ccd_substeps = {} (CCD off per body), contact_clustering = {}, contact_recycling = {} (recycle distance {} m)",
        ip.max_ccd_substeps,
        ip.contact_clustering,
        ip.contact_recycling,
        ip.contact_recycle_distance()
    );
    let _ = write!(
        s,
        "  sleeping (when on): linear threshold {} m/s, angular threshold {} rad/s, time until sleep {} s; friction and restitution combine rule: {:?}",
        rp::RigidBodyActivation::default_normalized_linear_threshold() * ip.length_unit,
        rp::RigidBodyActivation::default_angular_threshold(),
        rp::RigidBodyActivation::default_time_until_sleep(),
        rp::CoefficientCombineRule::default()
    );
    s
}

/// Run Rapier and each method on `p`, interleaved in chunks.
fn bench_pile(p: &Pile, methods: &[SolverKind], o: &Options) -> Vec<Run> {
    let mut runs = vec![Run::new(
        "rapier".into(),
        Engine::Rapier(Box::new(
            p.rapier(FrictionModel::Simplified)
                .unwrap_or_else(|e| fail(&e)),
        )),
    )];
    // Rapier with one Coulomb friction cone per contact point, as ours: its ratio in the
    // tables is to the default (simplified) Rapier above.
    runs.push(Run::new(
        "rapier-c".into(),
        Engine::Rapier(Box::new(
            p.rapier(FrictionModel::Coulomb)
                .unwrap_or_else(|e| fail(&e)),
        )),
    ));
    for &k in methods {
        let world = p.world(k, o.resting).unwrap_or_else(|e| fail(&e));
        runs.push(Run::new(k.name().into(), Engine::Ours(Box::new(world))));
    }
    let mut done = 0;
    while done < o.steps {
        let n = o.chunk.min(o.steps - done);
        for run in runs.iter_mut().filter(|r| r.stopped.is_none()) {
            run.advance(n);
            if run.stopped.is_none()
                && let Some(b) = o.budget
                && run.sums.wall > b
                && run.sums.steps < o.steps
            {
                run.stopped = Some(format!("budget: stopped at step {}", run.sums.steps));
            }
        }
        done += n;
        // Progress on stderr (a full run takes minutes per scene).
        let times: Vec<String> = runs
            .iter()
            .map(|r| format!("{} {:.1} s", r.label, r.sums.wall.as_secs_f64()))
            .collect();
        eprintln!(
            "{}: {done}/{} steps; step time {}",
            p.name,
            o.steps,
            times.join(", ")
        );
    }
    runs
}

/// Ratio of `run`'s steps/s to Rapier's over the same steps.
fn ratio_to_rapier(run: &Run, rapier: &Run) -> f64 {
    let n = run.sums.steps.min(rapier.sums.steps);
    match (run.time_at(n), rapier.time_at(n)) {
        (Some(t), Some(tr)) => tr.as_secs_f64() / t.as_secs_f64(),
        _ => f64::NAN,
    }
}

/// Print the scene's table and write its CSV rows.
fn report(p: &Pile, runs: &[Run], o: &Options, csv: &mut std::fs::File) {
    println!(
        "\n{} ({} bodies; {}): {} steps, dt = 1/{:.0} s",
        p.name,
        p.bodies.len(),
        p.description,
        o.steps,
        1.0 / p.dt
    );
    println!(
        "{:<6} {:>5} {:>8} {:>8} {:>9} {:>9} {:>10} {:>9} {:>9} {:>9} {:>8} {:>8} {:>9} {:>9} {:>10} {:>11}",
        "engine",
        "steps",
        "contacts",
        "broad µs",
        "narrow µs",
        "solve µs",
        "contact µs",
        "integr µs",
        "measure µs",
        "step µs",
        "steps/s",
        "×Rapier",
        "iter/step",
        "pass/step",
        "ΔE/E₀",
        "residual/E₀"
    );
    let rapier = &runs[0];
    for run in runs {
        let s = &run.sums;
        let ratio = ratio_to_rapier(run, rapier);
        let ours = matches!(run.engine, Engine::Ours(_));
        let phases = if ours {
            s.phase_us().map(|x| format!("{x:.1}"))
        } else {
            std::array::from_fn(|_| "-".to_string())
        };
        let residual = run.residual.map(|r| r / run.initial_energy);
        println!(
            "{:<6} {:>5} {:>8.0} {:>8} {:>9} {:>9} {:>10} {:>9} {:>9} {:>9.1} {:>8.1} {:>8.3} {:>9} {:>9} {:>10.2e} {:>11}{}",
            run.label,
            s.steps,
            s.mean_contacts(),
            phases[0],
            phases[1],
            phases[2],
            phases[3],
            phases[4],
            phases[5],
            s.step_us(),
            s.rate(),
            ratio,
            if ours {
                format!("{:.1}", s.iterations_per_step())
            } else {
                "-".into()
            },
            if ours {
                format!("{:.1}", s.pass_sweeps_per_step())
            } else {
                "-".into()
            },
            run.relative_energy_change(),
            residual.map_or("-".into(), |r| format!("{r:.2e}")),
            run.stopped
                .as_ref()
                .map_or(String::new(), |m| format!("  ({m})"))
        );
        writeln!(
            csv,
            "{},{},{},{},{},{},{:.1},{},{:.2},{:.2},{:.4},{},{},{},{:.4},{:.6e},{},{}",
            p.name,
            run.label,
            p.bodies.len(),
            o.threads,
            o.steps,
            s.steps,
            s.mean_contacts(),
            if ours { s.phase_csv() } else { ",,,,,".into() },
            s.step_us(),
            s.rate(),
            ratio,
            if ours {
                format!("{:.2}", s.iterations_per_step())
            } else {
                String::new()
            },
            if ours {
                s.capped.to_string()
            } else {
                String::new()
            },
            if ours {
                format!("{:.2}", s.pass_sweeps_per_step())
            } else {
                String::new()
            },
            s.steps as f64 * p.dt,
            run.relative_energy_change(),
            residual.map_or(String::new(), |r| format!("{r:.6e}")),
            run.stopped.as_deref().unwrap_or("")
        )
        .unwrap();
    }
    // The pile at the end, measured alike for every engine (`pile_state`).
    println!(
        "pile at the end ({:.2} s; touching: surfaces within {TOUCH} m):",
        o.steps as f64 * p.dt
    );
    for run in runs {
        let st = pile_state(p, &run.engine.poses());
        println!(
            "{:<8} touching pairs {:>5}, mean centre height {:>7.3} m, largest speed {:>7.3} m/s, kinetic energy {:.3e} J, outside the box {}, deepest overlap {:.2e} m",
            run.label,
            st.touching,
            st.mean_height,
            st.max_speed,
            st.kinetic,
            st.outside,
            st.deepest
        );
    }
    // Manifold recycling (`collision::manifold_cache`): the share of flat-faced pairs
    // that recycled their manifold, over the run and over its last tenth (the settled
    // pile).
    for run in runs.iter().filter(|r| matches!(r.engine, Engine::Ours(_))) {
        let s = &run.sums;
        let last = s.manifolds.len() - s.manifolds.len() / 10;
        if let (Some(all), Some(end)) = (s.recycled_percent(0), s.recycled_percent(last)) {
            println!(
                "{}: flat-faced pairs recycled {all:.1} % of the run, {end:.1} % of its last tenth",
                run.label
            );
        }
    }
}

/// Markdown table: one row per scene, steps/s and the ratio to Rapier per engine.
fn summary_table(summary: &[(String, Vec<Run>)]) -> String {
    let mut s = String::new();
    let Some((_, first)) = summary.first() else {
        return s;
    };
    let labels: Vec<&str> = first.iter().map(|r| r.label.as_str()).collect();
    let _ = writeln!(s, "| scene | {} |", labels.join(" | "));
    let _ = writeln!(s, "|---|{}", "---|".repeat(labels.len()));
    for (name, runs) in summary {
        let rapier = &runs[0];
        let cells: Vec<String> = runs
            .iter()
            .map(|r| {
                let partial = if r.stopped.is_some() {
                    format!(", {} steps", r.sums.steps)
                } else {
                    String::new()
                };
                if std::ptr::eq(r, rapier) {
                    format!("{:.0}", r.sums.rate())
                } else {
                    format!(
                        "{:.0} ({:.2}×{partial})",
                        r.sums.rate(),
                        ratio_to_rapier(r, rapier)
                    )
                }
            })
            .collect();
        let _ = writeln!(s, "| {name} | {} |", cells.join(" | "));
    }
    s
}
