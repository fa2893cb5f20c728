//! Fidelity matrix: each collision method against conservation laws and textbook
//! solutions of rigid-body mechanics, on small scenes built here in code.
//!
//! Every check runs a [`World`] with the method's default [`SolverParams`] (only the
//! material constants e and μ of the scene are set), island sleeping off, the default
//! rotation integrator (θ-method, θ = ½, paper 004) and h = 1/600 s, and compares one
//! measured number with its expected value:
//!
//! - **Linear and angular momentum** of an isolated cluster (zero gravity, no containers)
//!   of spheres, cubes, crosses and ellipsoids thrown together: every impulse acts as ±P at
//!   one point, so Σ m v and Σ (x × m v + I ω) about the origin are constant. Measured:
//!   the largest ‖P − P₀‖ / Σ m|v| and ‖L − L₀‖ / ‖L₀‖ over [`MOMENTUM_STEPS`] steps.
//!   Again with tetrahedra in place of the crosses ([`Cluster::Tetrahedra`]): the
//!   position projection (on at the defaults) moves and turns each overlapping body so
//!   that the cluster's momenta are kept, whatever the shapes.
//! - **Elastic chain** (Newton's cradle, zero gravity, e = 1, μ = 0): five touching equal
//!   balls, the first moving into the others. An energy-conserving law keeps the kinetic
//!   energy; a perfectly inelastic one (MDP) leaves all five moving together at v₀/5,
//!   i.e. loses 4/5 of it. Measured: |E − E₀| / E₀ after the run.
//! - **Elastic multi-contact box** (zero gravity, e = 1, μ = 0, 10 s): cubes and crosses
//!   in a closed box ([`elastic_box`]), colliding with corners, edges and faces, so most
//!   impacts have several contacts. The energy-keeping laws (ETM, SQM, SMM, jolt, and
//!   CCP by paper 002) end with E₀; MDP is purely inelastic and the row does not apply.
//!   Measured: |E − E₀| / E₀ after 10 s.
//! - **Slope** at θ = 20°: a cube released at rest with μ = 0.6 > tan θ must stay (its
//!   displacement over 5 s); with μ = 0.2 < tan θ it slides with acceleration
//!   g (sin θ − μ cos θ); thrown downhill at 2 m/s with μ = 0.6 it decelerates at
//!   g (μ cos θ − sin θ) until it stops.
//! - **Sliding into rolling**: a sphere thrown along a level floor without spin (μ = 0.3)
//!   slides until t = 2 v₀ / (7 μ g), then rolls at v = 5 v₀ / 7 (friction's moment about
//!   the contact point is zero, so the angular momentum about it is kept).
//! - **Rebound**: a ball dropped from 1 m on a level floor with restitution e rebounds to
//!   e² of the previous height. CCP's Newmark contact law is energy-conserving whatever
//!   e (paper 002: "the rebound height is always 1 m"): expected ratio 1. MDP is purely
//!   inelastic (paper 003): expected 0.
//!
//! Heights are apexes of the discrete free-flight arcs: semi-implicit Euler's positions
//! under constant gravity lie exactly on a parabola with acceleration g, so the apex of the
//! parabola through the three samples around the highest one is exact, whatever the
//! phase of the samples.

use crate::body::{RigidBody, total_angular_momentum, total_linear_momentum};
use crate::container::Container;
use crate::dynamics::rotation::RotationIntegrator;
use crate::dynamics::solver::mdp::FrictionLaw;
use crate::dynamics::solver::{SolverError, SolverKind, SolverParams};
use crate::math::{Quat, Vec3};
use crate::shapes::Shape;
use crate::world::World;

/// Time step of every check (s): the project's default.
pub const DT: f64 = 1.0 / 600.0;
/// Standard gravity (m/s²).
pub const G: f64 = 9.81;
/// Steps of the momentum cluster (1 s).
pub const MOMENTUM_STEPS: usize = 600;
/// Slope angle of the friction checks (rad): 20°, tan θ = 0.364.
pub const SLOPE: f64 = 20.0 * std::f64::consts::PI / 180.0;

/// How a measured value is compared with the expected one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tolerance {
    /// |measured − expected| ≤ value.
    Absolute(f64),
    /// |measured − expected| ≤ value × |expected|.
    Relative(f64),
}

impl Tolerance {
    pub fn accepts(&self, measured: f64, expected: f64) -> bool {
        let err = (measured - expected).abs();
        match *self {
            Tolerance::Absolute(t) => err <= t,
            Tolerance::Relative(t) => err <= t * expected.abs(),
        }
    }

    fn describe(&self) -> String {
        match *self {
            Tolerance::Absolute(t) => format!("± {t:.0e}"),
            Tolerance::Relative(t) if t >= 1e-3 => format!("± {}%", t * 100.0),
            Tolerance::Relative(t) => format!("± {:.0e}%", t * 100.0),
        }
    }
}

/// One row of the matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    pub method: SolverKind,
    /// What is measured, e.g. "angular momentum |ΔL|/|L₀|".
    pub name: String,
    pub measured: f64,
    pub expected: f64,
    pub tolerance: Tolerance,
    /// Unit of measured and expected ("" for ratios).
    pub unit: &'static str,
    /// Whether the run failed (a solver error or NaN): then it did not pass.
    pub error: Option<String>,
    /// What the run reported besides the number (e.g. that an iteration cap was hit).
    pub note: Option<String>,
    /// Why the expected value and the tolerance are what they are, printed under the row.
    pub why: Option<&'static str>,
    /// `Some(reason)` when the check does not apply to the method (its law has no such
    /// expected value): the row is printed with the reason and neither passes nor fails.
    pub not_applicable: Option<&'static str>,
}

impl Check {
    /// Whether the check holds (a row that does not apply counts as held).
    pub fn passed(&self) -> bool {
        self.not_applicable.is_some()
            || (self.error.is_none()
                && self.measured.is_finite()
                && self.tolerance.accepts(self.measured, self.expected))
    }
}

/// World of a check: no sleeping, default rotation, h = [`DT`].
fn world(kind: SolverKind, gravity: Vec3, params: SolverParams) -> Result<World, SolverError> {
    let mut w = World::new(gravity, DT, kind, params)?;
    w.sleep.enabled = false;
    Ok(w)
}

fn params(restitution: f64, friction: f64) -> SolverParams {
    SolverParams {
        restitution,
        friction,
        ..Default::default()
    }
}

