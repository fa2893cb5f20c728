//! The scripted angle-of-repose experiment over a [`World`] (paper 000, §7.5, Figs. 11-13).
//!
//! A state machine advanced one world step at a time, so the CLI runs it to the end
//! ([`ReposeExperiment`], which owns its world) and the app shows it live on the world it
//! owns ([`ReposeTracker`], told of each step the app takes):
//! 1. **Packing**: the bodies, released on one side of a box split by a removable
//!    divider, fall and pack (Fig. 11), at the friction coefficient
//!    [`ReposeConfig::pack_friction`] if one is set;
//! 2. **settle**: until the pile is at rest or the phase's time cap is reached;
//! 3. **remove the wall**: every present divider of the box is removed (Fig. 12), and
//!    the run's own friction coefficient replaces the packing one;
//! 4. **Slumping**: the pile slumps into the empty side, and settles again (same test);
//! 5. **measure**: the 8 × 16 measurement of [`super::measure`] (Fig. 14).
//!
//! **At rest** means K / ΔU < `ke_ratio` (default 10⁻⁶) for `hold` seconds in a row,
//! where K is the kinetic energy and ΔU = U(t₀) − U(t) is the pile's potential-energy
//! range: the potential energy at release (t₀, the experiment's first state) minus the
//! potential energy now, i.e. the energy the pile has had to dissipate (the definition
//! of the settle criterion of [`crate::settle`]). The same t₀ serves both phases: measured from
//! the wall's removal, ΔU would start at 0 and the still pile would count as settled
//! before it began to slump. The hold (default 0.5 s) keeps a pile that is momentarily
//! still, as at the wall's removal, from counting as settled.
//!
//! # Protocols
//!
//! [`Protocol::Wall`] is the script above (paper 000 §7.5). [`Protocol::Tilt`] replaces
//! steps 3-5: the divider stays, and the box is tilted slowly about the horizontal y axis
//! so that its floor falls towards the wall the pile is packed against:
//! 3. **tilt**: after each step the gravity for the next one is turned by
//!    θ(t) = ω (t − t₁) (t₁: the end of packing, ω = [`ReposeConfig::tilt_rate`]):
//!    g(θ) = |g| (s sin θ, 0, −cos θ), s = −1 for a pile packed on −x (+1 on +x). In the
//!    frame of the box (the world's frame), tilting the box about an axis through O is
//!    turning gravity, plus the frame's fictitious accelerations at distance r from O:
//!    the centrifugal ω²r, the Coriolis 2ω × v and the Euler ω̇ × r. At ω = 1°/s =
//!    0.0175 rad/s and r ≤ 60 m (the paper's box), ω²r ≤ 0.018 m/s² = 0.19 % of g, and
//!    2ωv/g = 0.36 % per m/s of body speed (a static pile has v = 0 until it fails).
//!    ω is constant, so the Euler term vanishes but at the tilt's start, where a real
//!    table would spin up over some time. All three are neglected: the model is gravity
//!    turning at ω.
//! 4. **failure**: the pile has failed (avalanched) when at least
//!    max(1, ⌈N / 10⌉) of its N bodies have moved by more than half their bounding radius
//!    since the tilt began; the tilt θ_f at that step is the **maximum angle of
//!    stability**, the protocol's angle ([`ReposeMeasurement::angle_deg`]). For a rigid
//!    block of friction μ on the floor, sliding starts at tan θ = μ, and its acceleration
//!    g (sin θ − μ cos θ) ≈ g ω t / cos θ_c grows linearly after it, so the block has slid
//!    d = g ω t³ / (6 cos θ_c) after t: the detection lags the start of sliding by
//!    Δθ = ω t ≤ (6 d ω² / g)^(1/3) ([`tilt_lag_deg`], the measurement's `error_deg`).
//! 5. The tilt stops at θ_f, the pile settles (the rest criterion above, ΔU taken under
//!    the tilted gravity from the release positions), and the 8 × 16 grid measures its
//!    surface in the box's frame; each row's angle is turned into the frame of gravity,
//!    θ_f − α_j (α_j: the row's box-frame slope falling away from the packed wall), so the
//!    rows give the slope after the avalanche (the angle of repose proper). If the tilt
//!    reaches 90° without failure, the angle is NaN.
//!
//! [`Protocol::Cylinder`] packs the bodies in the world's first
//! [`Container::Cylinder`] instead of behind a divider; at step 3 the cylinder is
//! lifted off at once (replaced by its floor, the infinite plane through its base,
//! normal +z, as the wall is removed in one step), the pile slumps into a cone and
//! settles, and [`measure::measure_cone`] fits its height against the distance from the
//! cylinder's axis in 8 sectors (the angle is their mean). A body is lost when its centre
//! is not finite or has dropped below the floor by more than its bounding radius.
//!
//! [`Protocol::Drum`] measures the **dynamic angle** of a rotating drum:
//! 1. **drum**: at set-up the world's first [`Container::Box`] is replaced by the drum
//!    inscribed in its x-z cross-section ([`DrumGeometry`]): radius
//!    R = min(hx, height/2), axis along y through the box's centre at height R above its
//!    floor, closed by end plates in the planes of the box's ±y walls (dividers go with
//!    the box). The containers have no horizontal cylinder, so the drum's wall is a
//!    regular prism of [`DRUM_SIDES`] planes tangent to the circle of radius R (a body
//!    inside the circle is inside the prism; the corners stand R (1/cos(π/N) − 1) =
//!    0.86 % of R out of the circle). The bodies pack in the drum under gravity −z (at
//!    [`ReposeConfig::pack_friction`], if set) and settle as in step 2;
//! 2. **turn**: the drum is simulated in its own, co-rotating frame, where its wall is
//!    still and gravity turns about the axis: after each step the gravity for the next
//!    is g(t) = |g| (sin Ωt, 0, −cos Ωt) (t from the end of packing,
//!    Ω = √(Fr g / R), Fr = [`ReposeConfig::drum_froude`] the Froude number). In the frame
//!    of gravity the drum then turns at +Ω about y: its wall rises on the −x side and the
//!    free surface falls towards +x. The model is exact but for the co-rotating frame's
//!    fictitious accelerations, which it neglects: the centrifugal Ω²r ≤ Ω²R = Fr g
//!    (≤ [`DRUM_MAX_FROUDE`] g), the Coriolis 2Ω × v, whose size relative to g is
//!    2 √(Fr / (gR)) v (2 √(Fr d/R) for a grain at √(g d), the speed of a fall over its
//!    own diameter d), and the Euler term Ω̇ × r, zero but at the start, where the drum
//!    spins up in one step;
//! 3. **sample**: after a start-up of [`DRUM_STARTUP_TURNS`] turn (the bed's surface,
//!    horizontal after packing, is carried up to its dynamic angle by a turn of that angle,
//!    less than a quarter turn, plus its first avalanche), the surface is measured
//!    [`DRUM_SAMPLES_PER_TURN`] times per turn for [`ReposeConfig::drum_turns`] turns. Each
//!    sample is the 8 × 16 measurement of [`super::measure`] in the frame of gravity
//!    ([`ReposeTracker::measure_drum`]): the bodies are turned about the axis by
//!    R_y(φ), φ = [`drum_turn_of`] the gravity, which takes the gravity to −z; the grid's
//!    16 columns span the diameter (downhill +x) and its 8 rows the drum's length; the
//!    columns beyond the bed's chord are empty and left out. A sample with no fitted row
//!    is left out;
//! 4. **result**: the angle is the mean θ̄ of the samples, its error their standard
//!    deviation, the rows' angles the mean of each row's over the samples
//!    ([`DrumReport`] keeps the count). The phase ends after the last sample, or at
//!    [`ReposeConfig::max_time`] (then unsettled, and [`ReposeResult::caveats`] says
//!    how many samples and turns it measured). A body is lost when its centre is not
//!    finite or is farther out of the drum than its bounding radius.
//!
//! **Lost bodies** are dynamic bodies whose centre has left the box's footprint or
//! dropped below its floor by more than their bounding radius (thrown over a wall or
//! through it); they are counted and left out of the measurement.

