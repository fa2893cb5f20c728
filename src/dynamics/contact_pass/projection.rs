//! Position projection (paper 001, eqs. 5.27-5.28, B.18) after the velocity pass, and the
//! speculative gap a projection opened (see the module doc of `contact_pass`).

use super::{ContactPass, PROJECTION_SWEEPS};
use crate::body::RigidBody;
use crate::collision::Contact;
use crate::math::{Mat3, Quat, Vec3};

/// Paper 001's per-pair projection (eqs. 5.27-5.28, B.17-B.18), for a method that runs
/// without the contact pass and corrects positions itself: each pair of `contacts`
/// (consecutive contacts of the same bodies and container, as the narrow phase lists
/// them) whose deepest contact overlaps (gap < 0) moves apart along that contact's
/// normal by k_p × the overlap, shared in proportion to the inverse masses
/// (Δx_a = k_p (m_a⁻¹ / (m_a⁻¹ + m_b⁻¹)) |gap| n, Δx_b the opposite share). Each body
/// moves by [`RigidBody::displace`], which keeps its linear and angular momentum; the
/// returned change of rotational kinetic energy that keeping them makes (J) is the
/// caller's to book as projection work, beside the potential energy the move changes.
pub fn project_pairs(bodies: &mut [RigidBody], contacts: &[Contact], kp: f64) -> f64 {
    let same_pair =
        |x: &Contact, y: &Contact| x.a == y.a && x.b == y.b && x.container == y.container;
    let mut work = 0.0;
    let mut k = 0;
    while k < contacts.len() {
        let mut deepest = k;
        let mut end = k + 1;
        while end < contacts.len() && same_pair(&contacts[end], &contacts[k]) {
            if contacts[end].gap < contacts[deepest].gap {
                deepest = end;
            }
            end += 1;
        }
        let c = &contacts[deepest];
        if c.gap < 0.0 {
            let overlap = -c.gap;
            let inv_mass_a = bodies[c.a].inv_mass;
            let inv_mass_b = c.b.map_or(0.0, |b| bodies[b].inv_mass);
            let inv_sum = inv_mass_a + inv_mass_b;
            if inv_sum > 0.0 {
                let a = &mut bodies[c.a];
                work += a.displace(
                    &(kp * (inv_mass_a / inv_sum) * overlap * c.normal),
                    a.orientation,
                );
                if let Some(b) = c.b {
                    let b = &mut bodies[b];
                    work += b.displace(
                        &(-kp * (inv_mass_b / inv_sum) * overlap * c.normal),
                        b.orientation,
                    );
                }
            }
        }
        k = end;
    }
    work
}

/// One contact of the position projection ([`ContactPass::project`]).
#[derive(Clone)]
pub(super) struct ProjectionRow {
    /// The contact's bodies (b: none for a container side), normal, lever arms and gap,
    /// copied so that a sweep reads its rows in order and nothing else but the
    /// displacements.
    a: usize,
    b: Option<usize>,
    normal: Vec3,
    r_a: Vec3,
    r_b: Vec3,
    gap: f64,
    /// s*: the separation the contact must reach.
    target: f64,
    /// 1/(nᵀKn) with the frozen side left out.
    inv_knn: f64,
    /// m⁻¹ of each side (0 if frozen).
    ma: f64,
    mb: f64,
    /// I⁻¹ (r × n) of each side (0 if frozen).
    ja: Vec3,
    jb: Vec3,
    /// Accumulated position impulse (≥ 0).
    lambda: f64,
}