/// The bodies of an isolated cluster ([`momentum_cluster`]): two of each of four shapes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cluster {
    /// Spheres, cubes, crosses and ellipsoids.
    Mixed,
    /// Spheres, cubes, crosses and spheres in place of the ellipsoids: every body has
    /// isotropic inertia, whose torque-free motion symplectic Euler integrates exactly.
    Isotropic,
    /// Spheres, cubes, regular tetrahedra (edge 0.55 m) and ellipsoids: polyhedral
    /// vertex and edge contacts and curved ones, both non-isotropic, which the position
    /// projection (k_p > 0 at the defaults) moves and turns.
    Tetrahedra,
}

/// The isolated cluster: two bodies of each of the [`Cluster`]'s four shapes on a ring
/// of radius 1.2 m about a point off the origin, thrown inwards with a common swirl and
/// random spins (fixed seed), so that they collide repeatedly within the run.
pub fn momentum_cluster(
    kind: SolverKind,
    rotation: RotationIntegrator,
    cluster: Cluster,
) -> Result<World, SolverError> {
    use rand::{Rng, SeedableRng};
    let mut w = world(kind, Vec3::zeros(), params(0.5, 0.4))?;
    w.rotation = rotation;
    let ellipsoid = Shape::Ellipsoid {
        semi_axes: Vec3::new(0.4, 0.25, 0.18),
    };
    let shapes = [
        Shape::Sphere { radius: 0.3 },
        Shape::Cuboid {
            half_extents: Vec3::repeat(0.25),
        },
        match cluster {
            Cluster::Tetrahedra => Shape::regular_tetrahedron(0.55),
            _ => Shape::Cross { c: 0.2 },
        },
        match cluster {
            Cluster::Isotropic => Shape::Sphere { radius: 0.28 },
            _ => ellipsoid,
        },
    ];
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(32);
    let centre = Vec3::new(0.7, -0.4, 0.3);
    let n = 2 * shapes.len();
    for k in 0..n {
        let angle = k as f64 * std::f64::consts::TAU / n as f64;
        let radial = Vec3::new(angle.cos(), angle.sin(), 0.15 * (k as f64 - 3.5) / 3.5);
        let q = Quat::from_euler_angles(
            rng.random_range(0.0..3.0),
            rng.random_range(0.0..3.0),
            rng.random_range(0.0..3.0),
        );
        let mut b = RigidBody::new(
            &shapes[k % shapes.len()],
            800.0 + 100.0 * k as f64,
            centre + 1.2 * radial,
            q,
        );
        let swirl = Vec3::z().cross(&radial);
        b.velocity = -2.5 * radial
            + 0.8 * swirl
            + Vec3::new(
                rng.random_range(-0.3..0.3),
                rng.random_range(-0.3..0.3),
                rng.random_range(-0.3..0.3),
            );
        b.angular_velocity = Vec3::new(
            rng.random_range(-4.0..4.0),
            rng.random_range(-4.0..4.0),
            rng.random_range(-4.0..4.0),
        );
        w.add_body(b);
    }
    w.start_ledger();
    Ok(w)
}

/// Largest relative drifts of linear and angular momentum of the cluster over
/// [`MOMENTUM_STEPS`] steps, and the number of impulses applied (see
/// [`momentum_cluster`]).
pub fn momentum_drift(
    kind: SolverKind,
    rotation: RotationIntegrator,
    cluster: Cluster,
) -> Result<(f64, f64, u64), SolverError> {
    let mut w = momentum_cluster(kind, rotation, cluster)?;
    let (p0, l0) = (
        total_linear_momentum(&w.bodies),
        total_angular_momentum(&w.bodies),
    );
    let p_scale: f64 = w.bodies.iter().map(|b| b.mass * b.velocity.norm()).sum();
    let l_scale = l0.norm();
    let (mut dp, mut dl, mut impulses) = (0.0f64, 0.0f64, 0u64);
    for _ in 0..MOMENTUM_STEPS {
        w.step()?;
        impulses += u64::from(w.last_report.impulses);
        dp = dp.max((total_linear_momentum(&w.bodies) - p0).norm() / p_scale);
        dl = dl.max((total_angular_momentum(&w.bodies) - l0).norm() / l_scale);
    }
    Ok((dp, dl, impulses))
}

/// Newton's cradle: five touching balls (r = 0.1 m), the first moving at 1 m/s into the
/// others; e = 1, μ = 0, zero gravity. Returns |E − E₀| / E₀ after 300 steps and whether
/// any step hit its solver's iteration cap.
pub fn cradle_energy(kind: SolverKind) -> Result<(f64, bool), SolverError> {
    let mut w = world(kind, Vec3::zeros(), params(1.0, 0.0))?;
    let r = 0.1;
    for k in 0..5 {
        let mut b = RigidBody::new(
            &Shape::Sphere { radius: r },
            1000.0,
            Vec3::new(2.0 * r * k as f64, 0.0, 0.0),
            Quat::identity(),
        );
        if k == 0 {
            b.velocity = Vec3::new(1.0, 0.0, 0.0);
        }
        w.add_body(b);
    }
    let e0 = w.start_ledger().total;
    let mut capped = false;
    for _ in 0..300 {
        w.step()?;
        capped |= w.last_report.hit_iteration_cap;
    }
    let e = w.state_energy(w.last_report.elastic).total();
    Ok(((e - e0).abs() / e0, capped))
}

/// Inner half-width of the closed box of [`elastic_box`] (m).
pub const BOX_HALF: f64 = 0.6;

/// Steps of the elastic box (10 s).
pub const ELASTIC_BOX_STEPS: usize = 6000;

/// Bound on |E − E₀| / E₀ of the elastic box for the methods whose law keeps the energy
/// at e = 1, μ = 0 (see [`elastic_box_why`]).
pub const ELASTIC_BOX_TOLERANCE: f64 = 1e-6;