use super::measure::{self, ReposeGrid, ReposeMeasurement};
use crate::container::Container;
use crate::dynamics::solver::SolverError;
use crate::scene::Scene;
use crate::world::World;

/// How the pile is brought to its slope (module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Protocol {
    /// Remove the divider and let the pile slump (paper 000 §7.5).
    #[default]
    Wall,
    /// Keep the divider and tilt the box until the pile fails.
    Tilt,
    /// Pack in a cylinder, lift it off, and measure the conical pile.
    Cylinder,
    /// Pack in a drum with a horizontal axis, turn it, and average the free surface's
    /// dynamic angle over the turns.
    Drum,
}

impl Protocol {
    /// The protocol's name as the CLI and statepoints write it.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Wall => "wall_removal",
            Protocol::Tilt => "tilt",
            Protocol::Cylinder => "cylinder_lift",
            Protocol::Drum => "drum",
        }
    }

    /// `wall`, `tilt`, `cylinder` or `drum` (the `--protocol` values).
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "wall" => Ok(Protocol::Wall),
            "tilt" => Ok(Protocol::Tilt),
            "cylinder" => Ok(Protocol::Cylinder),
            "drum" => Ok(Protocol::Drum),
            _ => Err(format!(
                "--protocol: '{s}' is not a protocol (available: wall, tilt, cylinder, drum)"
            )),
        }
    }
}

/// The lag bound Δθ = (6 d ω² / g)^(1/3) of the tilt protocol's failure detection, in
/// degrees, for a body that must slide `d` (m) at tilt rate `rate_deg` (°/s) under
/// gravity `g` (m/s²) (module doc, step 4; the bound takes cos θ_c ≤ 1).
pub fn tilt_lag_deg(d: f64, rate_deg: f64, g: f64) -> f64 {
    let w = rate_deg.to_radians();
    (6.0 * d * w * w / g).cbrt().to_degrees()
}

/// Fraction of the bodies that must have moved for the tilted pile to count as failed
/// (module doc, step 4).
pub const TILT_FAIL_FRACTION: f64 = 0.1;

/// The tilt protocol's state after packing.
#[derive(Clone, Debug, PartialEq)]
pub struct TiltState {
    /// Positions of the bodies when the tilt began.
    start: Vec<crate::math::Vec3>,
    /// |g| of the untilted world (m/s²).
    g: f64,
    /// s of the module doc: the sign of the floor's fall along x.
    sign: f64,
    /// The tilt at failure (rad), once the pile has failed.
    pub failed_at: Option<f64>,
}

impl TiltState {
    /// Tilt of the gravity `g` about y (rad).
    fn tilt_of(&self, g: &crate::math::Vec3) -> f64 {
        (self.sign * g.x).atan2(-g.z)
    }
}

/// Largest Froude number Fr = Ω²R/g of [`Protocol::Drum`]: the model neglects the
/// co-rotating frame's centrifugal acceleration Ω²r ≤ Fr g (module doc), at most 1 % of
/// g here, the upper end of the rolling regime.
pub const DRUM_MAX_FROUDE: f64 = 0.01;
/// Sides of the drum's polygonal wall (its planes are tangent to the circle of radius R).
pub const DRUM_SIDES: usize = 24;
/// Samples of the free surface per turn of [`Protocol::Drum`] (one per 10° of turn).
pub const DRUM_SAMPLES_PER_TURN: usize = 36;
/// Turns of [`Protocol::Drum`] before its first sample: the bed's surface rises from
/// its packed, horizontal state to its dynamic angle within them (module doc).
pub const DRUM_STARTUP_TURNS: f64 = 0.5;

/// The drum of [`Protocol::Drum`]: axis along world y through `center`, inner radius
/// `radius`, closed by end plates at y = center.y ± `half_length`.
#[derive(Clone, Debug, PartialEq)]
pub struct DrumGeometry {
    pub center: crate::math::Vec3,
    pub radius: f64,
    pub half_length: f64,
}

/// The world's moving bodies, refused if there are none or one has a shape the repose
/// measurement does not handle (every protocol's set-up).
fn measurable_bodies(world: &World) -> Result<Vec<&crate::body::RigidBody>, ReposeError> {
    let dynamic: Vec<_> = world.bodies.iter().filter(|b| !b.is_static()).collect();
    if dynamic.is_empty() {
        return Err(ReposeError::Setup("the scene has no moving bodies".into()));
    }
    if let Some(b) = dynamic.iter().find(|b| !measure::shape_supported(&b.shape)) {
        return Err(ReposeError::Setup(format!(
            "the repose measurement handles spheres, cuboids, crosses and convex polyhedra, not {}",
            b.shape.kind_name()
        )));
    }
    Ok(dynamic)
}

impl DrumGeometry {
    /// The drum inscribed in the x-z cross-section of the world's first `Box` (radius
    /// min(half width, height / 2), axis along y at that height above the floor's
    /// centre, end plates at the box's ±y walls), with the box's index; refused unless
    /// it is at least as wide as long.
    pub fn of_world(world: &World) -> Result<(usize, Self), ReposeError> {
        let kinds: Vec<&str> = world.containers.iter().map(|c| c.kind_name()).collect();
        let (index, center, half_size, height) = world
            .containers
            .iter()
            .enumerate()
            .find_map(|(i, c)| match c {
                Container::Box {
                    center,
                    half_size,
                    height,
                    ..
                } => Some((i, *center, *half_size, *height)),
                _ => None,
            })
            .ok_or_else(|| {
                ReposeError::Setup(format!(
                    "the drum protocol turns the scene's Box into a drum, but the scene's containers are [{}]",
                    kinds.join(", ")
                ))
            })?;
        let radius = half_size[0].min(0.5 * height);
        let geometry = DrumGeometry {
            center: center + crate::math::Vec3::new(0.0, 0.0, radius),
            radius,
            half_length: half_size[1],
        };
        if geometry.half_length > radius {
            return Err(ReposeError::Setup(format!(
                "the drum (the box's x-z cross-section, radius {radius} m) must be at least as wide as long, but it is {} m long",
                2.0 * geometry.half_length
            )));
        }
        Ok((index, geometry))
    }