impl ContactPass {
    /// Position projection after the last [`Self::run`], over the same `contacts`.
    ///
    /// Paper 001's projection (eqs. 5.27-5.28, B.18) moves each overlapping pair apart
    /// along n by k_p × its overlap. Done pair by pair along one normal, by translation
    /// only, it cannot undo a wedge: a cross whose arm sits between two arms of its
    /// neighbours touches them at three normals about 120° apart, and each pair's push
    /// drives it into the others (measured: crosses kept 2.7-3.8 % of c overlap and never
    /// came to rest). So every contact's target is imposed jointly, with rotation, as
    /// Cline and Pai's post-stabilisation (2003) does: find position "impulses"
    /// λ_k ≥ 0 along n_k such that every contact's separation, linearised in the
    /// displacements,
    ///
    ///   s_k = gap_k + n_k·[(Δx_a + Δθ_a × r_a) − (Δx_b + Δθ_b × r_b)] ≥ s*_k,
    ///   s*_k = (1 − k_p) gap_k if gap_k < 0, else 0,
    ///
    /// with Δx = m⁻¹ Σ λ_k n_k and Δθ = I⁻¹ Σ r_k × λ_k n_k on each body (the same mass
    /// matrix as the velocity pass, paper 000 eq. 9, so a contact's own correction is
    /// (s*_k − s_k)/(n_kᵀ K_k n_k)). For a single contact of two spheres (r × n = 0) this
    /// is eq. 5.27 with the inverse-mass split of eq. B.19. Contacts that do not
    /// overlap (s*_k = 0) only keep the corrections from closing their gap. Solved by
    /// projected Gauss-Seidel over the velocity pass's bottom-up order with accumulated
    /// λ (at most [`PROJECTION_SWEEPS`] sweeps); as there, the lower-ranked side of a
    /// pair is frozen (projection does not push supports down into the floor); pairs of
    /// one rank share it by their masses and inertias. Bodies are then moved by Δx and
    /// turned by Δθ (q ← exp(Δθ/2) q).
    ///
    /// **Momentum.** Each body is moved by [`RigidBody::displace`]: it keeps its linear
    /// momentum and its angular momentum about every fixed point (its spin takes the
    /// change Δx × m v of its orbital moment), so the total P and L are unchanged to
    /// round-off. With v = 0 or Δx ∥ v (a resting pile) an isotropic body's ω is
    /// untouched.
    ///
    /// **Stop.** The sweeps stop when none changes a separation by more than
    /// max(10⁻³ k_p d, `floor`), d the deepest overlap: to 10⁻³ of the deepest
    /// correction, but no finer than `floor` (m), the distance the velocity pass may
    /// leave a resting contact to sink in the step (the world passes
    /// [`REST_TOLERANCE`](super::REST_TOLERANCE) × `rest_velocity` × h: 83 nm at 0.05 m/s
    /// and h = 1/600 s; 0 when every approach is resolved). Without the floor a settled
    /// pile, whose overlaps are a few hundred nanometres, runs all
    /// [`PROJECTION_SWEEPS`] sweeps every step to place its bodies to fractions of a
    /// nanometre.
    ///
    /// Returns the energy the projection added (J): the potential change −Σ m g·Δx in
    /// gravity `gravity` plus the rotational kinetic change of the spin update. It is
    /// artificial, and the world books it as the ledger's `projection` term.
    pub fn project(
        &mut self,
        bodies: &mut [RigidBody],
        contacts: &[Contact],
        kp: f64,
        floor: f64,
        gravity: &Vec3,
    ) -> f64 {
        let n = bodies.len();
        self.displacement.clear();
        self.displacement.resize(n, (Vec3::zeros(), Vec3::zeros()));
        self.projection.clear();
        // Nothing overlaps (or no projection asked): no rows to build.
        let deepest = contacts.iter().fold(0.0_f64, |d, c| d.max(-c.gap));
        if deepest <= 0.0 || kp == 0.0 {
            return 0.0;
        }
        // Rows in the velocity pass's bottom-up order when it ran on these contacts (it
        // sorted every one of them), else in the contacts' order.
        let bottom_up = self.order.len() == contacts.len();
        for j in 0..contacts.len() {
            let i = if bottom_up {
                self.bottom_up(j)
            } else {
                usize::MAX
            };
            let k = if bottom_up { self.order[i].1 } else { j };
            let c = &contacts[k];
            let (ra, rb) = (
                self.rank(bodies, c.a),
                c.b.map_or(0, |b| self.rank(bodies, b)),
            );
            // The bodies' world inverse inertias of the velocity pass, if it ran on these
            // contacts (its rows are in its order), else the bodies' own.
            let pass_ran = self.inv_inertia.len() == n
                && matches!(self.cold.get(i), Some(cold) if cold.a == c.a && cold.b == c.b);
            let inertia = |j: usize| {
                if pass_ran {
                    self.inv_inertia[j]
                } else {
                    bodies[j].inv_inertia_world()
                }
            };
            let (inv_inertia_a, inv_inertia_b) = (inertia(c.a), c.b.map_or(Mat3::zeros(), inertia));
            let (inv_mass_a, inv_mass_b) = (
                bodies[c.a].inv_mass,
                c.b.map_or(0.0, |b| bodies[b].inv_mass),
            );
            let (wa, wb) = if ra > rb {
                (1.0, 0.0)
            } else if rb > ra {
                (0.0, 1.0)
            } else {
                (1.0, 1.0)
            };
            let (ma, mb) = (wa * inv_mass_a, wb * inv_mass_b);
            let ja = wa * (inv_inertia_a * c.r_a.cross(&c.normal));
            let jb = wb * (inv_inertia_b * c.r_b.cross(&c.normal));
            let knn = ma + mb + c.r_a.cross(&c.normal).dot(&ja) + c.r_b.cross(&c.normal).dot(&jb);
            if knn <= 0.0 {
                continue;
            }
            self.projection.push(ProjectionRow {
                a: c.a,
                b: c.b,
                normal: c.normal,
                r_a: c.r_a,
                r_b: c.r_b,
                gap: c.gap,
                target: if c.gap < 0.0 { (1.0 - kp) * c.gap } else { 0.0 },
                inv_knn: 1.0 / knn,
                ma,
                mb,
                ja,
                jb,
                lambda: 0.0,
            });
        }
        // Stop when no sweep changes a separation by more than 10⁻³ of the correction
        // asked of the deepest contact, or `floor` (see above).
        let tol = (1e-3 * kp * deepest).max(floor);
        for _ in 0..PROJECTION_SWEEPS {
            let mut change: f64 = 0.0;
            for row in &mut self.projection {
                let (oa, ob) = row.opening(&self.displacement);
                let s = row.gap + oa - ob;
                let lambda = (row.lambda + (row.target - s) * row.inv_knn).max(0.0);
                let dl = lambda - row.lambda;
                if dl == 0.0 {
                    continue;
                }
                row.lambda = lambda;
                change = change.max((dl / row.inv_knn).abs());
                let d = &mut self.displacement[row.a];
                d.0 += dl * row.ma * row.normal;
                d.1 += dl * row.ja;
                if let Some(b) = row.b {
                    let d = &mut self.displacement[b];
                    d.0 -= dl * row.mb * row.normal;
                    d.1 -= dl * row.jb;
                }
            }
            if change <= tol {
                break;
            }
        }
        displace_all(bodies, &self.displacement, gravity)
    }
}