/// The elastic box: 14 cubes (0.2 m) and 13 crosses (c = 0.08 m, 0.24 m across) in a
/// closed 1.2 m box (six one-sided planes), zero gravity, e = 1, μ = 0, thrown in random
/// directions at 1-2 m/s with random spins (fixed seed), so that they hit the walls and
/// each other with corners, edges and faces (about 4,000 impulses in 10 s under SQM).
///
/// Two of the world's resting-contact devices are off, because neither belongs to a
/// collision law and both change the energy of a free elastic system:
/// - `rest_velocity` = 0: an approach slower than `rest_velocity` is a *resting* contact
///   and gets e = 0 (Guendelman et al. 2003's threshold, for piles); with no gravity and
///   e = 1 every approach is an impact.
/// - `kp` = 0: position projection moves overlapping bodies without forces and hands
///   each moved body's change of orbital angular momentum to its spin, which changes the
///   kinetic energy (booked as the ledger's `projection`). With speculative contacts
///   the bodies overlap only by what a step's rotation of a corner misses.
pub fn elastic_box(kind: SolverKind) -> Result<World, SolverError> {
    use rand::{Rng, SeedableRng};
    let mut w = world(
        kind,
        Vec3::zeros(),
        SolverParams {
            rest_velocity: 0.0,
            kp: 0.0,
            ..params(1.0, 0.0)
        },
    )?;
    for axis in [Vec3::x(), Vec3::y(), Vec3::z()] {
        for sign in [1.0, -1.0] {
            w.add_container(Container::Plane {
                point: -sign * BOX_HALF * axis,
                normal: sign * axis,
            });
        }
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(43);
    for k in 0..27 {
        let shape = if k % 2 == 0 {
            Shape::Cuboid {
                half_extents: Vec3::repeat(0.1),
            }
        } else {
            Shape::Cross { c: 0.08 }
        };
        // On a 3 × 3 × 3 grid 0.36 m apart: more than the largest bounding diameter
        // (0.35 m, a cube's), and clear of the walls, whatever the orientations.
        let cell = |i: usize| 0.36 * (i as f64 - 1.0);
        let corner = Vec3::new(cell(k % 3), cell(k / 3 % 3), cell(k / 9));
        let q = Quat::from_euler_angles(
            rng.random_range(0.0..3.0),
            rng.random_range(0.0..3.0),
            rng.random_range(0.0..3.0),
        );
        let mut b = RigidBody::new(&shape, 800.0 + 20.0 * k as f64, corner, q);
        let dir = Vec3::new(
            rng.random_range(-1.0..1.0),
            rng.random_range(-1.0..1.0),
            rng.random_range(-1.0..1.0),
        )
        .normalize();
        b.velocity = rng.random_range(1.0..2.0) * dir;
        b.angular_velocity = Vec3::new(
            rng.random_range(-6.0..6.0),
            rng.random_range(-6.0..6.0),
            rng.random_range(-6.0..6.0),
        );
        w.add_body(b);
    }
    w.start_ledger();
    Ok(w)
}

/// Relative energy change (E − E₀) / E₀ of the elastic box after `steps` steps (E the
/// kinetic energy plus ETM's elastic energy stored in contacts mid-impact; there is no
/// gravity), and the number of impulses applied.
pub fn elastic_box_energy(kind: SolverKind, steps: usize) -> Result<(f64, u64), SolverError> {
    let mut w = elastic_box(kind)?;
    let e0 = w.state_energy(0.0).total();
    let mut impulses = 0u64;
    for _ in 0..steps {
        w.step()?;
        impulses += u64::from(w.last_report.impulses);
    }
    let e = w.state_energy(w.last_report.elastic).total();
    Ok(((e - e0) / e0, impulses))
}

/// Why the elastic box expects what it expects of `kind` (printed under its row).
pub fn elastic_box_why(kind: SolverKind) -> &'static str {
    match kind {
        SolverKind::Ccp => {
            "paper 002 §5.3: the cone complementarity contact with Newmark keeps the energy \
             (\"the maximum distance ... is always equal to 1 m\"): a converged solve does no \
             normal work (p_n g_n = 0), a speculative contact the step closes is active, and \
             the contact pass keeps to CCP's bound; the same 1e-6 bar as the other methods"
        }
        SolverKind::Mdp => "no expected value: purely inelastic impacts",
        _ => {
            "e = 1, μ = 0 (rest_velocity = 0, kp = 0: no resting contacts, no projection): \
             u_n⁺ = −u_n⁻ at every impulse, whose work P·(u⁻ + u⁺)/2 is then zero (paper \
             000, eq. 16), and free flight keeps the energy (no gravity, isotropic inertia). \
             Rounding and SMM's solves (stopped at 1e-8 of each velocity jump) leave ~1e-9 \
             over ~4,000 impacts; 1e-6 is issue 43's bound"
        }
    }
}

/// Unit normal of the slope, and the downhill unit direction in it.
pub fn slope_frame() -> (Vec3, Vec3) {
    let n = Vec3::new(-SLOPE.sin(), 0.0, SLOPE.cos());
    let down = Vec3::new(-SLOPE.cos(), 0.0, -SLOPE.sin());
    (n, down)
}

/// A 0.2 m cube resting on the slope (face down, gap 0) with friction μ and downhill
/// speed `v0`, sleeping off.
pub fn block_on_slope(kind: SolverKind, mu: f64, v0: f64) -> Result<World, SolverError> {
    let (n, down) = slope_frame();
    let mut w = world(kind, Vec3::new(0.0, 0.0, -G), params(0.5, mu))?;
    w.add_container(Container::Plane {
        point: Vec3::zeros(),
        normal: n,
    });
    let q = Quat::from_axis_angle(&Vec3::y_axis(), -SLOPE);
    let half = 0.1;
    let mut b = RigidBody::new(
        &Shape::Cuboid {
            half_extents: Vec3::repeat(half),
        },
        1000.0,
        half * n,
        q,
    );
    b.velocity = v0 * down;
    w.add_body(b);
    w.start_ledger();
    Ok(w)
}

/// Distance (m) a cube released at rest on the 20° slope with μ = 0.6 moves in 5 s.
pub fn slope_hold(kind: SolverKind) -> Result<f64, SolverError> {
    let mut w = block_on_slope(kind, 0.6, 0.0)?;
    let x0 = w.bodies[0].position;
    for _ in 0..3000 {
        w.step()?;
    }
    Ok((w.bodies[0].position - x0).norm())
}

/// Mean downhill acceleration (m/s², negative: deceleration) of the block between
/// `t0` and `t1`, from its downhill velocity.
fn slope_acceleration(mut w: World, t0: f64, t1: f64) -> Result<f64, SolverError> {
    let (_, down) = slope_frame();
    let (n0, n1) = ((t0 / DT).round() as usize, (t1 / DT).round() as usize);
    let mut v0 = 0.0;
    for k in 1..=n1 {
        w.step()?;
        if k == n0 {
            v0 = w.bodies[0].velocity.dot(&down);
        }
    }
    let v1 = w.bodies[0].velocity.dot(&down);
    Ok((v1 - v0) / ((n1 - n0) as f64 * DT))
}

/// Downhill acceleration of a cube released on the 20° slope with μ = 0.2 (0.2 s to 1.2 s).
pub fn slope_slide(kind: SolverKind) -> Result<f64, SolverError> {
    slope_acceleration(block_on_slope(kind, 0.2, 0.0)?, 0.2, 1.2)
}

/// Deceleration of a cube thrown downhill at 2 m/s on the 20° slope with μ = 0.6
/// (0.1 s to 0.7 s; it stops after 0.92 s).
pub fn slope_brake(kind: SolverKind) -> Result<f64, SolverError> {
    Ok(-slope_acceleration(
        block_on_slope(kind, 0.6, 2.0)?,
        0.1,
        0.7,
    )?)
}