    /// The drum as containers: [`DRUM_SIDES`] planes tangent to the circle of radius R
    /// (their normals point at the axis; the circle is the polygon's inscribed circle, so
    /// a body inside the circle is inside the drum), then the two end plates.
    pub fn containers(&self) -> Vec<Container> {
        use crate::math::Vec3;
        let mut out: Vec<Container> = (0..DRUM_SIDES)
            .map(|k| {
                let a = (k as f64 + 0.5) * std::f64::consts::TAU / DRUM_SIDES as f64;
                let d = Vec3::new(a.cos(), 0.0, a.sin());
                Container::Plane {
                    point: self.center + self.radius * d,
                    normal: -d,
                }
            })
            .collect();
        for s in [-1.0, 1.0] {
            out.push(Container::Plane {
                point: self.center + Vec3::new(0.0, s * self.half_length, 0.0),
                normal: Vec3::new(0.0, -s, 0.0),
            });
        }
        out
    }

    /// Distance of `p` from the drum's axis (m).
    pub fn axis_distance(&self, p: &crate::math::Vec3) -> f64 {
        (p.x - self.center.x).hypot(p.z - self.center.z)
    }
}

/// The drum's turn φ given the gravity `g` of its co-rotating frame,
/// g = |g| (sin φ, 0, −cos φ) (module doc), in rad.
pub fn drum_turn_of(g: &crate::math::Vec3) -> f64 {
    g.x.atan2(-g.z)
}

/// Where a run stands in simulated time ([`ReposeTracker::progress`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunProgress {
    /// What the run is doing: "packing", "tilting", "turning", ...
    pub stage: &'static str,
    /// Simulated time the stage has taken (s).
    pub elapsed: f64,
    /// The most simulated time the stage can take (s).
    pub cap: f64,
    /// The most simulated time the stages after it can take (s).
    pub later: f64,
}

impl RunProgress {
    /// The stage's share done of its cap, in [0, 1].
    pub fn fraction(&self) -> f64 {
        if self.cap > 0.0 {
            (self.elapsed / self.cap).clamp(0.0, 1.0)
        } else {
            1.0
        }
    }

    /// The most simulated time the run can still take (s).
    pub fn left_at_most(&self) -> f64 {
        (self.cap - self.elapsed).max(0.0) + self.later
    }
}

/// The drum protocol's state after packing.
#[derive(Clone, Debug, PartialEq)]
pub struct DrumState {
    pub geometry: DrumGeometry,
    /// |g| (m/s²).
    g: f64,
    /// The drum's angular velocity Ω = √(Fr g / R) (rad/s).
    pub omega: f64,
    /// Whether the drum has begun to turn (after packing).
    turning: bool,
    /// The dynamic angle of each sample so far (degrees; a sample with no fitted row is
    /// left out).
    pub samples: Vec<f64>,
    /// Samples due so far (taken or left out).
    due: usize,
    /// Per row: sum and count of the samples' row angles.
    row_sums: [f64; measure::ROWS],
    row_counts: [usize; measure::ROWS],
}

impl DrumState {
    /// The drum's period 2π/Ω (s).
    pub fn period(&self) -> f64 {
        std::f64::consts::TAU / self.omega
    }

    /// The time of sample k after the drum began to turn (s).
    fn sample_time(&self, k: usize) -> f64 {
        (DRUM_STARTUP_TURNS + k as f64 / DRUM_SAMPLES_PER_TURN as f64) * self.period()
    }

    /// Mean and sample standard deviation of the samples (degrees; NaN without samples,
    /// std 0 with one).
    pub fn mean_std(&self) -> (f64, f64) {
        let n = self.samples.len() as f64;
        if self.samples.is_empty() {
            return (f64::NAN, f64::NAN);
        }
        let mean = self.samples.iter().sum::<f64>() / n;
        let var = if self.samples.len() > 1 {
            self.samples.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        (mean, var.sqrt())
    }
}

/// What the drum protocol measured ([`ReposeResult::drum`]).
#[derive(Clone, Debug, PartialEq)]
pub struct DrumReport {
    /// Froude number Fr = Ω²R/g.
    pub froude: f64,
    /// Angular velocity Ω (rad/s).
    pub omega: f64,
    /// Inner radius R (m).
    pub radius: f64,
    /// Turns asked for after the start-up ([`ReposeConfig::drum_turns`]).
    pub turns: f64,
    /// Turns measured after the start-up (fewer when the time cap ended the run).
    pub turns_measured: f64,
    /// Number of samples averaged.
    pub samples: usize,
    /// Their mean (the run's angle) and sample standard deviation (degrees).
    pub mean_deg: f64,
    pub std_deg: f64,
}

/// Parameters of the experiment's script.
#[derive(Clone, Debug, PartialEq)]
pub struct ReposeConfig {
    /// Settled when K / ΔU stays below this (module doc). Default: 1e-6.
    pub ke_ratio: f64,
    /// ... for this long (s, simulated). Default: 0.5.
    pub hold: f64,
    /// Time cap of each settle phase (s, simulated): the phase ends unsettled after it.
    /// Default: 30.
    pub max_time: f64,
    /// Friction coefficient μ of the packing phase (`None`: the run's own μ throughout).
    /// With it set, the bodies pack at this μ and the wall's removal gives the world back
    /// the μ it had when the experiment was set up. Paper 000 §7.5 packs its stacks at
    /// μ = 0.3 (Fig. 11) and repositions "the previously generated stacks" at each μ of
    /// its sweep (Figs. 12, 13, 15); the bundled repose scenes say so with
    /// `pack_friction: 0.3`. Default: None.
    pub pack_friction: Option<f64>,
    /// How the pile is brought to its slope. Default: [`Protocol::Wall`].
    pub protocol: Protocol,
    /// Tilt rate ω of [`Protocol::Tilt`] (°/s, simulated; module doc). Default: 1.
    pub tilt_rate: f64,
    /// Froude number Fr = Ω²R/g of [`Protocol::Drum`]: sets the drum's angular velocity
    /// Ω from its radius R (module doc). Default: 10⁻³.
    pub drum_froude: f64,
    /// Turns of [`Protocol::Drum`] measured after its start-up half turn. Default: 2.
    pub drum_turns: f64,
}

impl Default for ReposeConfig {
    fn default() -> Self {
        ReposeConfig {
            ke_ratio: 1e-6,
            hold: 0.5,
            max_time: 30.0,
            pack_friction: None,
            protocol: Protocol::Wall,
            tilt_rate: 1.0,
            drum_froude: 1e-3,
            drum_turns: 2.0,
        }
    }
}

impl ReposeConfig {
    /// The defaults, with the scene's packing friction ([`Scene::pack_friction`]).
    pub fn for_scene(scene: &Scene) -> Self {
        ReposeConfig {
            pack_friction: scene.pack_friction,
            ..Default::default()
        }
    }

