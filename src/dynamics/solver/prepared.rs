//! Per-contact data the solvers' inner loops need, copied from the bodies once per step
//! (Box2D style: avoids chasing body indices and recomputing world inertia in the loop).

use super::{SolverReport, TraceRow, trace_impulse};
use crate::body::RigidBody;
use crate::collision::Contact;
use crate::math::{Mat3, Vec3, skew};

/// Laid out in declaration order (`repr(C)`): what a sweep reads for every contact
/// (bodies, frame, lever arms, masses, gap) first and contiguous, the 3 × 3 matrices
/// last.
#[derive(Clone, Debug)]
#[repr(C)]
pub struct PreparedContact {
    pub a: usize,
    pub b: Option<usize>,
    pub n: Vec3,
    pub t1: Vec3,
    pub t2: Vec3,
    pub r_a: Vec3,
    pub r_b: Vec3,
    pub inv_mass_a: f64,
    pub inv_mass_b: f64,
    pub gap: f64,
    pub container: Option<usize>,
    pub inv_inertia_a: Mat3,
    pub inv_inertia_b: Mat3,
    /// Collision matrix: u⁺ = u⁻ + K P for an impulse P on a (−P on b).
    pub k: Mat3,
}

/// The collision matrix of a contact, u⁺ = u⁻ + K P for an impulse P on a (−P on b):
/// K = (1/m_a + 1/m_b) 1 − r̃_a I_a⁻¹ r̃_a − r̃_b I_b⁻¹ r̃_b (paper 000, eq. 9), with
/// `inv_mass_sum` = 1/m_a + 1/m_b and the world inverse inertias (zero for a static side
/// or a container). Every caller forms K here, so that K of the same contact is the same
/// to the bit wherever it is built.
#[inline]
pub fn collision_matrix(
    inv_mass_sum: f64,
    r_a: &Vec3,
    inv_inertia_a: &Mat3,
    r_b: &Vec3,
    inv_inertia_b: &Mat3,
) -> Mat3 {
    let (ra, rb) = (skew(r_a), skew(r_b));
    let (a, b) = (
        mul3(&mul3(&ra, inv_inertia_a), &ra),
        mul3(&mul3(&rb, inv_inertia_b), &rb),
    );
    let m = Mat3::identity() * inv_mass_sum;
    Mat3::from_fn(|i, j| (m[(i, j)] - a[(i, j)]) - b[(i, j)])
}

/// The 3 × 3 product x y with each entry summed as nalgebra's product sums it,
/// (x_i0 y_0j + x_i1 y_1j) + x_i2 y_2j: the same value to the bit, in straight-line
/// code.
#[inline(always)]
fn mul3(x: &Mat3, y: &Mat3) -> Mat3 {
    Mat3::from_fn(|i, j| x[(i, 0)] * y[(0, j)] + x[(i, 1)] * y[(1, j)] + x[(i, 2)] * y[(2, j)])
}

impl PreparedContact {
    pub fn new(bodies: &[RigidBody], c: &Contact) -> Self {
        let inv_inertia_b = c.b.map_or(Mat3::zeros(), |b| bodies[b].inv_inertia_world());
        Self::with_inertia(bodies, c, bodies[c.a].inv_inertia_world(), inv_inertia_b)
    }

    /// [`Self::new`] with the bodies' world inverse inertias given (`inv_inertia_b`: zero
    /// for a container), for a caller that computed each body's once for all its
    /// contacts.
    pub fn with_inertia(
        bodies: &[RigidBody],
        c: &Contact,
        inv_inertia_a: Mat3,
        inv_inertia_b: Mat3,
    ) -> Self {
        let ba = &bodies[c.a];
        let inv_mass_b = c.b.map_or(0.0, |b| bodies[b].inv_mass);
        let k = collision_matrix(
            ba.inv_mass + inv_mass_b,
            &c.r_a,
            &inv_inertia_a,
            &c.r_b,
            &inv_inertia_b,
        );
        PreparedContact {
            a: c.a,
            b: c.b,
            container: c.container,
            n: c.normal,
            t1: c.t1,
            t2: c.t2,
            r_a: c.r_a,
            r_b: c.r_b,
            inv_mass_a: ba.inv_mass,
            inv_mass_b,
            inv_inertia_a,
            inv_inertia_b,
            k,
            gap: c.gap,
        }
    }

    /// Relative velocity of a with respect to b at the contact point.
    #[inline]
    pub fn relative_velocity(&self, bodies: &[RigidBody]) -> Vec3 {
        let ba = &bodies[self.a];
        let va = ba.velocity + ba.angular_velocity.cross(&self.r_a);
        match self.b {
            Some(b) => va - (bodies[b].velocity + bodies[b].angular_velocity.cross(&self.r_b)),
            None => va,
        }
    }

    /// Apply impulse `p` to a at the contact point and `−p` to b.
    #[inline]
    pub fn apply_impulse(&self, bodies: &mut [RigidBody], p: &Vec3) {
        let ba = &mut bodies[self.a];
        ba.velocity += p * self.inv_mass_a;
        ba.angular_velocity += self.inv_inertia_a * self.r_a.cross(p);
        if let Some(b) = self.b {
            let bb = &mut bodies[b];
            bb.velocity -= p * self.inv_mass_b;
            bb.angular_velocity -= self.inv_inertia_b * self.r_b.cross(p);
        }
    }

    /// Apply impulse `p` to a relative velocity `u` (see [`Self::apply_impulse`]), record
    /// it as trace row `report.impulses` of contact `ci` when tracing, book its work
    /// (`SolverReport::book_impulse`) and return the relative velocity after it,
    /// u⁺ = u + K p.
    pub fn apply_and_book(
        &self,
        bodies: &mut [RigidBody],
        p: &Vec3,
        u: &Vec3,
        ci: usize,
        report: &mut SolverReport,
        trace: Option<&mut Vec<TraceRow>>,
    ) -> Vec3 {
        self.apply_impulse(bodies, p);
        let u_after = u + self.k * p;
        trace_impulse(trace, bodies, report.impulses, ci, u_after.dot(&self.n), p);
        report.book_impulse(&self.n, p, u, &u_after);
        u_after
    }

    /// Whether the contact can receive an impulse at all (at least one dynamic body).
    pub fn resolvable(&self) -> bool {
        self.inv_mass_a + self.inv_mass_b > 0.0
    }

    /// Whether the contact, with normal velocity `un`, must be resolved in a step of
    /// length `dt`: it approaches faster than `threshold` (≥ 0) and either overlaps or,
    /// if speculative (gap > 0), would close its gap within the step.
    pub fn approaching(&self, un: f64, dt: f64, threshold: f64) -> bool {
        super::approaching(self.gap, un, dt, threshold)
    }

    /// Same pair of objects (body–body or body–container) as `other`.
    pub fn same_pair(&self, other: &PreparedContact) -> bool {
        self.a == other.a && self.b == other.b && self.container == other.container
    }
}