/// [`slope_brake`] for MDP under paper 003's Coulomb variant
/// ([`FrictionLaw::Coulomb`], §4), the law the row's expected value follows.
pub fn slope_brake_mdp_coulomb() -> Result<f64, SolverError> {
    let mut w = block_on_slope(SolverKind::Mdp, 0.6, 2.0)?;
    w.params.mdp_friction = FrictionLaw::Coulomb;
    Ok(-slope_acceleration(w, 0.1, 0.7)?)
}

/// Why MDP's thrown block is not held to Coulomb's deceleration (printed in its row).
pub const MDP_THROWN_WHY: &str = "paper 003's law is maximal dissipation per contact, which \
     differs from Coulomb's on sliding impulses (§4.1): at a corner the Delassus block \
     couples normal and tangent, and the dissipation-maximising impulse leaves the line of \
     the slip, so the block brakes short (docs/results/fidelity.md, \"Reading the failures\")";

/// Expected slope accelerations: g (sin θ − μ cos θ).
pub fn slope_expected(mu: f64) -> f64 {
    G * (SLOPE.sin() - mu * SLOPE.cos())
}

/// A sphere (r = 0.1 m) thrown at `v0` along +x on a level floor, μ = 0.3, no spin:
/// (time at which it starts rolling, its speed at t = 0.5 s).
pub fn sliding_to_rolling(kind: SolverKind, v0: f64) -> Result<(f64, f64), SolverError> {
    let r = 0.1;
    let mut w = world(kind, Vec3::new(0.0, 0.0, -G), params(0.5, 0.3))?;
    w.add_container(Container::Plane {
        point: Vec3::zeros(),
        normal: Vec3::z(),
    });
    let mut b = RigidBody::new(
        &Shape::Sphere { radius: r },
        1000.0,
        Vec3::new(0.0, 0.0, r),
        Quat::identity(),
    );
    b.velocity = Vec3::new(v0, 0.0, 0.0);
    w.add_body(b);
    w.start_ledger();
    let slip = |w: &World| {
        let b = &w.bodies[0];
        b.velocity.x - r * b.angular_velocity.y
    };
    // The slip falls linearly while sliding, by 7μgh/2 = 17 mm/s a step; rolling, it stays
    // at rounding, so 1e-3 v₀ tells them apart. A method that lets the ball hop on its
    // resting contact (restitution applied to the gravity kick) takes its friction
    // impulses every few steps: the slip falls in a staircase whose plateaus straddle the
    // line. The onset is where the line from (0, v₀) through the middle of the last
    // sliding plateau reaches zero.
    let (mut plateau, mut t_roll) = ((slip(&w), 0usize, 0usize), None);
    let steps = (0.5 / DT).round() as usize;
    for k in 1..=steps {
        w.step()?;
        let s = slip(&w);
        if t_roll.is_some() {
            continue;
        }
        if s <= 1e-3 * v0 {
            let (value, first, last) = plateau;
            let t_mid = 0.5 * (first + last) as f64 * DT;
            t_roll = Some(t_mid * v0 / (v0 - value));
        } else if s == plateau.0 {
            plateau.2 = k;
        } else {
            plateau = (s, k, k);
        }
    }
    Ok((t_roll.unwrap_or(f64::NAN), w.bodies[0].velocity.x))
}

/// Apex heights (m, of the ball's bottom above the floor) of a ball (r = 0.1 m) dropped
/// from 1 m with restitution `e`, μ = 0.3: the drop height and the next `bounces` apexes
/// (fewer if it stops bouncing within 4 s). `impact_timing`: see [`World::impact_timing`].
pub fn rebound_heights(
    kind: SolverKind,
    e: f64,
    bounces: usize,
    impact_timing: bool,
) -> Result<Vec<f64>, SolverError> {
    let r = 0.1;
    let mut w = world(kind, Vec3::new(0.0, 0.0, -G), params(e, 0.3))?;
    w.impact_timing = impact_timing;
    w.add_container(Container::Plane {
        point: Vec3::zeros(),
        normal: Vec3::z(),
    });
    let drop = 1.0;
    w.add_body(RigidBody::new(
        &Shape::Sphere { radius: r },
        1000.0,
        Vec3::new(0.0, 0.0, r + drop),
        Quat::identity(),
    ));
    w.start_ledger();
    let mut heights = vec![drop];
    let mut z = vec![drop];
    let steps = (4.0 / DT).round() as usize;
    for _ in 0..steps {
        w.step()?;
        z.push(w.bodies[0].position.z - r);
        let k = z.len() - 2;
        // A strict local maximum at k, in free flight (well above the contact margin).
        if k >= 1 && z[k] > z[k - 1] && z[k] >= z[k + 1] && z[k] > w.contact_margin {
            heights.push(parabola_apex(z[k - 1], z[k], z[k + 1]));
            if heights.len() > bounces {
                break;
            }
        }
    }
    Ok(heights)
}

/// Maximum of the parabola through (−1, y₋), (0, y₀), (1, y₊).
fn parabola_apex(ym: f64, y0: f64, yp: f64) -> f64 {
    let curvature = ym - 2.0 * y0 + yp;
    if curvature >= 0.0 {
        return y0;
    }
    let d = 0.5 * (ym - yp) / curvature;
    y0 - 0.25 * (ym - yp) * d
}

/// Expected rebound-height ratio of a method with restitution e.
pub fn rebound_expected(kind: SolverKind, e: f64) -> f64 {
    match kind {
        SolverKind::Ccp => 1.0,
        SolverKind::Mdp => 0.0,
        _ => e * e,
    }
}