    /// The simulated time the drum phase of [`Protocol::Drum`] takes in a drum of radius
    /// `radius` (m) under gravity of magnitude `g` (m/s²): its start-up half turn and
    /// `drum_turns` turns at Ω = √(Fr g / R).
    pub fn drum_phase_time(&self, radius: f64, g: f64) -> f64 {
        let omega = (self.drum_froude * g / radius).sqrt();
        (DRUM_STARTUP_TURNS + self.drum_turns) * std::f64::consts::TAU / omega
    }

    /// Under [`Protocol::Drum`], raise the cap [`ReposeConfig::max_time`] to 5 % over
    /// the drum phase's own length in `world`'s drum ([`DrumGeometry::of_world`]), so
    /// that a default cap never cuts the turns short; otherwise unchanged.
    pub fn fit_cap_to_drum(&mut self, world: &World) {
        if self.protocol == Protocol::Drum
            && let Ok((_, drum)) = DrumGeometry::of_world(world)
        {
            let turning = self.drum_phase_time(drum.radius, world.gravity.norm());
            self.max_time = self.max_time.max(1.05 * turning);
        }
    }

    /// The packing μ as a user writes it (`repose --pack-friction`, the diagnostics in
    /// `examples/`): `run` → `None` (pack at the run's own μ), a number → `Some(μ)`.
    /// The range (finite, ≥ 0) is [`ReposeConfig::validate`]'s to check.
    pub fn parse_pack_friction(s: &str) -> Result<Option<f64>, String> {
        if s == "run" {
            return Ok(None);
        }
        s.parse::<f64>()
            .map(Some)
            .map_err(|_| format!("--pack-friction: '{s}' is not a number or 'run'"))
    }

    /// Range checks: every field finite, `ke_ratio` and `max_time` > 0, `hold` and
    /// `pack_friction` ≥ 0.
    pub fn validate(&self) -> Result<(), String> {
        let ok = |x: f64| x.is_finite() && x > 0.0;
        if !ok(self.ke_ratio) {
            return Err(format!(
                "ke_ratio must be finite and > 0, got {}",
                self.ke_ratio
            ));
        }
        if !(self.hold.is_finite() && self.hold >= 0.0) {
            return Err(format!("hold must be finite and ≥ 0, got {}", self.hold));
        }
        if !ok(self.max_time) {
            return Err(format!(
                "max_time must be finite and > 0, got {}",
                self.max_time
            ));
        }
        if let Some(mu) = self.pack_friction
            && !(mu.is_finite() && mu >= 0.0)
        {
            return Err(format!("pack_friction must be finite and ≥ 0, got {mu}"));
        }
        if !(ok(self.tilt_rate) && self.tilt_rate <= 90.0) {
            return Err(format!(
                "tilt_rate must be in (0, 90] °/s, got {}",
                self.tilt_rate
            ));
        }
        if !(ok(self.drum_froude) && self.drum_froude <= DRUM_MAX_FROUDE) {
            return Err(format!(
                "drum_froude must be in (0, {DRUM_MAX_FROUDE}], got {}",
                self.drum_froude
            ));
        }
        if !(ok(self.drum_turns) && self.drum_turns <= 1000.0) {
            return Err(format!(
                "drum_turns must be in (0, 1000], got {}",
                self.drum_turns
            ));
        }
        Ok(())
    }
}

/// Where the experiment is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Bodies falling and packing behind the divider.
    Packing,
    /// The divider is gone; the pile slumps.
    Slumping,
    /// Measured; [`ReposeExperiment::result`] is set.
    Done,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Packing => "packing",
            Phase::Slumping => "slumping",
            Phase::Done => "done",
        }
    }
}

/// How a settle phase ended.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PhaseReport {
    /// Simulated time the phase took (s).
    pub duration: f64,
    /// Whether the pile met the rest criterion (false: the time cap ended the phase).
    pub settled: bool,
    /// K / ΔU at the end of the phase.
    pub ke_ratio: f64,
}

/// The experiment's outcome.
#[derive(Clone, Debug, PartialEq)]
pub struct ReposeResult {
    pub measurement: ReposeMeasurement,
    pub packing: PhaseReport,
    pub slumping: PhaseReport,
    /// Bodies that left the container (module doc).
    pub bodies_lost: usize,
    /// The friction coefficient μ the pile packed at ([`ReposeConfig::pack_friction`],
    /// else the run's).
    pub pack_friction: f64,
    /// Under [`Protocol::Drum`]: the drum and its samples (the measurement's angle is
    /// their mean, its error their standard deviation).
    pub drum: Option<DrumReport>,
}

/// A run whose pile left more than this fraction of the floor's cells bare did not
/// spread into a slope: [`ReposeResult::caveats`] says so.
pub const BARE_FLOOR_WARNING: f64 = 0.25;