/// Move each body by its (Δx, Δθ) of `displacement` (q ← exp(Δθ/2) q) with
/// [`RigidBody::displace`], which keeps its linear and angular momentum; returns the
/// energy added, −Σ m g·Δx in gravity `gravity` plus the spin updates' kinetic change.
pub(super) fn displace_all(
    bodies: &mut [RigidBody],
    displacement: &[(Vec3, Vec3)],
    gravity: &Vec3,
) -> f64 {
    let mut work = 0.0;
    for (b, (dx, dtheta)) in bodies.iter_mut().zip(displacement) {
        if b.is_static() || (dx == &Vec3::zeros() && dtheta == &Vec3::zeros()) {
            continue;
        }
        let q = Quat::new_normalize(
            (crate::dynamics::rotation::quat_exp(&(0.5 * dtheta)) * b.orientation).into_inner(),
        );
        work += b.displace(dx, q) - b.mass * gravity.dot(dx);
    }
    work
}

/// The gap a speculative contact may close in this step's velocity pass: its detected
/// gap less what the last position projection opened it by.
///
/// A speculative contact (gap g > 0) lets the bodies approach at up to g/h, the speed
/// that closes the gap within the step. That is right for a gap the bodies left
/// themselves, not for one the projection made between the passes. A body wedged
/// between neighbours it overlaps is pushed out of them by the projection, each step,
/// in the one direction left free: off its support. Read as room to fall into, that gap
/// lets the velocity pass keep the body falling at (projection's push)/h, and the drift
/// then brings it back to where it was: the body stands still while its velocity grows
/// under gravity, and its neighbours sink into it (seen on `repose_crosses`; figures in
/// `docs/results/contact-pass.md`). So the gap
/// opened, o = n·[(Δx_a + Δθ_a × r_a) − (Δx_b + Δθ_b × r_b)] with the last projection's
/// displacements (see [`ContactPass::project`]) when it is positive, is taken off:
/// g_eff = max(g − max(o, 0), 0). Overlapping contacts (g ≤ 0) are unchanged; with no
/// projection in the last step, g_eff = g.
pub(super) fn speculative_gap(c: &Contact, opened: &[(Vec3, Vec3)]) -> f64 {
    if c.gap <= 0.0 || opened.is_empty() {
        return c.gap;
    }
    let (oa, ob) = opening(c, opened);
    (c.gap - (oa - ob).max(0.0)).max(0.0)
}