/// Run every check for `kind`.
pub fn checks(kind: SolverKind) -> Vec<Check> {
    let mut out = Vec::new();
    let mut push = |name: String,
                    result: Result<f64, SolverError>,
                    expected: f64,
                    tolerance: Tolerance,
                    unit: &'static str| {
        let (measured, error) = match result {
            Ok(m) => (m, None),
            Err(e) => (f64::NAN, Some(e.to_string())),
        };
        out.push(Check {
            method: kind,
            name,
            measured,
            expected,
            tolerance,
            unit,
            error,
            note: None,
            why: None,
            not_applicable: None,
        });
    };
    let momentum = momentum_drift(kind, RotationIntegrator::default(), Cluster::Mixed);
    push(
        "isolated cluster: linear momentum |ΔP|/Σm|v|".into(),
        momentum.clone().map(|m| m.0),
        0.0,
        Tolerance::Absolute(1e-10),
        "",
    );
    push(
        "isolated cluster: angular momentum |ΔL|/|L₀|".into(),
        momentum.map(|m| m.1),
        0.0,
        Tolerance::Absolute(1e-10),
        "",
    );
    let tetrahedra = momentum_drift(kind, RotationIntegrator::default(), Cluster::Tetrahedra);
    push(
        "same with tetrahedra (projection on): |ΔP|/Σm|v|".into(),
        tetrahedra.clone().map(|m| m.0),
        0.0,
        Tolerance::Absolute(1e-10),
        "",
    );
    push(
        "same with tetrahedra (projection on): |ΔL|/|L₀|".into(),
        tetrahedra.map(|m| m.1),
        0.0,
        Tolerance::Absolute(1e-10),
        "",
    );
    push(
        "same, isotropic bodies, symplectic Euler: |ΔL|/|L₀|".into(),
        momentum_drift(
            kind,
            RotationIntegrator::SymplecticEuler,
            Cluster::Isotropic,
        )
        .map(|m| m.1),
        0.0,
        Tolerance::Absolute(1e-10),
        "",
    );
    let elastic = if kind == SolverKind::Mdp { 0.8 } else { 0.0 };
    let cradle = cradle_energy(kind);
    push(
        "elastic chain (e = 1): |ΔE|/E₀".into(),
        cradle.clone().map(|c| c.0),
        elastic,
        Tolerance::Absolute(1e-9),
        "",
    );
    let cradle_capped = matches!(cradle, Ok((_, true)));
    push(
        "elastic multi-contact box (e = 1, 10 s): |ΔE|/E₀".into(),
        elastic_box_energy(kind, ELASTIC_BOX_STEPS).map(|(de, _)| de.abs()),
        0.0,
        Tolerance::Absolute(ELASTIC_BOX_TOLERANCE),
        "",
    );
    push(
        "slope 20°, μ = 0.6: distance moved in 5 s".into(),
        slope_hold(kind),
        0.0,
        Tolerance::Absolute(1e-3),
        "m",
    );
    push(
        "slope 20°, μ = 0.2: acceleration".into(),
        slope_slide(kind),
        slope_expected(0.2),
        Tolerance::Relative(0.01),
        "m/s²",
    );
    push(
        "slope 20°, μ = 0.6, thrown: deceleration".into(),
        slope_brake(kind),
        -slope_expected(0.6),
        Tolerance::Relative(0.01),
        "m/s²",
    );
    let v0 = 2.0;
    let rolling = sliding_to_rolling(kind, v0);
    push(
        "sphere sliding into rolling: time".into(),
        rolling.clone().map(|r| r.0),
        2.0 * v0 / (7.0 * 0.3 * G),
        Tolerance::Relative(0.01),
        "s",
    );
    push(
        "sphere sliding into rolling: speed".into(),
        rolling.map(|r| r.1),
        5.0 * v0 / 7.0,
        Tolerance::Relative(0.01),
        "m/s",
    );
    for e in [0.3, 0.5, 0.8] {
        let expected = rebound_expected(kind, e);
        // The worst of the first two successive ratios.
        let measured = rebound_heights(kind, e, 2, true).map(|h| {
            let mut worst = f64::NAN;
            for k in 0..2 {
                let ratio = match (h.get(k), h.get(k + 1)) {
                    (Some(a), Some(b)) => b / a,
                    _ => 0.0, // no further rebound
                };
                if worst.is_nan() || (ratio - expected).abs() > (worst - expected).abs() {
                    worst = ratio;
                }
            }
            worst
        });
        let tolerance = if expected == 0.0 {
            Tolerance::Absolute(0.01)
        } else {
            Tolerance::Relative(0.01)
        };
        push(
            format!("rebound height ratio, e = {e}"),
            measured,
            expected,
            tolerance,
            "",
        );
    }
    for (start, speculative) in [("touching", false), ("speculative", true)] {
        push(
            format!("oblique impacts, 8 angles, {start}: max |Δv|/v"),
            oblique_sweep(kind, speculative),
            0.0,
            Tolerance::Absolute(OBLIQUE_TOLERANCE),
            "",
        );
    }
    for (what, pyramid) in [("column of 10 cubes", false), ("pyramid of 15 cubes", true)] {
        let o = stack_outcome(kind, pyramid);
        push(
            format!("{what}, 10 s: largest drift"),
            o.clone().map(|o| o.drift),
            0.0,
            Tolerance::Absolute(STACK_DRIFT),
            "m",
        );
        push(
            format!("{what}, 10 s: largest speed"),
            o.clone().map(|o| o.speed),
            0.0,
            Tolerance::Absolute(STACK_SPEED),
            "m/s",
        );
        push(
            format!("{what}: bodies awake at 10 s"),
            o.map(|o| o.awake as f64),
            0.0,
            Tolerance::Absolute(0.0),
            "",
        );
    }
    let midpoint = free_body_drift(kind, RotationIntegrator::Theta { theta: 0.5 });
    push(
        "free cuboid tumbling, θ = ½ (10 s): |ΔL|/|L₀|".into(),
        midpoint.clone().map(|d| d.0),
        0.0,
        Tolerance::Absolute(FREE_BODY_TOLERANCE),
        "",
    );
    push(
        "free cuboid tumbling, θ = ½ (10 s): |ΔE|/E₀".into(),
        midpoint.map(|d| d.1),
        0.0,
        Tolerance::Absolute(FREE_BODY_TOLERANCE),
        "",
    );
    for (label, rotation) in [
        ("θ = 1", RotationIntegrator::Theta { theta: 1.0 }),
        ("symplectic Euler", RotationIntegrator::SymplecticEuler),
    ] {
        push(
            format!("free cuboid tumbling, {label} (10 s): |ΔE|/E₀"),
            free_body_drift(kind, rotation).map(|d| d.1),
            0.0,
            Tolerance::Absolute(FREE_BODY_TOLERANCE),
            "",
        );
    }
    let r = 0.1;
    push(
        format!("rolling sphere, μ_r = {ROLLING_RESISTANCE} m: deceleration"),
        rolling_deceleration(kind, 0.05),
        -(5.0 / 7.0) * ROLLING_RESISTANCE * G / r,
        Tolerance::Relative(1e-6),
        "m/s²",
    );
    // At rest_velocity 0 no contact reaches the contact pass, where the resistance acts:
    // the sphere rolls on (measured: no deceleration), and the configuration must be
    // named to the user (`SolverParams::inert`, printed by validate, run and the app).
    let inert = SolverParams {
        rolling_friction: ROLLING_RESISTANCE,
        rest_velocity: 0.0,
        ..params(0.0, 0.5)
    }
    .inert();
    push(
        "same, rest_velocity 0: resistance named as unable to act".into(),
        rolling_deceleration(kind, 0.0).map(|a| {
            let named = inert.iter().any(|(field, _)| *field == "rolling_friction");
            if a == 0.0 && named { 1.0 } else { 0.0 }
        }),
        1.0,
        Tolerance::Absolute(0.0),
        "",
    );
    for row in out
        .iter_mut()
        .filter(|r| r.name.starts_with("rolling sphere"))
    {
        row.why = Some(
            "a torque μ_r N against the rolling, with the rolling constraint: \
             a = −(5/7) μ_r g / r; the contact pass applies it exactly each step",
        );
    }
    for row in out
        .iter_mut()
        .filter(|r| r.name.starts_with("same, rest_velocity 0"))
    {
        row.why = Some(
            "1 when the sphere is not slowed (no contact reaches the pass, where the \
             resistance acts) and SolverParams::inert names rolling_friction, as validate, \
             run and the Solver panel print it",
        );
    }
    for row in out.iter_mut().filter(|r| r.name.starts_with("free cuboid")) {
        if row.name.contains("θ = ½") {
            row.why = Some(
                "the implicit midpoint rule with the Cayley-consistent orientation update keeps \
                 L and E of a free body exactly (module doc of dynamics::rotation); what is \
                 left is the Newton stop and rounding",
            );
        } else {
            row.not_applicable = Some(
                "first-order option: energy and |L| drift O(h) by design \
                 (RotationIntegrator's doc); the measured drift is shown",
            );
        }
    }
    for row in out.iter_mut().filter(|r| r.name.starts_with("oblique")) {
        row.why = Some(if row.name.contains("speculative") {
            "each impact starts a quarter of the step's approach from the plane: the \
             contact point on the sphere's surface gives friction its lever arm r (a point \
             midway between the surfaces gave r + gap/2, errors up to 5.9e-4)"
        } else {
            oblique_why(kind)
        });
    }
    if kind == SolverKind::Mdp
        && let Some(row) = out.iter_mut().find(|r| r.name.contains("thrown"))
    {
        row.not_applicable = Some(MDP_THROWN_WHY);
        row.note = Some(match slope_brake_mdp_coulomb() {
            Ok(d) => format!(
                "paper 003's Coulomb variant (mdp_friction: coulomb): {d:.4} m/s², {:.1e} of \
                 g(μ cos θ − sin θ)",
                (d / -slope_expected(0.6) - 1.0).abs()
            ),
            Err(e) => format!("Coulomb variant failed: {e}"),
        });
    }
    if cradle_capped && let Some(row) = out.iter_mut().find(|r| r.name.starts_with("elastic chain"))
    {
        row.note = Some("iteration cap hit".into());
    }
    if let Some(row) = out
        .iter_mut()
        .find(|r| r.name.starts_with("elastic multi-contact box"))
    {
        row.why = (kind != SolverKind::Mdp).then(|| elastic_box_why(kind));
        if kind == SolverKind::Mdp {
            row.not_applicable = Some(
                "MDP's law is purely inelastic (paper 003): every impact loses its normal \
                 approach energy, so e = 1 has no meaning for it",
            );
        }
    }
    out
}

