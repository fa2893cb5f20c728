//! Settle metrics: has a pile come to rest?
//!
//! A pile has **settled** when its kinetic energy is a negligible part of the energy it
//! released by falling and it does not sink into itself:
//! - **KE ratio** K / ΔU, where ΔU is the pile's *potential-energy range*
//!   ΔU(t) = U(t₀) − U(t): the potential energy at release (t₀, the state the monitor
//!   was started on, normally step 0 of the scene, when the bodies are let go) minus the
//!   potential energy now (at rest, once the pile has settled). It is the energy the pile
//!   has had to get rid of (by dissipation) to come to rest; U = −Σ mᵢ g·xᵢ over the
//!   dynamic bodies. Criterion: K / ΔU < 10⁻⁶.
//! - **Penetration ratio**: the deepest overlap −gap of any contact divided by the size
//!   of the smaller of its two bodies ([`body_size`]). Criterion: < 1 %.
//! - **Time to settle**: the earliest time after which K / ΔU stayed below the threshold
//!   until the last sample (so a pile that jitters back above it has not settled).

use crate::body::RigidBody;
use crate::collision::Contact;
use crate::shapes::Shape;
use crate::world::World;

/// The KE / ΔU threshold below which a pile counts as settled.
pub const KE_RATIO_SETTLED: f64 = 1e-6;
/// The penetration / body size ratio a settled pile stays below.
pub const PENETRATION_RATIO_MAX: f64 = 0.01;

/// A body's size for the penetration criterion: the smallest width of its shape
/// (sphere: diameter 2r; cuboid: its shortest edge; cross: the bar width c; ellipsoid:
/// 2 × its shortest semi-axis; rod: its diameter; convex polyhedron: twice its
/// bounding radius, an upper bound; mass points: the diameter of their contact balls, or twice the bounding radius for
/// point contacts).
pub fn body_size(shape: &Shape) -> f64 {
    match shape {
        Shape::Sphere { radius } => 2.0 * radius,
        Shape::Cuboid { half_extents } => 2.0 * half_extents.min(),
        Shape::Cross { c } => *c,
        Shape::Ellipsoid { semi_axes } => 2.0 * semi_axes.min(),
        Shape::Rod { radius, .. } => 2.0 * radius,
        Shape::ConvexPolyhedron(_) => 2.0 * shape.bounding_radius(),
        Shape::MassPoints { radius, .. } if *radius > 0.0 => 2.0 * radius,
        Shape::MassPoints { .. } => 2.0 * shape.bounding_radius(),
    }
}

/// Deepest overlap of `contacts` relative to the smaller body's size (0 if none overlaps).
pub fn max_penetration_ratio(bodies: &[RigidBody], contacts: &[Contact]) -> f64 {
    contacts
        .iter()
        .filter(|c| c.gap < 0.0)
        .map(|c| {
            let mut size = body_size(&bodies[c.a].shape);
            if let Some(b) = c.b {
                size = size.min(body_size(&bodies[b].shape));
            }
            -c.gap / size
        })
        .fold(0.0, f64::max)
}

/// One sample of the settle metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SettleSample {
    pub time: f64,
    /// Kinetic energy K (J).
    pub kinetic: f64,
    /// ΔU = U(t₀) − U(t) (J).
    pub potential_range: f64,
    /// K / ΔU (∞ while ΔU ≤ 0).
    pub ke_ratio: f64,
    /// Deepest overlap / body size over the step's contacts.
    pub penetration_ratio: f64,
}

/// Follows a run and reports the settle metrics (see the module doc).
#[derive(Clone, Debug, Default)]
pub struct SettleMonitor {
    /// U(t₀), the potential energy at release (J).
    pub potential_at_release: f64,
    /// Time of the last sample with K / ΔU ≥ threshold (None: never).
    last_unsettled: Option<f64>,
    first_time: f64,
    /// Largest penetration ratio seen after the last unsettled sample.
    max_penetration_settled: f64,
    /// Largest penetration ratio over the whole run.
    pub max_penetration: f64,
    pub last: SettleSample,
}

impl SettleMonitor {
    /// Start monitoring at the world's current state (the release).
    pub fn start(world: &World) -> Self {
        SettleMonitor {
            potential_at_release: world.energies().2,
            first_time: world.time,
            ..Default::default()
        }
    }

    /// Sample the world after a step (uses the contacts of that step).
    pub fn sample(&mut self, world: &World) -> SettleSample {
        let (kt, kr, u) = world.energies();
        let kinetic = kt + kr;
        let potential_range = self.potential_at_release - u;
        let ke_ratio = if potential_range > 0.0 {
            kinetic / potential_range
        } else {
            f64::INFINITY
        };
        let penetration_ratio = max_penetration_ratio(&world.bodies, &world.contacts);
        self.max_penetration = self.max_penetration.max(penetration_ratio);
        if ke_ratio.is_nan() || ke_ratio >= KE_RATIO_SETTLED {
            self.last_unsettled = Some(world.time);
            self.max_penetration_settled = 0.0;
        } else {
            self.max_penetration_settled = self.max_penetration_settled.max(penetration_ratio);
        }
        self.last = SettleSample {
            time: world.time,
            kinetic,
            potential_range,
            ke_ratio,
            penetration_ratio,
        };
        self.last
    }

    /// Time from the start after which K / ΔU stayed below [`KE_RATIO_SETTLED`] up to the
    /// last sample; `None` if the last sample is not below it.
    pub fn time_to_settle(&self) -> Option<f64> {
        if self.last.ke_ratio.is_nan() || self.last.ke_ratio >= KE_RATIO_SETTLED {
            return None;
        }
        Some(self.last_unsettled.unwrap_or(self.first_time) - self.first_time)
    }

    /// Largest penetration ratio since the pile settled (over the whole run if it did
    /// not).
    pub fn max_penetration_after_settling(&self) -> f64 {
        if self.time_to_settle().is_some() {
            self.max_penetration_settled
        } else {
            self.max_penetration
        }
    }

    /// Whether both criteria hold at the last sample.
    pub fn settled(&self) -> bool {
        self.time_to_settle().is_some()
            && self.max_penetration_after_settling() < PENETRATION_RATIO_MAX
    }
}