/// How far the per-body displacements (Δx, Δθ) open contact `c`, linearised, as the
/// two sides' terms: n·(Δx_a + Δθ_a × r_a) and n·(Δx_b + Δθ_b × r_b) (0 for a static
/// side); the opening is their difference (negative: they close it).
pub(super) fn opening(c: &Contact, displacement: &[(Vec3, Vec3)]) -> (f64, f64) {
    side_openings(c.a, c.b, &c.normal, &c.r_a, &c.r_b, displacement)
}

/// [`opening`] of the contact of `a` and `b` with normal `n` and lever arms `r_a`, `r_b`.
#[inline(always)]
fn side_openings(
    a: usize,
    b: Option<usize>,
    n: &Vec3,
    r_a: &Vec3,
    r_b: &Vec3,
    displacement: &[(Vec3, Vec3)],
) -> (f64, f64) {
    let (da, ta) = displacement[a];
    let oa = n.dot(&(da + ta.cross(r_a)));
    let ob = b.map_or(0.0, |b| {
        let (db, tb) = displacement[b];
        n.dot(&(db + tb.cross(r_b)))
    });
    (oa, ob)
}

impl ProjectionRow {
    /// [`opening`] of the row's contact.
    #[inline(always)]
    fn opening(&self, displacement: &[(Vec3, Vec3)]) -> (f64, f64) {
        side_openings(
            self.a,
            self.b,
            &self.normal,
            &self.r_a,
            &self.r_b,
            displacement,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container::Container;
    use crate::dynamics::solver::{SolverKind, SolverParams};
    use crate::shapes::Shape;
    use crate::world::World;

    /// A 1 m cube in a 4 m box (walls on), at `position` turned by `orientation`.
    fn cube_in_box(position: Vec3, orientation: Quat) -> World {
        let mut w = World::new(
            Vec3::new(0.0, 0.0, -9.81),
            1.0 / 600.0,
            SolverKind::Sqm,
            SolverParams::default(),
        )
        .unwrap();
        w.add_container(Container::Box {
            center: Vec3::zeros(),
            half_size: [2.0, 2.0],
            height: 4.0,
            walls: [true; 4],
            dividers: vec![],
        });
        let shape = Shape::Cuboid {
            half_extents: Vec3::new(0.5, 0.5, 0.5),
        };
        w.add_body(RigidBody::new(&shape, 1000.0, position, orientation));
        w
    }

    /// Project once with k_p and return (gaps before, gaps after), matched by contact
    /// order (the same features are found again after a small move).
    fn project_once(w: &mut World, kp: f64) -> (Vec<f64>, Vec<f64>) {
        let before: Vec<Contact> = w.detect().to_vec();
        ContactPass::default().project(&mut w.bodies, &before, kp, 0.0, &Vec3::zeros());
        let after: Vec<f64> = w.detect().iter().map(|c| c.gap).collect();
        (before.iter().map(|c| c.gap).collect(), after)
    }

    /// The sweeps stop once no update changes a separation by more than 10⁻³ k_p of
    /// the deepest overlap: what a test may ask of the solution (with a factor 2).
    fn sweep_tolerance(kp: f64, deepest: f64) -> f64 {
        2e-3 * kp * deepest
    }

    /// Wedged in the corner of the box, 2 cm into the floor and 3 cm into the −x wall:
    /// every contact leaves by k_p of its overlap, s = (1 − k_p) gap. Moving along the
    /// deepest normal only (a per-pair projection) would leave the floor overlap as it
    /// is.
    #[test]
    fn a_cube_wedged_in_a_corner_leaves_both_faces() {
        let mut w = cube_in_box(Vec3::new(-1.53, 0.0, 0.48), Quat::identity());
        let (before, after) = project_once(&mut w, 0.2);
        assert_eq!(before.len(), 8, "4 floor and 4 wall corners: {before:?}");
        assert_eq!(after.len(), before.len());
        let tol = sweep_tolerance(0.2, 0.03);
        for (g0, g1) in before.iter().zip(&after) {
            assert!(*g0 < 0.0);
            assert!(
                (g1 - 0.8 * g0).abs() < tol,
                "gap {g0} -> {g1}, want {}",
                0.8 * g0
            );
        }
        // Translation by (+0.2 × 3 cm, 0, +0.2 × 2 cm); no turn to speak of.
        let b = &w.bodies[0];
        assert!((b.position - Vec3::new(-1.524, 0.0, 0.484)).norm() < tol);
        assert!(b.orientation.angle() < tol);
    }

    /// Tilted by 0.1 rad about y, 2 cm into the floor: only its lowest edge overlaps
    /// (two corners). The projection lifts and turns it (the least motion in the mass
    /// metric, K of paper 000 eq. 9), and both corners reach s = (1 − k_p) gap to second
    /// order in the turn Δθ (a corner at r moves by (R − 1) r = Δθ × r + O(½ Δθ² r)).
    #[test]
    fn a_tilted_cube_is_lifted_and_turned_at_its_lowest_edge() {
        let tilt = 0.1_f64;
        let q = Quat::from_axis_angle(&Vec3::y_axis(), tilt);
        // Lowest corner height above the centre: −(0.5 cos θ + 0.5 sin θ).
        let low = 0.5 * (tilt.cos() + tilt.sin());
        let mut w = cube_in_box(Vec3::new(0.0, 0.0, low - 0.02), q);
        let (before, after) = project_once(&mut w, 0.3);
        assert_eq!(before.len(), 2, "{before:?}");
        // It turned (towards lying flat: the lever arm of the edge is off-centre).
        let turned = w.bodies[0].orientation.angle_to(&q);
        assert!(turned > 1e-4, "turned by {turned} rad");
        let corner = 0.75_f64.sqrt();
        let tol = sweep_tolerance(0.3, 0.02) + turned * turned * corner;
        for (g0, g1) in before.iter().zip(&after) {
            assert!((g0 + 0.02).abs() < 1e-9, "{g0}");
            assert!(
                (g1 - 0.7 * g0).abs() < tol,
                "gap {g0} -> {g1}, want {}",
                0.7 * g0
            );
        }
    }

    /// A contact that does not overlap (gap > 0) only keeps the others' corrections
    /// from closing it: a cube 1 cm into the floor and 1 mm clear of the −x wall moves
    /// up and does not reach the wall.
    #[test]
    fn projection_does_not_close_a_clear_gap() {
        let mut w = cube_in_box(Vec3::new(-1.499 + 0.0, 0.0, 0.49), Quat::identity());
        let (before, after) = project_once(&mut w, 0.5);
        assert!(before.iter().any(|g| *g > 0.0), "{before:?}");
        for (g0, g1) in before.iter().zip(&after) {
            let want = if *g0 < 0.0 { 0.5 * g0 } else { *g0 };
            let tol = sweep_tolerance(0.5, 0.01);
            assert!((g1 - want).abs() < tol, "gap {g0} -> {g1}, want {want}");
        }
    }
}