/// The matrix as a plain-text table, one row per check, and whether every row passed.
pub fn table(rows: &[Check]) -> (String, bool) {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<6} {:<52} {:>12} {:>12} {:>9} {:<5} result",
        "method", "check", "measured", "expected", "tolerance", "unit"
    );
    let mut all = true;
    for r in rows {
        let pass = r.passed();
        all &= pass;
        let mut result = match (&r.error, r.not_applicable) {
            (_, Some(reason)) => format!("n/a ({reason})"),
            (Some(e), None) => format!("FAIL ({e})"),
            (None, None) if pass => "pass".into(),
            (None, None) => "FAIL".into(),
        };
        if let Some(note) = &r.note {
            result = format!("{result} ({note})");
        }
        let _ = writeln!(
            s,
            "{:<6} {:<52} {:>12.4e} {:>12.4e} {:>9} {:<5} {}",
            r.method.name(),
            r.name,
            r.measured,
            r.expected,
            r.tolerance.describe(),
            r.unit,
            result
        );
        if let Some(why) = r.why {
            let _ = writeln!(s, "{:<6} └ {why}", "");
        }
    }
    (s, all)
}

/// Angles of incidence of the oblique impact sweep, from the plane's normal (degrees).
/// With e = 0.5, μ = 0.3 the Newton-Coulomb sphere sticks up to atan((7/2) μ (1 + e)) =
/// 57.6° and slides beyond; CCP's and MDP's laws change where (46.4° for both).
pub const OBLIQUE_ANGLES: [f64; 8] = [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0];
/// Restitution of the oblique impact sweep.
pub const OBLIQUE_E: f64 = 0.5;
/// Friction coefficient of the oblique impact sweep.
pub const OBLIQUE_MU: f64 = 0.3;
/// Largest error of a post-impact velocity in the sweep, relative to the impact speed.
/// Each impact is one sphere on a fixed plane, a single contact whose exact answer every
/// method computes in closed form or by a sweep that converges in one pass, so the
/// error is rounding (about 1e-15); 1e-6 leaves nine orders of magnitude for it while
/// still catching a lever-arm error of a micrometre on the 0.1 m sphere.
pub const OBLIQUE_TOLERANCE: f64 = 1e-6;

/// A collision law of a sphere on a fixed plane, as impact theory states it: the normal
/// impulse P_n = m (1 + e) v_n, and Coulomb friction |P_t| ≤ μ P_n on the slip of the
/// contact point u = v_t − r ω, which a sticking contact turns into −β u (Walton's
/// tangential restitution: β = 0 stops the slip, β = 1 reverses it and keeps its energy).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ImpactLaw {
    /// Normal restitution e.
    pub e: f64,
    /// Tangential restitution β of a sticking contact.
    pub beta: f64,
    /// Friction coefficient μ.
    pub mu: f64,
}

impl ImpactLaw {
    /// The law a method's contact implements at restitution `e`, friction `mu`:
    /// - jolt, SQM, ETM, SMM: Newton's restitution with Coulomb friction, β = 0 (papers
    ///   001 and 000: the friction impulse stops the slip or is capped by μ P_n);
    /// - MDP: purely inelastic, e = 0, β = 0 (paper 003: the impulse minimises the
    ///   kinetic energy on the plane of maximum compression; for a sphere the normal and
    ///   tangential parts decouple and that is Coulomb's sticking or sliding impulse);
    /// - CCP: e = 1, β = 1 (paper 002, eqs. 30-33 and 51: Coulomb's law holds for the
    ///   step's displacement ΔD, whose velocity is the Newmark mean (V⁺ + V⁻)/2, so a
    ///   closed contact reverses its normal velocity and a sticking one its slip).
    pub fn of(kind: SolverKind, e: f64, mu: f64) -> ImpactLaw {
        match kind {
            SolverKind::Ccp => ImpactLaw {
                e: 1.0,
                beta: 1.0,
                mu,
            },
            SolverKind::Mdp => ImpactLaw {
                e: 0.0,
                beta: 0.0,
                mu,
            },
            _ => ImpactLaw { e, beta: 0.0, mu },
        }
    }
}