impl ReposeResult {
    /// What makes this run's angle doubtful, one sentence each (empty: nothing):
    /// - a phase ended at the time cap, so the wall went, or the pile was measured,
    ///   while it was still moving (K/ΔU above the threshold);
    /// - more than [`BARE_FLOOR_WARNING`] of the 8 × 16 cells are bare floor: no slope
    ///   covers the floor (too few bodies, or a face that stood instead of slumping), and
    ///   a line fitted over a flat top is not an angle of repose (the paper's §7.5
    ///   measurement assumes a slope across the grid);
    /// - bodies left the container.
    pub fn caveats(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (name, phase) in [("packing", &self.packing), ("slumping", &self.slumping)] {
            if let (Some(d), "slumping") = (&self.drum, name) {
                if !phase.settled {
                    out.push(format!(
                        "the drum reached the time cap after {:.1} s: {} samples over {:.2} of {} turns",
                        phase.duration, d.samples, d.turns_measured, d.turns
                    ));
                }
                continue;
            }
            if !phase.settled {
                out.push(format!(
                    "{name} reached the time cap after {:.1} s with K/ΔU = {:.1e}: the pile was still moving",
                    phase.duration, phase.ke_ratio
                ));
            }
        }
        let cells = measure::ROWS * measure::COLUMNS;
        let bare = self.measurement.empty_cells;
        if bare as f64 > BARE_FLOOR_WARNING * cells as f64 {
            out.push(format!(
                "{bare} of {cells} cells are bare floor: no slope covers the floor (too few bodies, or a face that stood instead of slumping), so the fitted angle is not an angle of repose"
            ));
        }
        if self.bodies_lost > 0 {
            out.push(format!("{} bodies left the container", self.bodies_lost));
        }
        out
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ReposeError {
    /// The world is not set up for the experiment (no box with a divider, a shape the
    /// measurement does not handle, bad config).
    #[error("{0}")]
    Setup(String),
    /// Step `step` (1-based) failed: a solver error or a non-finite state.
    #[error("{}", source.at_step(*step))]
    Solver { step: u64, source: SolverError },
}

/// The state machine (module doc) without the world: the caller steps the world and
/// calls [`ReposeTracker::after_step`] after each step. The app keeps its world and a
/// tracker; [`ReposeExperiment`] bundles the two for batch runs.
#[derive(Clone, Debug)]
pub struct ReposeTracker {
    pub config: ReposeConfig,
    /// Index of the box (the cylinder, under [`Protocol::Cylinder`]; the drum's first
    /// plane, under [`Protocol::Drum`]) in `world.containers`.
    pub box_index: usize,
    pub grid: ReposeGrid,
    phase: Phase,
    phase_start: f64,
    /// U(t₀), the potential energy at release (J).
    potential_release: f64,
    /// Start of the current run of steps with K / ΔU below the threshold.
    below_since: Option<f64>,
    /// The run's friction coefficient: the world's when the experiment was set up.
    friction: f64,
    packing: Option<PhaseReport>,
    result: Option<ReposeResult>,
    /// Positions at release, for ΔU under a tilted gravity (tilt protocol only).
    release: Vec<crate::math::Vec3>,
    tilt: Option<TiltState>,
    /// The base of the cylinder the pile packs in (cylinder protocol only).
    cylinder_base: Option<crate::math::Vec3>,
    /// The drum (drum protocol only).
    drum: Option<DrumState>,
}

impl ReposeTracker {
    /// Set up the experiment on `world` as it is now (t₀). The world needs a box
    /// container with at least one present divider, and every dynamic body on one side
    /// of it; the grid's downhill direction points from that side to the other. The
    /// world's friction coefficient is the run's; with
    /// [`ReposeConfig::pack_friction`] set, the world packs at that one until the wall
    /// goes.
    pub fn new(world: &mut World, config: ReposeConfig) -> Result<Self, ReposeError> {
        config.validate().map_err(ReposeError::Setup)?;
        match config.protocol {
            Protocol::Cylinder => return Self::new_cylinder(world, config),
            Protocol::Drum => return Self::new_drum(world, config),
            Protocol::Wall | Protocol::Tilt => {}
        }
        let (box_index, center, half_size, divider_x) = world
            .containers
            .iter()
            .enumerate()
            .find_map(|(i, c)| match c {
                Container::Box {
                    center,
                    half_size,
                    dividers,
                    ..
                } => dividers
                    .iter()
                    .find(|d| d.present)
                    .map(|d| (i, *center, *half_size, d.x)),
                _ => None,
            })
            .ok_or_else(|| {
                ReposeError::Setup(
                    "the repose experiment needs a Box container with a present divider".into(),
                )
            })?;
        if half_size[0] < half_size[1] {
            return Err(ReposeError::Setup(format!(
                "the divider (a plane x = const) must cross the box's long side, but the box is {} m along x and {} m along y",
                2.0 * half_size[0],
                2.0 * half_size[1]
            )));
        }
        let dynamic = measurable_bodies(world)?;
        let left = dynamic.iter().filter(|b| b.position.x < divider_x).count();
        if left != 0 && left != dynamic.len() {
            return Err(ReposeError::Setup(format!(
                "every body must start on one side of the divider x = {divider_x}; {left} of {} are on its -x side",
                dynamic.len()
            )));
        }
        // Packed on −x: the pile slumps towards +x.
        let grid = ReposeGrid::new(center, half_size, left != 0).map_err(ReposeError::Setup)?;
        if config.protocol == Protocol::Tilt {
            let g = world.gravity;
            if !(g.x == 0.0 && g.y == 0.0 && g.z < 0.0) {
                return Err(ReposeError::Setup(format!(
                    "the tilt protocol turns gravity about y from straight down, but the scene's gravity is {:?}",
                    [g.x, g.y, g.z]
                )));
            }
        }
        let release = if config.protocol == Protocol::Tilt {
            world.bodies.iter().map(|b| b.position).collect()
        } else {
            Vec::new()
        };
        let friction = world.params.friction;
        if let Some(mu) = config.pack_friction {
            world.params.friction = mu;
        }
        Ok(ReposeTracker {
            config,
            box_index,
            grid,
            phase: Phase::Packing,
            phase_start: world.time,
            potential_release: world.energies().2,
            below_since: None,
            friction,
            packing: None,
            result: None,
            release,
            tilt: None,
            cylinder_base: None,
            drum: None,
        })
    }

    /// [`ReposeTracker::new`] for [`Protocol::Cylinder`]: the world needs a
    /// [`Container::Cylinder`], and every dynamic body inside it.
    fn new_cylinder(world: &mut World, config: ReposeConfig) -> Result<Self, ReposeError> {
        let kinds: Vec<&str> = world.containers.iter().map(|c| c.kind_name()).collect();
        let (index, base, radius) = world
            .containers
            .iter()
            .enumerate()
            .find_map(|(i, c)| match c {
                Container::Cylinder { base, radius, .. } => Some((i, *base, *radius)),
                _ => None,
            })
            .ok_or_else(|| {
                ReposeError::Setup(format!(
                    "the cylinder protocol needs a Cylinder container to pack the bodies in, but the scene's containers are [{}]",
                    kinds.join(", ")
                ))
            })?;
        let dynamic = measurable_bodies(world)?;
        let outside = dynamic
            .iter()
            .filter(|b| {
                let d = b.position - base;
                d.x.hypot(d.y) > radius || d.z < 0.0
            })
            .count();
        if outside > 0 {
            return Err(ReposeError::Setup(format!(
                "every body must start inside the cylinder (radius {radius} m); {outside} of {} do not",
                dynamic.len()
            )));
        }
        // The grid is unused by the cone measurement; it spans the cylinder's footprint.
        let grid = ReposeGrid::new(base, [radius, radius], true).map_err(ReposeError::Setup)?;
        let friction = world.params.friction;
        if let Some(mu) = config.pack_friction {
            world.params.friction = mu;
        }
        Ok(ReposeTracker {
            config,
            box_index: index,
            grid,
            phase: Phase::Packing,
            phase_start: world.time,
            potential_release: world.energies().2,
            below_since: None,
            friction,
            packing: None,
            result: None,
            release: Vec::new(),
            tilt: None,
            cylinder_base: Some(base),
            drum: None,
        })
    }

    /// [`ReposeTracker::new`] for [`Protocol::Drum`]: the world's first
    /// [`Container::Box`] is replaced by the drum inscribed in its x-z cross-section
    /// (radius R = min(hx, height/2), axis along y at height R above the floor, end plates
    /// on the box's ±y walls; dividers are dropped), every dynamic body's centre must lie
    /// inside that drum, the drum must be at least as wide as long (2R ≥ 2hy: the grid's
    /// 16 columns run across the diameter), and gravity must point straight down.
    fn new_drum(world: &mut World, config: ReposeConfig) -> Result<Self, ReposeError> {
        let (index, geometry) = DrumGeometry::of_world(world)?;
        let radius = geometry.radius;
        let g = world.gravity;
        if !(g.x == 0.0 && g.y == 0.0 && g.z < 0.0) {
            return Err(ReposeError::Setup(format!(
                "the drum protocol turns gravity about y from straight down, but the scene's gravity is {:?}",
                [g.x, g.y, g.z]
            )));
        }
        let dynamic = measurable_bodies(world)?;
        let outside = dynamic
            .iter()
            .filter(|b| {
                geometry.axis_distance(&b.position) > radius
                    || (b.position.y - geometry.center.y).abs() > geometry.half_length
            })
            .count();
        if outside > 0 {
            return Err(ReposeError::Setup(format!(
                "every body must start inside the drum inscribed in the box (radius {radius} m, axis along y at z = {}); {outside} of {} do not",
                geometry.center.z,
                dynamic.len()
            )));
        }
        // Downhill is +x in the frame of gravity: the drum turns at +Ω about y there, so
        // its wall rises on the −x side (module doc).
        let grid = ReposeGrid::new(geometry.center, [radius, geometry.half_length], true)
            .map_err(ReposeError::Setup)?;
        world.containers.remove(index);
        world.containers.extend(geometry.containers());
        let friction = world.params.friction;
        if let Some(mu) = config.pack_friction {
            world.params.friction = mu;
        }
        let omega = (config.drum_froude * g.norm() / radius).sqrt();
        Ok(ReposeTracker {
            config,
            box_index: world.containers.len() - DRUM_SIDES - 2,
            grid,
            phase: Phase::Packing,
            phase_start: world.time,
            potential_release: world.energies().2,
            below_since: None,
            friction,
            packing: None,
            result: None,
            release: world.bodies.iter().map(|b| b.position).collect(),
            tilt: None,
            cylinder_base: None,
            drum: Some(DrumState {
                geometry,
                g: g.norm(),
                omega,
                turning: false,
                samples: Vec::new(),
                due: 0,
                row_sums: [0.0; measure::ROWS],
                row_counts: [0; measure::ROWS],
            }),
        })
    }

    /// The drum protocol's state (its samples so far).
    pub fn drum(&self) -> Option<&DrumState> {
        self.drum.as_ref()
    }

    /// Turns of the drum since it began to turn (0 before, and under other protocols).
    pub fn drum_turns(&self, world: &World) -> f64 {
        self.drum
            .as_ref()
            .filter(|d| d.turning)
            .map_or(0.0, |d| self.phase_time(world) / d.period())
    }

    /// The tilt protocol's state, once the tilt has begun.
    pub fn tilt(&self) -> Option<&TiltState> {
        self.tilt.as_ref()
    }

    /// The tilt at which the pile failed (degrees), under [`Protocol::Tilt`] once it has.
    pub fn tilt_failed_deg(&self) -> Option<f64> {
        self.tilt.as_ref()?.failed_at.map(f64::to_degrees)
    }

    /// The tilt now (degrees; 0 before the tilt and under [`Protocol::Wall`]).
    pub fn tilt_deg(&self, world: &World) -> f64 {
        self.tilt
            .as_ref()
            .map_or(0.0, |t| t.tilt_of(&world.gravity).to_degrees())
    }

    /// The detection lag bound of the tilt protocol (degrees; module doc, step 4): d is
    /// half the largest bounding radius of the dynamic bodies.
    pub fn tilt_lag_deg(&self, world: &World) -> f64 {
        let d = world
            .bodies
            .iter()
            .filter(|b| !b.is_static())
            .map(|b| 0.5 * b.shape.bounding_radius())
            .fold(0.0, f64::max);
        let g = self
            .tilt
            .as_ref()
            .map_or_else(|| world.gravity.norm(), |t| t.g);
        tilt_lag_deg(d, self.config.tilt_rate, g)
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Where the run stands in simulated time: its current stage, the time the stage has
    /// taken and the most it can take, and the most the stages after it can take. A
    /// stage ends at its cap or earlier (a pile that settles, a tilt that fails), so
    /// [`RunProgress::left_at_most`] bounds the simulated time still to run.
    pub fn progress(&self, world: &World) -> RunProgress {
        let cap = self.config.max_time;
        let tilt_cap = 90.0 / self.config.tilt_rate;
        let drum_cap = self.drum.as_ref().map_or(cap, |d| {
            ((DRUM_STARTUP_TURNS + self.config.drum_turns) * d.period()).min(cap)
        });
        let elapsed = self.phase_time(world);
        let protocol = self.config.protocol;
        match self.phase {
            Phase::Packing => RunProgress {
                stage: "packing",
                elapsed,
                cap,
                later: match protocol {
                    Protocol::Wall | Protocol::Cylinder => cap,
                    Protocol::Tilt => tilt_cap + cap,
                    Protocol::Drum => drum_cap,
                },
            },
            Phase::Slumping => match (protocol, &self.tilt) {
                (Protocol::Drum, _) => RunProgress {
                    stage: "turning",
                    elapsed,
                    cap: drum_cap,
                    later: 0.0,
                },
                (Protocol::Tilt, Some(t)) if t.failed_at.is_none() => RunProgress {
                    stage: "tilting",
                    elapsed,
                    cap: tilt_cap,
                    later: cap,
                },
                (Protocol::Tilt, _) => RunProgress {
                    stage: "settling after the avalanche",
                    elapsed,
                    cap,
                    later: 0.0,
                },
                (Protocol::Cylinder, _) => RunProgress {
                    stage: "cylinder lifted, slumping",
                    elapsed,
                    cap,
                    later: 0.0,
                },
                (Protocol::Wall, _) => RunProgress {
                    stage: "wall removed, slumping",
                    elapsed,
                    cap,
                    later: 0.0,
                },
            },
            Phase::Done => RunProgress {
                stage: "done",
                elapsed: 0.0,
                cap: 0.0,
                later: 0.0,
            },
        }
    }

    /// The most simulated time a whole run of `config` can take (s): packing, then the
    /// protocol's stages at their caps ([`ReposeTracker::progress`]). `drum_period` is
    /// the drum's period 2π/Ω (only read under [`Protocol::Drum`]).
    pub fn run_cap(config: &ReposeConfig, drum_period: f64) -> f64 {
        let cap = config.max_time;
        cap + match config.protocol {
            Protocol::Wall | Protocol::Cylinder => cap,
            Protocol::Tilt => 90.0 / config.tilt_rate + cap,
            Protocol::Drum => ((DRUM_STARTUP_TURNS + config.drum_turns) * drum_period).min(cap),
        }
    }

    /// The run's friction coefficient μ, in force once the wall is removed.
    pub fn friction(&self) -> f64 {
        self.friction
    }

    /// The friction coefficient μ the pile packs at.
    pub fn pack_friction(&self) -> f64 {
        self.config.pack_friction.unwrap_or(self.friction)
    }

    /// Simulated time since the current phase began (s).
    pub fn phase_time(&self, world: &World) -> f64 {
        world.time - self.phase_start
    }

    /// The packing phase's report, once it has ended.
    pub fn packing(&self) -> Option<&PhaseReport> {
        self.packing.as_ref()
    }

    /// The outcome, once the phase is [`Phase::Done`].
    pub fn result(&self) -> Option<&ReposeResult> {
        self.result.as_ref()
    }

    /// K / ΔU now (module doc); ∞ while ΔU ≤ 0.
    pub fn ke_ratio(&self, world: &World) -> f64 {
        let (kt, kr, u) = world.energies();
        let range = self.potential_release - u;
        if range > 0.0 {
            (kt + kr) / range
        } else {
            f64::INFINITY
        }
    }

    /// Whether dynamic body `i` has left the container (module doc).
    pub fn is_lost(&self, world: &World, i: usize) -> bool {
        let b = &world.bodies[i];
        if b.is_static() {
            return false;
        }
        let p = &b.position;
        if let Some(d) = &self.drum {
            let rb = b.shape.bounding_radius();
            let g = &d.geometry;
            return !p.iter().all(|x| x.is_finite())
                || g.axis_distance(p) > g.radius + rb
                || (p.y - g.center.y).abs() > g.half_length + rb;
        }
        if let Some(base) = &self.cylinder_base {
            return !p.iter().all(|x| x.is_finite()) || p.z < base.z - b.shape.bounding_radius();
        }
        let g = &self.grid;
        !p.iter().all(|x| x.is_finite())
            || (p.x - g.center.x).abs() > g.half_size[0]
            || (p.y - g.center.y).abs() > g.half_size[1]
            || p.z < g.center.z - b.shape.bounding_radius()
    }

    /// Number of bodies that have left the container.
    pub fn bodies_lost(&self, world: &World) -> usize {
        (0..world.bodies.len())
            .filter(|&i| self.is_lost(world, i))
            .count()
    }

    /// End the packing phase now and remove the divider (the app's "remove wall"
    /// action); does nothing after packing.
    pub fn remove_wall(&mut self, world: &mut World) {
        if self.phase == Phase::Packing {
            self.end_phase(world, false);
        }
    }

    /// Measure the pile as it stands now (any phase).
    /// Under [`Protocol::Drum`], the surface in the frame of the gravity now
    /// ([`ReposeTracker::measure_drum`]).
    pub fn measure_now(&self, world: &World) -> Result<ReposeMeasurement, ReposeError> {
        if let Some(d) = &self.drum {
            return self.measure_drum(world, &d.geometry);
        }
        match &self.cylinder_base {
            Some(base) => measure::measure_cone(base, &world.bodies, |i| self.is_lost(world, i)),
            None => measure::measure(&self.grid, &world.bodies, |i| self.is_lost(world, i)),
        }
        .map_err(ReposeError::Setup)
    }

    /// The 8 × 16 measurement of the drum's bed in the frame of gravity: every body is
    /// turned about the drum's axis by R_y(φ), φ = [`drum_turn_of`] the world's gravity,
    /// which takes that gravity to −z; the grid spans the drum's diameter (16 columns,
    /// downhill +x) and length (8 rows).
    pub fn measure_drum(
        &self,
        world: &World,
        geometry: &DrumGeometry,
    ) -> Result<ReposeMeasurement, ReposeError> {
        let phi = drum_turn_of(&world.gravity);
        let turn = crate::math::Quat::from_axis_angle(&crate::math::Vec3::y_axis(), phi);
        let bodies: Vec<_> = world
            .bodies
            .iter()
            .map(|b| {
                let mut b = b.clone();
                b.position = geometry.center + turn * (b.position - geometry.center);
                b.orientation = turn * b.orientation;
                b
            })
            .collect();
        measure::measure(&self.grid, &bodies, |i| self.is_lost(world, i))
            .map_err(ReposeError::Setup)
    }

    /// The drum's step (module doc, drum protocol): sample the surface when a sample is
    /// due, end the run after the start-up and the turns (or at the time cap), else set
    /// the gravity of the next step, g = |g| (sin Ωt, 0, −cos Ωt).
    fn drum_after_step(&mut self, world: &mut World) -> Phase {
        let t = self.phase_time(world);
        let slack = 1e-9 * world.dt;
        let Some(d) = self.drum.as_ref() else {
            return self.phase;
        };
        if t + slack >= d.sample_time(d.due) {
            let geometry = d.geometry.clone();
            let m = self.measure_drum(world, &geometry);
            let Some(d) = self.drum.as_mut() else {
                return self.phase;
            };
            d.due += 1;
            if let Ok(m) = m
                && m.angle_deg.is_finite()
            {
                d.samples.push(m.angle_deg);
                for (j, a) in m.row_angles_deg.iter().enumerate() {
                    if a.is_finite() {
                        d.row_sums[j] += a;
                        d.row_counts[j] += 1;
                    }
                }
            }
        }
        let Some(d) = self.drum.as_ref() else {
            return self.phase;
        };
        let end = (DRUM_STARTUP_TURNS + self.config.drum_turns) * d.period();
        let done = d.due as f64 >= self.config.drum_turns * DRUM_SAMPLES_PER_TURN as f64
            || t + slack >= end;
        if done || t + slack >= self.config.max_time {
            self.end_phase(world, done);
        } else {
            let phi = d.omega * t;
            world.gravity = d.g * crate::math::Vec3::new(phi.sin(), 0.0, -phi.cos());
        }
        self.phase
    }

    /// Account for the world step just taken: move to the next phase when this one ends
    /// (removing the divider after packing, measuring after slumping).
    pub fn after_step(&mut self, world: &mut World) -> Phase {
        if self.phase == Phase::Done {
            return Phase::Done;
        }
        if self.phase == Phase::Slumping && self.drum.is_some() {
            return self.drum_after_step(world);
        }
        if self.phase == Phase::Slumping
            && let Some(tilt) = self.tilt.as_mut()
            && tilt.failed_at.is_none()
        {
            let theta = tilt.tilt_of(&world.gravity);
            let moved = world
                .bodies
                .iter()
                .zip(&tilt.start)
                .filter(|(b, p0)| {
                    !b.is_static() && (b.position - **p0).norm() > 0.5 * b.shape.bounding_radius()
                })
                .count();
            let n = world.bodies.iter().filter(|b| !b.is_static()).count();
            let need = ((TILT_FAIL_FRACTION * n as f64).ceil() as usize).max(1);
            let next = self.config.tilt_rate.to_radians() * (world.time - self.phase_start);
            if moved >= need || next >= std::f64::consts::FRAC_PI_2 {
                // Failed (or tilted to 90° without failing): hold the tilt and settle.
                tilt.failed_at = (moved >= need).then_some(theta);
                self.potential_release = self
                    .release
                    .iter()
                    .zip(&world.bodies)
                    .filter(|(_, b)| !b.is_static())
                    .map(|(p, b)| -b.mass * world.gravity.dot(p))
                    .sum();
                self.below_since = None;
                self.phase_start = world.time;
            } else {
                world.gravity =
                    tilt.g * crate::math::Vec3::new(tilt.sign * next.sin(), 0.0, -next.cos());
            }
            return self.phase;
        }
        let now = world.time;
        if self.ke_ratio(world) < self.config.ke_ratio {
            self.below_since.get_or_insert(now - world.dt);
        } else {
            self.below_since = None;
        }
        // A small slack keeps `n` steps of dt from falling one ulp short of n·dt.
        let slack = 1e-9 * world.dt;
        let settled = self
            .below_since
            .is_some_and(|t| now - t + slack >= self.config.hold);
        if settled || self.phase_time(world) + slack >= self.config.max_time {
            self.end_phase(world, settled);
        }
        self.phase
    }

    fn end_phase(&mut self, world: &mut World, settled: bool) {
        let report = PhaseReport {
            duration: self.phase_time(world),
            settled,
            ke_ratio: self.ke_ratio(world),
        };
        self.phase_start = world.time;
        self.below_since = None;
        match self.phase {
            Phase::Packing => {
                self.packing = Some(report);
                if let Some(d) = self.drum.as_mut() {
                    if self.config.pack_friction.is_some() {
                        world.params.friction = self.friction;
                    }
                    d.turning = true;
                    self.phase = Phase::Slumping;
                    return;
                }
                if self.config.protocol == Protocol::Tilt {
                    if self.config.pack_friction.is_some() {
                        world.params.friction = self.friction;
                    }
                    // The floor falls towards the wall the pile is packed against.
                    self.tilt = Some(TiltState {
                        start: world.bodies.iter().map(|b| b.position).collect(),
                        g: world.gravity.norm(),
                        sign: -self.grid.downhill_sign(),
                        failed_at: None,
                    });
                    self.phase = Phase::Slumping;
                    return;
                }
                if let Some(base) = self.cylinder_base {
                    // Lifted off: its floor stays.
                    if let Some(c) = world.containers.get_mut(self.box_index) {
                        *c = Container::Plane {
                            point: base,
                            normal: crate::math::Vec3::z(),
                        };
                    }
                    if self.config.pack_friction.is_some() {
                        world.params.friction = self.friction;
                    }
                    self.phase = Phase::Slumping;
                    return;
                }
                if let Some(Container::Box { dividers, .. }) =
                    world.containers.get_mut(self.box_index)
                {
                    for d in dividers {
                        d.present = false;
                    }
                }
                if self.config.pack_friction.is_some() {
                    world.params.friction = self.friction;
                }
                // The world wakes a sleeping pile itself when its containers change.
                self.phase = Phase::Slumping;
            }
            Phase::Slumping => {
                // Shapes were checked in `new`, so the measurement cannot fail here;
                // keep the error path anyway rather than panic.
                let mut measurement = match self.measure_now(world) {
                    Ok(m) => m,
                    Err(_) => {
                        measure::from_highest(&self.grid, [[None; measure::COLUMNS]; measure::ROWS])
                    }
                };
                if let Some(tilt) = &self.tilt {
                    // Rows in the frame of gravity; the angle is the tilt at failure.
                    let theta = tilt.tilt_of(&world.gravity).to_degrees();
                    for a in &mut measurement.row_angles_deg {
                        *a = theta - *a;
                    }
                    measurement.angle_deg = tilt.failed_at.map_or(f64::NAN, f64::to_degrees);
                    measurement.error_deg = self.tilt_lag_deg(world);
                }
                let drum = self.drum.as_ref().map(|d| {
                    let (mean, std) = d.mean_std();
                    measurement.angle_deg = mean;
                    measurement.error_deg = std;
                    for j in 0..measure::ROWS {
                        measurement.row_angles_deg[j] = if d.row_counts[j] > 0 {
                            d.row_sums[j] / d.row_counts[j] as f64
                        } else {
                            f64::NAN
                        };
                    }
                    DrumReport {
                        froude: self.config.drum_froude,
                        omega: d.omega,
                        radius: d.geometry.radius,
                        turns: self.config.drum_turns,
                        turns_measured: d.due as f64 / DRUM_SAMPLES_PER_TURN as f64,
                        samples: d.samples.len(),
                        mean_deg: mean,
                        std_deg: std,
                    }
                });
                self.result = Some(ReposeResult {
                    measurement,
                    packing: self.packing.unwrap_or(report),
                    slumping: report,
                    bodies_lost: self.bodies_lost(world),
                    pack_friction: self.pack_friction(),
                    drum,
                });
                self.phase = Phase::Done;
            }
            Phase::Done => {}
        }
    }
}

/// The experiment with its own world, for batch runs (the CLI's `repose` sweep).
pub struct ReposeExperiment {
    pub world: World,
    pub tracker: ReposeTracker,
}

impl ReposeExperiment {
    /// Set up the experiment on `world` as built from its scene (t₀ is now); see
    /// [`ReposeTracker::new`].
    pub fn new(mut world: World, config: ReposeConfig) -> Result<Self, ReposeError> {
        let tracker = ReposeTracker::new(&mut world, config)?;
        Ok(ReposeExperiment { world, tracker })
    }

    pub fn phase(&self) -> Phase {
        self.tracker.phase()
    }

    /// Simulated time since the current phase began (s).
    pub fn phase_time(&self) -> f64 {
        self.tracker.phase_time(&self.world)
    }

    /// The packing phase's report, once it has ended.
    pub fn packing(&self) -> Option<&PhaseReport> {
        self.tracker.packing()
    }

    /// The outcome, once the phase is [`Phase::Done`].
    pub fn result(&self) -> Option<&ReposeResult> {
        self.tracker.result()
    }

    /// K / ΔU now (module doc).
    pub fn ke_ratio(&self) -> f64 {
        self.tracker.ke_ratio(&self.world)
    }

    /// Whether dynamic body `i` has left the container (module doc).
    pub fn is_lost(&self, i: usize) -> bool {
        self.tracker.is_lost(&self.world, i)
    }

    /// Number of bodies that have left the container.
    pub fn bodies_lost(&self) -> usize {
        self.tracker.bodies_lost(&self.world)
    }

    /// See [`ReposeTracker::remove_wall`].
    pub fn remove_wall(&mut self) {
        self.tracker.remove_wall(&mut self.world);
    }

    /// Measure the pile as it stands now (any phase).
    pub fn measure_now(&self) -> Result<ReposeMeasurement, ReposeError> {
        self.tracker.measure_now(&self.world)
    }

    /// Advance one world step and move to the next phase when this one ends.
    pub fn step(&mut self) -> Result<Phase, ReposeError> {
        if self.tracker.phase() == Phase::Done {
            return Ok(Phase::Done);
        }
        let step = self.world.step_index + 1;
        self.world
            .step()
            .map_err(|source| ReposeError::Solver { step, source })?;
        Ok(self.tracker.after_step(&mut self.world))
    }

    /// Step until [`Phase::Done`], calling `progress` after every step.
    pub fn run(&mut self, mut progress: impl FnMut(&Self)) -> Result<&ReposeResult, ReposeError> {
        while self.phase() != Phase::Done {
            self.step()?;
            progress(self);
        }
        self.tracker
            .result()
            .ok_or_else(|| ReposeError::Setup("the experiment ended without a result".into()))
    }
}