/// Velocities after an oblique impact: (tangential velocity of the centre, spin about
/// the axis normal to the plane of incidence, normal velocity of the centre).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ObliqueOutcome {
    pub v_t: f64,
    pub omega: f64,
    pub v_n: f64,
}

/// Rigid-body impact theory for a solid sphere (radius `r`, I = 2/5 m r², no spin)
/// striking a fixed plane at speed `v` and angle `theta` from the normal under `law`
/// (Stronge, *Impact Mechanics*, 2000, ch. 5; for a sphere on a plane the normal and
/// tangential impulses decouple, so Newton's, Poisson's and Stronge's restitution agree).
/// The slip answers a tangential impulse with the effective mass m/(1 + m r²/I) = 2m/7,
/// so sticking takes P_t = (1 + β)(2m/7) v_t; the sphere sticks if that is within
/// μ P_n, i.e. if (1 + β) v_t ≤ (7/2) μ (1 + e) v_n, and slides with P_t = μ P_n
/// otherwise. Then v_t' = v_t − P_t/m and ω' = r P_t / I = (5/2) P_t / (m r).
pub fn oblique_expected(r: f64, v: f64, theta: f64, law: ImpactLaw) -> ObliqueOutcome {
    let (vt, vn) = (v * theta.sin(), v * theta.cos());
    let pn = (1.0 + law.e) * vn; // per unit mass
    let stick = (1.0 + law.beta) * 2.0 / 7.0 * vt;
    let pt = stick.min(law.mu * pn);
    ObliqueOutcome {
        v_t: vt - pt,
        omega: 2.5 * pt / r,
        v_n: law.e * vn,
    }
}

/// A solid sphere (r = 0.1 m, 1000 kg/m³) striking the plane z = 0 at 1 m/s, `theta` from
/// the normal, in the x-z plane, no spin, no gravity, e = [`OBLIQUE_E`], μ =
/// [`OBLIQUE_MU`]: its velocities 20 steps after the start, when it has left the plane.
/// `gap`: the distance of the sphere from the plane at the start; 0 touches, a gap
/// below the step's approach v_n h makes the contact speculative (found and resolved in
/// the step before the surfaces meet).
pub fn oblique_impact(
    kind: SolverKind,
    theta: f64,
    gap: f64,
) -> Result<ObliqueOutcome, SolverError> {
    let (r, v) = (0.1, 1.0);
    let mut w = world(kind, Vec3::zeros(), params(OBLIQUE_E, OBLIQUE_MU))?;
    w.add_container(Container::Plane {
        point: Vec3::zeros(),
        normal: Vec3::z(),
    });
    let mut b = RigidBody::new(
        &Shape::Sphere { radius: r },
        1000.0,
        Vec3::new(0.0, 0.0, r + gap),
        Quat::identity(),
    );
    b.velocity = Vec3::new(v * theta.sin(), 0.0, -v * theta.cos());
    w.add_body(b);
    w.start_ledger();
    for _ in 0..20 {
        w.step()?;
    }
    let b = &w.bodies[0];
    Ok(ObliqueOutcome {
        v_t: b.velocity.x,
        omega: b.angular_velocity.y,
        v_n: b.velocity.z,
    })
}

/// The sweep over [`OBLIQUE_ANGLES`] under `kind`: the largest error of the three
/// post-impact velocities against [`oblique_expected`] with the method's own
/// [`ImpactLaw`], each relative to the impact speed (the spin as r ω). `speculative`:
/// each impact starts a quarter of the step's approach v_n h away from the plane.
pub fn oblique_sweep(kind: SolverKind, speculative: bool) -> Result<f64, SolverError> {
    let (r, v) = (0.1, 1.0);
    let law = ImpactLaw::of(kind, OBLIQUE_E, OBLIQUE_MU);
    let mut worst: f64 = 0.0;
    for deg in OBLIQUE_ANGLES {
        let theta = deg.to_radians();
        let gap = if speculative {
            0.25 * v * theta.cos() * DT
        } else {
            0.0
        };
        let got = oblique_impact(kind, theta, gap)?;
        let want = oblique_expected(r, v, theta, law);
        let err = [
            (got.v_t - want.v_t).abs(),
            r * (got.omega - want.omega).abs(),
            (got.v_n - want.v_n).abs(),
        ]
        .into_iter()
        .fold(0.0, f64::max)
            / v;
        worst = worst.max(if err.is_nan() { f64::INFINITY } else { err });
    }
    Ok(worst)
}

/// Why the oblique rows expect what they do, per method.
pub fn oblique_why(kind: SolverKind) -> &'static str {
    match kind {
        SolverKind::Ccp => {
            "paper 002's law (eqs. 30-33, 51): Coulomb on the step's displacement, whose \
             velocity is the Newmark mean, so e = 1 and a sticking slip reverses (β = 1); \
             the theory with that law, rounding only"
        }
        SolverKind::Mdp => {
            "paper 003's law: purely inelastic (e = 0) with Coulomb's sticking or sliding \
             impulse (β = 0); the theory with that law, rounding only"
        }
        _ => {
            "Newton's e with Coulomb friction (β = 0), Stronge ch. 5: one contact solved \
             exactly, rounding only"
        }
    }
}

/// Steps of the stacking checks (10 s).
pub const STACK_STEPS: usize = 6000;
/// The stacking checks' bound on any body's drift from its start (m) and on its speed
/// (m/s) over the run: a stack that rests moves by the projection's corrections only
/// (well under a micrometre a step), and 1 mm, 1 mm/s is what a viewer would see move.
pub const STACK_DRIFT: f64 = 1e-3;
pub const STACK_SPEED: f64 = 1e-3;

/// What a stack did over [`STACK_STEPS`]: the largest distance of any body from its
/// start (m), the largest speed of any body at the end of any step (m/s), the bodies
/// still awake at the end, and when the last one fell asleep (s; `None`: not by the end).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StackOutcome {
    pub drift: f64,
    pub speed: f64,
    pub awake: usize,
    pub asleep_at: Option<f64>,
}

/// A stack of 0.2 m cubes (1000 kg/m³) on a plane, e = 0, μ = 0.5, g = 9.81, sleeping
/// on, each body placed touching its supports with no velocity:
/// - `pyramid` false: a column of 10 (2 m tall);
/// - `pyramid` true: a pyramid of 15 in one vertical plane, rows of 5, 4, 3, 2, 1 cubes
///   1 cm apart, each cube above the bottom row straddling two (Box2D's pyramid sample).
pub fn stack(kind: SolverKind, pyramid: bool) -> Result<World, SolverError> {
    let mut w = world(kind, Vec3::new(0.0, 0.0, -G), params(0.0, 0.5))?;
    w.sleep.enabled = true;
    w.add_container(Container::Plane {
        point: Vec3::zeros(),
        normal: Vec3::z(),
    });
    let a = 0.1;
    let shape = Shape::Cuboid {
        half_extents: Vec3::new(a, a, a),
    };
    let mut place = |x: f64, level: usize| {
        w.add_body(RigidBody::new(
            &shape,
            1000.0,
            Vec3::new(x, 0.0, a + 2.0 * a * level as f64),
            Quat::identity(),
        ));
    };
    if pyramid {
        for level in 0..5 {
            let n = 5 - level;
            for k in 0..n {
                place((k as f64 - (n - 1) as f64 / 2.0) * 2.1 * a, level);
            }
        }
    } else {
        for level in 0..10 {
            place(0.0, level);
        }
    }
    w.start_ledger();
    Ok(w)
}

/// Run [`stack`] for [`STACK_STEPS`] and measure it.
pub fn stack_outcome(kind: SolverKind, pyramid: bool) -> Result<StackOutcome, SolverError> {
    let mut w = stack(kind, pyramid)?;
    let start: Vec<Vec3> = w.bodies.iter().map(|b| b.position).collect();
    let mut out = StackOutcome {
        drift: 0.0,
        speed: 0.0,
        awake: 0,
        asleep_at: None,
    };
    for step in 1..=STACK_STEPS {
        w.step()?;
        for (b, x0) in w.bodies.iter().zip(&start) {
            out.drift = out.drift.max((b.position - x0).norm());
            out.speed = out.speed.max(b.velocity.norm());
        }
        let asleep = w.sleeping_bodies() == w.bodies.len();
        if asleep && out.asleep_at.is_none() {
            out.asleep_at = Some(step as f64 * DT);
        } else if !asleep {
            out.asleep_at = None;
        }
    }
    out.awake = w.bodies.len() - w.sleeping_bodies();
    Ok(out)
}

/// Bound on the free-body rotation check's drifts under θ = ½: 10 s of a tumbling body
/// through its flips; the scheme keeps L and E exactly, and the Newton iteration and
/// rounding leave about 5e-12.
pub const FREE_BODY_TOLERANCE: f64 = 1e-9;

/// Steps of the free-body rotation check (10 s).
pub const FREE_BODY_STEPS: usize = 6000;

/// A free cuboid (0.1 × 0.2 × 0.3 m half-extents: principal moments in the ratio
/// 13 : 10 : 5), no gravity, no contact, spinning at 10 rad/s about an axis near its
/// intermediate principal axis (the unstable one: it flips over every 2.1 s, five times
/// in the run, the Dzhanibekov effect), under `rotation`, for [`FREE_BODY_STEPS`]: the largest relative
/// changes of its world angular momentum, |ΔL|/|L₀|, and of its kinetic energy,
/// |ΔE|/E₀, over the run.
pub fn free_body_drift(
    kind: SolverKind,
    rotation: RotationIntegrator,
) -> Result<(f64, f64), SolverError> {
    let mut w = world(kind, Vec3::zeros(), params(0.5, 0.3))?;
    w.rotation = rotation;
    let mut b = RigidBody::new(
        &Shape::Cuboid {
            half_extents: Vec3::new(0.1, 0.2, 0.3),
        },
        1000.0,
        Vec3::zeros(),
        Quat::identity(),
    );
    // Near the intermediate axis in the body's principal frame, expressed in the world.
    let axis = Vec3::new(0.02, 1.0, 0.01).normalize();
    b.angular_velocity = b.orientation * (10.0 * axis);
    w.add_body(b);
    w.start_ledger();
    let l0 = total_angular_momentum(&w.bodies);
    let e0 = w.bodies[0].kinetic_energy_rotational();
    let (mut dl, mut de) = (0.0f64, 0.0f64);
    for _ in 0..FREE_BODY_STEPS {
        w.step()?;
        dl = dl.max((total_angular_momentum(&w.bodies) - l0).norm() / l0.norm());
        de = de.max((w.bodies[0].kinetic_energy_rotational() - e0).abs() / e0);
    }
    Ok((dl, de))
}

/// Rolling resistance of the rolling check (m): the lever arm of the normal force,
/// μ_r = `rolling_friction`.
pub const ROLLING_RESISTANCE: f64 = 0.01;

/// A solid sphere (r = 0.1 m) rolling without slip at 2 m/s on a level floor, μ = 0.5,
/// rolling resistance μ_r = [`ROLLING_RESISTANCE`], `rest_velocity` as given: its
/// deceleration between 0.1 s and 1.0 s (m/s²). Rolling resistance is a torque μ_r N
/// against the rolling; with the rolling constraint a = α r,
/// (I/r + m r) a = −μ_r m g, so a = −μ_r g r / (r² + I/m) = −(5/7) μ_r g / r.
pub fn rolling_deceleration(kind: SolverKind, rest_velocity: f64) -> Result<f64, SolverError> {
    let r = 0.1;
    let mut p = params(0.0, 0.5);
    p.rolling_friction = ROLLING_RESISTANCE;
    p.rest_velocity = rest_velocity;
    let mut w = world(kind, Vec3::new(0.0, 0.0, -G), p)?;
    w.add_container(Container::Plane {
        point: Vec3::zeros(),
        normal: Vec3::z(),
    });
    let mut b = RigidBody::new(
        &Shape::Sphere { radius: r },
        1000.0,
        Vec3::new(0.0, 0.0, r),
        Quat::identity(),
    );
    b.velocity = Vec3::new(2.0, 0.0, 0.0);
    b.angular_velocity = Vec3::new(0.0, 2.0 / r, 0.0);
    w.add_body(b);
    w.start_ledger();
    let (n0, n1) = ((0.1 / DT).round() as usize, (1.0 / DT).round() as usize);
    let mut v0 = 0.0;
    for k in 1..=n1 {
        w.step()?;
        if k == n0 {
            v0 = w.bodies[0].velocity.x;
        }
    }
    Ok((w.bodies[0].velocity.x - v0) / (DT * (n1 - n0) as f64))
}
