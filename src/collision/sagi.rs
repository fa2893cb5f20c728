//! SAGI: semi-analytic geometry iteration for ellipsoid contacts (paper 002, section 3
//! and Appendix A). OWNER: SAGI helper.
//!
//! Geometry (paper 002, section 2): an ellipsoid is `x = Φ e_a + x_c` (eq. 3) with the shape
//! matrix `Φ = R Diag(r_u, r_v, r_w)` (eq. 4, scaling `S = 1` for rigid bodies) and the unit
//! vector `e_a = (cos a cos e, sin a cos e, sin e)` of the azimuth `a` and elevation `e`
//! (eqs. 1-2). As in the paper the semi-axes are sorted internally so that `r_u ≥ r_v ≥ r_w`;
//! the user's axis order is free.
//!
//! Steps of the methods implemented here:
//!
//! 1. **Point-ellipsoid** (section 3.1, [`closest_point_on_ellipsoid`]): alternate between the
//!    closest point on the "ellipse-e" (fixed elevation, eq. 13-14) and on the "ellipse-a"
//!    (fixed azimuth, eq. 12); each sub-problem is the stationary condition eq. 15 on a planar
//!    ellipse (eq. 11), solved in closed form up to one monotone scalar root. Stop when the
//!    angle between `I_k P` and the surface normal (eq. 9) is below `tol`.
//! 2. **Ellipsoid-ellipsoid** (section 3.2, [`ellipsoid_ellipsoid`]): the *overlap checking*
//!    procedure projects each centroid on the other ellipsoid, starts from the better of the
//!    two points and alternates point-ellipsoid projections until both angles are below `tol`.
//!    The *contact determining* procedure then takes the normal of B at its closest point.
//! 3. **Overlaps and near contact** (section 3.2, "separation-based" scheme): the paper drags
//!    the ellipsoids apart along their last displacement, which a stateless query does not
//!    have. We drag A along the current normal estimate `u` by exactly its directional overlap,
//!    so that the pair touches at the support points `A*(u)`, `B*(u)`, and solve the condition
//!    of the scheme's fixed point, "the contact normal of the dragged pair equals `u`", with
//!    Newton's method on the unit sphere. The same completion finishes separated pairs whose
//!    alternating projections converge slowly (gap much smaller than the curvature radii).
//! 4. **Walls** (Appendix A): plane (A3 with the analytic support point), cylinder (A1 + A3)
//!    and truncated cone (A2 + A3). The fixed point of the A3 projection iteration is a
//!    point of the ellipsoid whose normal is the wall normal; it is found directly as the
//!    extremum of a support function over the meridian angle, which also covers penetration.
//!
//! Every routine is deterministic, returns finite numbers for finite input and reports
//! `converged = false` when it had to fall back.

use crate::math::{Mat3, Quat, Vec3};

/// An ellipsoid in the world: semi-axes along its principal axes, centroid, orientation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EllipsoidPose {
    /// Semi-axes `(r_x, r_y, r_z)` along the principal axes (any order, all > 0).
    pub semi_axes: Vec3,
    /// Centroid `x_c` in world coordinates (paper 002, eq. 3).
    pub position: Vec3,
    /// Rotation mapping the principal frame to the world (`R` of eq. 4).
    pub orientation: Quat,
}

/// Closest (or deepest) points of a contact query.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SagiResult {
    /// Closest (or deepest) point on A, world.
    pub point_a: Vec3,
    /// Closest (or deepest) point on B / the surface, world.
    pub point_b: Vec3,
    /// Unit normal pointing from B to A (pushing A out of B).
    pub normal: Vec3,
    /// Signed separation along `normal`: > 0 apart, < 0 overlapping (penetration depth).
    pub distance: f64,
    /// Iterations used (SAGI steps plus completion steps, see each function).
    pub iterations: u32,
    /// `false` when the tolerance was not reached or an input was degenerate.
    pub converged: bool,
}

/// Ellipsoid in the internal frame of the paper: sorted semi-axes `r_u ≥ r_v ≥ r_w`, the
/// columns of `rot` are the corresponding principal axes in the world, so `Φ = rot · Diag(r)`.
#[derive(Clone, Copy, Debug)]
struct Frame {
    rot: Mat3,
    r: Vec3,
    c: Vec3,
    /// `R Diag(r)² Rᵀ`: `|Φᵀ d|² = dᵀ m d` gives the support function.
    m: Mat3,
    valid: bool,
}

impl Frame {
    fn new(e: &EllipsoidPose) -> Self {
        let rot_in = e.orientation.to_rotation_matrix().into_inner();
        let raw = e.semi_axes;
        let valid = raw.iter().all(|x| x.is_finite() && *x > 0.0)
            && e.position.iter().all(|x| x.is_finite())
            && rot_in.iter().all(|x| x.is_finite());
        let mut idx = [0usize, 1, 2];
        idx.sort_by(|&i, &j| raw[j].total_cmp(&raw[i]));
        // Degenerate axes are clamped so that nothing divides by zero.
        let scale = raw
            .iter()
            .filter(|x| x.is_finite())
            .fold(0.0f64, |m, x| m.max(x.abs()));
        let floor = if scale > 0.0 { scale * 1e-9 } else { 1e-9 };
        let fix = |x: f64| if x.is_finite() && x > floor { x } else { floor };
        let r = Vec3::new(fix(raw[idx[0]]), fix(raw[idx[1]]), fix(raw[idx[2]]));
        let rot = if rot_in.iter().all(|x| x.is_finite()) {
            Mat3::from_columns(&[
                rot_in.column(idx[0]).into_owned(),
                rot_in.column(idx[1]).into_owned(),
                rot_in.column(idx[2]).into_owned(),
            ])
        } else {
            Mat3::identity()
        };
        let c = if e.position.iter().all(|x| x.is_finite()) {
            e.position
        } else {
            Vec3::zeros()
        };
        let d2 = Mat3::from_diagonal(&r.component_mul(&r));
        Frame {
            rot,
            r,
            c,
            m: rot * d2 * rot.transpose(),
            valid,
        }
    }

    fn local_of(&self, p: &Vec3) -> Vec3 {
        self.rot.tr_mul(&(p - self.c))
    }

    fn world_of(&self, y: &Vec3) -> Vec3 {
        self.rot * y + self.c
    }

    /// Implicit function `|D⁻¹ y|² − 1` (< 0 inside) of a world point.
    fn implicit(&self, p: &Vec3) -> f64 {
        let y = self.local_of(p);
        (y.x / self.r.x).powi(2) + (y.y / self.r.y).powi(2) + (y.z / self.r.z).powi(2) - 1.0
    }

    /// Unit outward normal at a surface point given in local coordinates: the normalised
    /// gradient `D⁻² y`, equal to `r_,a × r_,e / |r_,a × r_,e|` of eq. 9 but regular at the poles.
    fn local_normal(&self, y: &Vec3) -> Vec3 {
        let g = Vec3::new(
            y.x / (self.r.x * self.r.x),
            y.y / (self.r.y * self.r.y),
            y.z / (self.r.z * self.r.z),
        );
        let n = g.norm();
        if n > 0.0 { g / n } else { Vec3::z() }
    }

    fn world_normal(&self, p: &Vec3) -> Vec3 {
        self.rot * self.local_normal(&self.local_of(p))
    }

    /// Support point `x_c + M d / √(dᵀ M d)` and support value `√(dᵀ M d)` (without `x_c·d`).
    fn support(&self, d: &Vec3) -> (Vec3, f64) {
        let md = self.m * d;
        let s = d.dot(&md).max(0.0).sqrt();
        if s > 0.0 {
            (self.c + md / s, s)
        } else {
            (self.c, 0.0)
        }
    }

    fn point_at(&self, a: f64, e: f64) -> Vec3 {
        // x = Φ e_a + x_c   (paper 002, eq. 3 with eq. 2)
        let (sa, ca) = a.sin_cos();
        let (se, ce) = e.sin_cos();
        Vec3::new(self.r.x * ca * ce, self.r.y * sa * ce, self.r.z * se)
    }

    fn length_scale(&self) -> f64 {
        self.r.x
    }
}

/// Closest point on the axis-aligned planar ellipse `(α cos t, β sin t)` to `(q0, q1)`.
///
/// This is the stationary condition of paper 002, eq. 15 on the ellipse of eq. 11. The paper
/// turns it into a quartic in `tan(t/2)` and compares its real roots; we use the equivalent
/// Lagrange form `x_i = α_i² q_i / (α_i² + s)` whose global minimiser is the unique root of
/// a monotone convex function of `s` (Eberly's formulation), found by a bracketed Newton
/// iteration that converges monotonically. Handles inside points, points on the axes and
/// degenerate (segment or point) ellipses.
fn closest_on_ellipse_2d(alpha: f64, beta: f64, q0: f64, q1: f64) -> (f64, f64) {
    if alpha < beta {
        let (x1, x0) = closest_on_ellipse_2d(beta, alpha, q1, q0);
        return (x0, x1);
    }
    let (e0, e1) = (alpha, beta);
    if e0 <= 0.0 {
        return (0.0, 0.0);
    }
    let (s0, s1) = (
        if q0 < 0.0 { -1.0 } else { 1.0 },
        if q1 < 0.0 { -1.0 } else { 1.0 },
    );
    let (y0, y1) = (q0.abs(), q1.abs());
    if e1 <= e0 * 1e-12 {
        // Segment [-e0, e0] along the first axis.
        return (s0 * y0.min(e0), 0.0);
    }
    let (x0, x1) = if y1 > 0.0 {
        if y0 > 0.0 {
            let z0 = y0 / e0;
            let z1 = y1 / e1;
            let g = z0 * z0 + z1 * z1 - 1.0;
            if g == 0.0 {
                (y0, y1)
            } else {
                let r0 = (e0 / e1) * (e0 / e1);
                let s = secular_root(r0, z0, z1, g);
                (r0 * y0 / (s + r0), y1 / (s + 1.0))
            }
        } else {
            (0.0, e1)
        }
    } else {
        let numer0 = e0 * y0;
        let denom0 = e0 * e0 - e1 * e1;
        if numer0 < denom0 {
            let xde0 = numer0 / denom0;
            (e0 * xde0, e1 * (1.0 - xde0 * xde0).max(0.0).sqrt())
        } else {
            (e0, 0.0)
        }
    };
    (s0 * x0, s1 * x1)
}

/// Root of `F(s) = (r0 z0 / (s + r0))² + (z1 / (s + 1))² − 1` on `[z1 − 1, ∞)`, where `F` is
/// decreasing and convex, `r0 ≥ 1`, `z0, z1 > 0`. Newton from the left end never overshoots;
/// a bisection safeguard keeps it inside the bracket under rounding.
fn secular_root(r0: f64, z0: f64, z1: f64, g: f64) -> f64 {
    let n0 = r0 * z0;
    let mut lo = z1 - 1.0;
    let mut hi = if g < 0.0 { 0.0 } else { n0.hypot(z1) - 1.0 };
    let f = |s: f64| (n0 / (s + r0)).powi(2) + (z1 / (s + 1.0)).powi(2) - 1.0;
    let mut s = lo;
    for _ in 0..200 {
        let fs = f(s);
        if fs > 0.0 {
            lo = s;
        } else if fs < 0.0 {
            hi = s;
        } else {
            return s;
        }
        let a = n0 / (s + r0);
        let b = z1 / (s + 1.0);
        let df = -2.0 * (a * a / (s + r0) + b * b / (s + 1.0));
        let mut next = if df < 0.0 {
            s - fs / df
        } else {
            0.5 * (lo + hi)
        };
        if !(next > lo && next < hi) {
            next = 0.5 * (lo + hi);
        }
        if (next - s).abs() <= 4.0 * f64::EPSILON * (1.0 + s.abs())
            || hi - lo <= 4.0 * f64::EPSILON * (1.0 + s.abs())
        {
            return next;
        }
        s = next;
    }
    s
}

/// Angle between the line of `d` and the unit normal `n` (0 when parallel or antiparallel).
fn line_angle(d: &Vec3, n: &Vec3) -> f64 {
    let c = d.dot(n).abs();
    let s = d.cross(n).norm();
    s.atan2(c)
}

/// Normalise `e` into `[−π/2, π/2]` (moving `a` by π when needed) and `a` into `(−π, π]`.
fn normalise_angles(a: f64, e: f64) -> (f64, f64) {
    let (se, ce) = e.sin_cos();
    let (a, e) = if ce < 0.0 {
        (a + std::f64::consts::PI, se.atan2(-ce))
    } else {
        (a, se.atan2(ce))
    };
    let (sa, ca) = a.sin_cos();
    (sa.atan2(ca), e)
}

/// Point-ellipsoid SAGI in the local (sorted) frame, warm-started at `(a, e)`.
/// Returns the closest point (local), its angles and the number of iterations, and whether
/// the angle criterion was met.
fn sagi_point_local(
    f: &Frame,
    y: &Vec3,
    start: Option<(f64, f64)>,
    tol: f64,
    max_iter: u32,
) -> (Vec3, (f64, f64), u32, bool) {
    let r = f.r;
    // (1) Set the elevation angle e = e1: without a warm start, the angles of the point
    // scaled onto the unit sphere (the "radial" guess), which are exact for a sphere.
    let (mut a, mut e) = start.unwrap_or_else(|| {
        let z = Vec3::new(y.x / r.x, y.y / r.y, y.z / r.z);
        let a = if z.x == 0.0 && z.y == 0.0 {
            0.0
        } else {
            z.y.atan2(z.x)
        };
        (a, z.z.atan2(z.x.hypot(z.y)))
    });
    let tiny = 1e-15 * f.length_scale();
    let mut x = f.point_at(a, e);
    for k in 1..=max_iter.max(1) {
        // (2)-(3) ellipse-e: fixed e, x = (r_u cos e cos a, r_v cos e sin a, r_w sin e),
        // C of eq. 13 and x_t of eq. 14; in the principal frame it is axis-aligned.
        let ce = e.cos();
        if ce * r.y > tiny {
            let (x0, x1) = closest_on_ellipse_2d(r.x * ce, r.y * ce, y.x, y.y);
            if x0 != 0.0 || x1 != 0.0 {
                a = (x1 / r.y).atan2(x0 / r.x);
            }
        }
        // (4)-(5) ellipse-a through a and a + π: C of eq. 12, spanned by the horizontal
        // direction u_a = (r_u cos a, r_v sin a, 0) / ρ_a and the w axis (orthogonal columns).
        let (sa, ca) = a.sin_cos();
        let ua = Vec3::new(r.x * ca, r.y * sa, 0.0);
        let rho = ua.norm();
        let (x0, x1) = closest_on_ellipse_2d(rho, r.z, y.dot(&ua) / rho, y.z);
        let (na, ne) = normalise_angles(a, (x1 / r.z).atan2(x0 / rho));
        a = na;
        e = ne;
        x = f.point_at(a, e);
        // (6) Stop when the angle between I_k P and the normal n of eq. 9 is below tol.
        let d = y - x;
        if d.norm() <= tiny || line_angle(&d, &f.local_normal(&x)) < tol {
            return (x, (a, e), k, true);
        }
    }
    (x, (a, e), max_iter.max(1), false)
}

fn finite_vec(v: &Vec3) -> bool {
    v.iter().all(|x| x.is_finite())
}

/// Closest point on the surface of `e` to the world point `p` (paper 002, section 3.1).
///
/// Returns `(point, signed distance, iterations)`; the distance is negative when `p` is inside
/// the ellipsoid. `tol` is the angle tolerance of step (6) in radians (the paper uses 1e-4;
/// the distance error is second order in it), `max_iter` caps the sweeps (paper: 20).
/// For non-finite input the centroid and distance 0 are returned.
pub fn closest_point_on_ellipsoid(
    e: &EllipsoidPose,
    p: &Vec3,
    tol: f64,
    max_iter: u32,
) -> (Vec3, f64, u32) {
    let f = Frame::new(e);
    if !finite_vec(p) || !f.valid {
        return (f.c, 0.0, 0);
    }
    let y = f.local_of(p);
    let (x, _, it, _) = sagi_point_local(&f, &y, None, tol.max(0.0), max_iter);
    let dist = (y - x).norm();
    let inside = f.implicit(p) < 0.0;
    (f.world_of(&x), if inside { -dist } else { dist }, it)
}

/// Support point of `e` in the world direction `dir`: `x_c + R A² Rᵀ d / √(dᵀ R A² Rᵀ d)`,
/// the point whose outward normal (eq. 9) is `d`. Returns the centroid for `d = 0`.
pub fn ellipsoid_support(e: &EllipsoidPose, dir: &Vec3) -> Vec3 {
    let f = Frame::new(e);
    if !finite_vec(dir) {
        return f.c;
    }
    f.support(dir).0
}

/// Signed directional separation `ψ(u) = (x_a − x_b)·u − |Φ_aᵀ u| − |Φ_bᵀ u|` of A above B
/// along `u`, with the support points `A*(u)` (lowest point of A along `u`) and `B*(u)`
/// (highest point of B): `ψ(u) = (A* − B*)·u`, and `max_|u|=1 ψ` is the signed distance.
fn pair_psi(fa: &Frame, fb: &Frame, u: &Vec3) -> (f64, Vec3, Vec3) {
    let (pa, _) = fa.support(&-u);
    let (pb, _) = fb.support(u);
    ((pa - pb).dot(u), pa, pb)
}

/// Newton's method on the unit sphere for `max ψ(u)` (the fixed point of the separation-based
/// scheme). Returns (u, ψ, A*, B*, steps, converged).
fn pair_newton(
    fa: &Frame,
    fb: &Frame,
    u0: &Vec3,
    max_steps: u32,
) -> (Vec3, f64, Vec3, Vec3, u32, bool) {
    let scale = fa.length_scale().max(fb.length_scale()) + (fa.c - fb.c).norm();
    let mut u = u0.normalize();
    let (mut psi, mut pa, mut pb) = pair_psi(fa, fb, &u);
    for step in 0..max_steps {
        // ∇ψ = A* − B*; the Hessian of |Φᵀu| is (M − M u uᵀ M / |Φᵀu|²) / |Φᵀu|.
        let grad = pa - pb;
        let (t1, t2) = crate::math::tangent_basis(&u);
        let g = nalgebra::Vector2::new(t1.dot(&grad), t2.dot(&grad));
        if g.norm() <= 1e-13 * scale {
            return (u, psi, pa, pb, step, true);
        }
        let mut hess = Mat3::zeros();
        for f in [fa, fb] {
            let mu = f.m * u;
            let s = u.dot(&mu).max(f64::MIN_POSITIVE).sqrt();
            hess -= (f.m - mu * mu.transpose() / (s * s)) / s;
        }
        // Riemannian Hessian on the sphere: Tᵀ ∇²ψ T − (u·∇ψ) 1.
        let t = nalgebra::Matrix3x2::from_columns(&[t1, t2]);
        let mut h = t.transpose() * hess * t - nalgebra::Matrix2::identity() * psi;
        h = (h + h.transpose()) * 0.5;
        // Shift to a negative-definite model (Levenberg-Marquardt) when ψ is not concave here.
        let tr = h.trace();
        let det = h.determinant();
        let lmax = 0.5 * tr + (0.25 * tr * tr - det).max(0.0).sqrt();
        let floor = 1e-8 * (g.norm() / scale).max(1e-12) + 1e-12;
        if lmax > -floor {
            h -= nalgebra::Matrix2::identity() * (lmax + g.norm() / scale.max(1e-300) + floor);
        }
        let mut delta = match h.try_inverse() {
            Some(inv) => -(inv * g),
            None => g / scale,
        };
        let len = delta.norm();
        if len > 0.5 {
            delta *= 0.5 / len;
        }
        // Backtracking: accept the first step that does not decrease ψ.
        let mut accepted = false;
        for _ in 0..40 {
            let cand = (u + t1 * delta.x + t2 * delta.y).normalize();
            let (cpsi, cpa, cpb) = pair_psi(fa, fb, &cand);
            if cpsi >= psi - 1e-15 * scale {
                let moved = (cand - u).norm();
                u = cand;
                psi = cpsi;
                pa = cpa;
                pb = cpb;
                accepted = true;
                if moved <= 1e-15 {
                    return (u, psi, pa, pb, step + 1, true);
                }
                break;
            }
            delta *= 0.5;
        }
        if !accepted {
            // No ascent possible at machine precision: stationary.
            let ok = g.norm() <= 1e-9 * scale;
            return (u, psi, pa, pb, step + 1, ok);
        }
    }
    let grad = pa - pb;
    let tang = (grad - u * grad.dot(&u)).norm();
    (u, psi, pa, pb, max_steps, tang <= 1e-9 * scale)
}

/// Closest points of two ellipsoids, or deepest points when they overlap (paper 002, 3.2).
///
/// Separated pairs: the paper's overlap checking (steps 1-7 of section 3.2) with the
/// point-ellipsoid SAGI of section 3.1 for every projection, warm-started at the previous
/// angles; `tol` is the angle tolerance of step (6) (paper: 1e-5) and `max_iter` caps the
/// number of projections. When the two surfaces turn out to intersect, or the alternating
/// projections contract too slowly (nearly touching pair), the separation-based completion
/// of the module doc (step 3) takes over. `iterations` counts projections plus Newton steps.
///
/// The normal points from B to A; `distance` is the signed separation (negative: the
/// penetration depth, the smallest translation of A along `normal` that separates the pair).
pub fn ellipsoid_ellipsoid(
    a: &EllipsoidPose,
    b: &EllipsoidPose,
    tol: f64,
    max_iter: u32,
) -> SagiResult {
    let fa = Frame::new(a);
    let fb = Frame::new(b);
    let tol = if tol.is_finite() && tol > 0.0 {
        tol
    } else {
        1e-5
    };
    let scale = fa.length_scale().max(fb.length_scale());
    let centre = fa.c - fb.c;
    let mut iterations = 0u32;
    let inner_iter = 50;

    // External sphere estimating: bounding spheres of radius r_u.
    let spheres_apart = centre.norm() > fa.r.x + fb.r.x;
    let mut overlap = !spheres_apart && (fb.implicit(&fa.c) <= 0.0 || fa.implicit(&fb.c) <= 0.0);
    let mut guess = if centre.norm() > 0.0 {
        centre / centre.norm()
    } else {
        Vec3::z()
    };

    if !overlap {
        // (1)-(2) Project each centroid on the other ellipsoid.
        let ya = fb.local_of(&fa.c);
        let (qa, mut ang_b, _, _) = sagi_point_local(&fb, &ya, None, tol, inner_iter);
        let yb = fa.local_of(&fb.c);
        let (qb, mut ang_a, _, _) = sagi_point_local(&fa, &yb, None, tol, inner_iter);
        let mut pb = fb.world_of(&qa); // point "A" of the paper, on B
        let mut pa = fa.world_of(&qb); // point "B" of the paper, on A
        iterations += 2;
        // (3) Start from the point whose angle to the connecting line is smaller.
        let angle_on_a = line_angle(&(pb - pa), &fa.world_normal(&pa));
        let angle_on_b = line_angle(&(pa - pb), &fb.world_normal(&pb));
        let mut project_onto_b = angle_on_a < angle_on_b;
        let mut prev_angle = f64::INFINITY;
        let mut slow = 0u32;
        while iterations < max_iter.max(2) {
            // (4)-(5) Project the latest point on the other ellipsoid.
            if project_onto_b {
                let (q, ang, _, _) =
                    sagi_point_local(&fb, &fb.local_of(&pa), Some(ang_b), tol, inner_iter);
                ang_b = ang;
                pb = fb.world_of(&q);
            } else {
                let (q, ang, _, _) =
                    sagi_point_local(&fa, &fa.local_of(&pb), Some(ang_a), tol, inner_iter);
                ang_a = ang;
                pa = fa.world_of(&q);
            }
            project_onto_b = !project_onto_b;
            iterations += 1;
            // A surface point strictly inside the other ellipsoid proves the overlap.
            if fa.implicit(&pb) < -1e-12 || fb.implicit(&pa) < -1e-12 {
                overlap = true;
                break;
            }
            let d = pa - pb;
            // (7) Coincident points: touching or overlapping, let the completion decide.
            if d.norm() <= 1e-9 * scale {
                overlap = true;
                break;
            }
            // (6) Both angles below the tolerance.
            let ang =
                line_angle(&d, &fa.world_normal(&pa)).max(line_angle(&d, &fb.world_normal(&pb)));
            guess = d / d.norm();
            if ang < tol {
                let n = fb.world_normal(&pb);
                let n = if n.dot(&d) < 0.0 { -n } else { n };
                return SagiResult {
                    point_a: pa,
                    point_b: pb,
                    normal: n,
                    distance: d.dot(&n),
                    iterations,
                    converged: fa.valid && fb.valid,
                };
            }
            // Linear contraction factor ρ_a ρ_b / ((ρ_a + d)(ρ_b + d)) close to 1 (gap small
            // against the curvature radii): hand over to the quadratic completion.
            if ang > 0.6 * prev_angle {
                slow += 1;
                if slow >= 2 {
                    break;
                }
            }
            prev_angle = ang;
        }
    }

    // Separation-based completion: maximise ψ(u) from the best of a few deterministic starts
    // (the SAGI direction, the centre line, the principal axes) — several local optima of the
    // directional overlap exist only for overlapping pairs.
    let mut starts: Vec<Vec3> = vec![guess];
    if overlap {
        if centre.norm() > 0.0 {
            starts.push(centre / centre.norm());
        }
        for f in [&fa, &fb] {
            for k in 0..3 {
                let axis: Vec3 = f.rot.column(k).into_owned();
                starts.push(axis);
                starts.push(-axis);
            }
        }
        // A Fibonacci lattice of directions so that the deepest-overlap basins are not missed.
        const LATTICE: usize = 64;
        let golden = std::f64::consts::PI * (3.0 - 5f64.sqrt());
        for i in 0..LATTICE {
            let z = 1.0 - (2.0 * i as f64 + 1.0) / LATTICE as f64;
            let s = (1.0 - z * z).max(0.0).sqrt();
            let phi = golden * i as f64;
            starts.push(Vec3::new(s * phi.cos(), s * phi.sin(), z));
        }
    }
    let mut scored: Vec<(f64, Vec3)> = starts
        .iter()
        .map(|u| (pair_psi(&fa, &fb, u).0, *u))
        .collect();
    scored.sort_by(|x, y| y.0.total_cmp(&x.0));
    let runs = if overlap { 6 } else { 1 };
    let mut best: Option<(Vec3, f64, Vec3, Vec3, bool)> = None;
    for (_, u0) in scored.iter().take(runs) {
        let (u, psi, pa, pb, steps, ok) = pair_newton(&fa, &fb, u0, 50);
        iterations += steps;
        if best.as_ref().is_none_or(|bst| psi > bst.1 + 1e-12 * scale) {
            best = Some((u, psi, pa, pb, ok));
        }
    }
    match best {
        Some((u, psi, pa, pb, ok)) if finite_vec(&u) && psi.is_finite() => SagiResult {
            point_a: pa,
            point_b: pb,
            normal: u,
            distance: psi,
            iterations,
            converged: ok && fa.valid && fb.valid,
        },
        _ => SagiResult {
            point_a: fa.c,
            point_b: fb.c,
            normal: guess,
            distance: 0.0,
            iterations,
            converged: false,
        },
    }
}

/// Ellipsoid against the half-space behind a plane (paper 002, Appendix A3 with a plane).
///
/// The A3 projection iteration converges in one step for a plane: its fixed point is the
/// support point of the ellipsoid in the direction `−n`, `x_c − R A² Rᵀ n / √(nᵀ R A² Rᵀ n)`.
/// `distance = (A − point)·n` (negative: penetration), `point_b` is A projected on the plane,
/// the normal is the plane normal `n`.
pub fn ellipsoid_plane(e: &EllipsoidPose, point: &Vec3, normal: &Vec3) -> SagiResult {
    let f = Frame::new(e);
    let nn = normal.norm();
    let valid = f.valid && finite_vec(point) && nn.is_finite() && nn > 0.0;
    let n = if valid { normal / nn } else { Vec3::z() };
    let q = if finite_vec(point) {
        *point
    } else {
        Vec3::zeros()
    };
    let (pa, _) = f.support(&-n);
    let distance = (pa - q).dot(&n);
    SagiResult {
        point_a: pa,
        point_b: pa - n * distance,
        normal: n,
        distance,
        iterations: 1,
        converged: valid,
    }
}

/// Wall of revolution about the vertical axis through `base`: the generatrix in each meridian
/// half-plane is `ρ = R0 + k (z − z0)` (cylinder: `k = 0`). For a meridian angle θ with
/// horizontal unit `h(θ)`, the outward wall direction is `w(θ) = h(θ) − k ẑ` (not unit).
///
/// The signed distance of a point `x` inside the wall to its generatrix line is
/// `(R0 − (x − base)·w(θ_x)) / |w|`, so the gap of the whole ellipsoid is
/// `(R0 − max_θ g(θ)) / |w|` with `g(θ) = (x_c − base)·w(θ) + |Φᵀ w(θ)|`, the support function
/// of the ellipsoid in the direction `w(θ)` (max over θ and over the ellipsoid commute).
/// At the maximiser the deepest point A is the support point in direction `w`, whose normal is
/// the wall normal: the fixed point of the A3 projection iteration (A1/A2 projections).
/// The maximiser is bracketed on a 72-point grid of θ and polished by safeguarded Newton on
/// `g'(θ) = 0`; `iterations` counts 1 + the Newton steps.
fn ellipsoid_wall(e: &EllipsoidPose, base: &Vec3, r0: f64, k: f64) -> SagiResult {
    let f = Frame::new(e);
    let valid = f.valid && finite_vec(base) && r0.is_finite() && k.is_finite();
    let base = if finite_vec(base) {
        *base
    } else {
        Vec3::zeros()
    };
    let r0 = if r0.is_finite() { r0 } else { 0.0 };
    let k = if k.is_finite() { k } else { 0.0 };
    let rel = f.c - base;
    let w = |th: f64| Vec3::new(th.cos(), th.sin(), -k);
    // g(θ), g'(θ), g''(θ) with w' = (−sin θ, cos θ, 0), w'' = (−cos θ, −sin θ, 0).
    let derivs = |th: f64| {
        let (s, c) = th.sin_cos();
        let (d0, d1, d2) = (
            Vec3::new(c, s, -k),
            Vec3::new(-s, c, 0.0),
            Vec3::new(-c, -s, 0.0),
        );
        let md0 = f.m * d0;
        let sup = d0.dot(&md0).max(f64::MIN_POSITIVE).sqrt();
        let a = d1.dot(&md0);
        let g = rel.dot(&d0) + sup;
        let g1 = rel.dot(&d1) + a / sup;
        let g2 =
            rel.dot(&d2) + (d2.dot(&md0) + d1.dot(&(f.m * d1))) / sup - a * a / (sup * sup * sup);
        (g, g1, g2)
    };
    // Bracket the global maximum on a uniform grid: g is the support function of the
    // ellipsoid along w(θ), smooth with at most a few local maxima over the circle.
    const SAMPLES: usize = 72;
    let step = std::f64::consts::TAU / SAMPLES as f64;
    let mut best_i = 0;
    let mut best_g = f64::NEG_INFINITY;
    for i in 0..SAMPLES {
        let v = derivs(i as f64 * step).0;
        if v > best_g {
            best_g = v;
            best_i = i;
        }
    }
    // Safeguarded Newton on g'(θ) = 0 inside the bracket around the best sample.
    let (mut lo, mut hi) = ((best_i as f64 - 1.0) * step, (best_i as f64 + 1.0) * step);
    let mut th = best_i as f64 * step;
    let mut iterations = 1u32;
    let mut converged = false;
    for _ in 0..100 {
        iterations += 1;
        let (_, g1, g2) = derivs(th);
        if g1 > 0.0 {
            lo = th;
        } else {
            hi = th;
        }
        let mut next = if g2 < 0.0 { th - g1 / g2 } else { f64::NAN };
        if !(next > lo && next < hi) {
            next = 0.5 * (lo + hi);
        }
        let moved = (next - th).abs();
        th = next;
        if moved <= 1e-14 || hi - lo <= 1e-14 {
            converged = true;
            break;
        }
    }
    let d = w(th);
    let dn = d.norm();
    let (pa, support) = f.support(&d);
    let distance = (r0 - rel.dot(&d) - support) / dn;
    let normal = -d / dn;
    SagiResult {
        point_a: pa,
        point_b: pa - normal * distance,
        normal,
        distance,
        iterations,
        converged: converged && valid,
    }
}

/// Ellipsoid inside a vertical cylindrical wall of radius `radius` with axis `+z` through
/// `base` (paper 002, Appendix A1 and A3). B is the region outside the wall; `distance` is
/// the gap between the ellipsoid and the wall (negative when it pokes through), `normal` is
/// horizontal and points inwards, `point_b` the foot of A on the wall (eq. A1).
pub fn ellipsoid_cylinder_inner(e: &EllipsoidPose, base: &Vec3, radius: f64) -> SagiResult {
    ellipsoid_wall(e, base, radius, 0.0)
}

/// Ellipsoid inside a truncated cone with axis `+z` through `base`, radius `bottom_radius` at
/// `base.z` growing linearly to `top_radius` at `base.z + height` (paper 002, Appendix A2 and
/// A3); the surface is extended along its generatrix. `normal` is the inward surface normal,
/// `point_b` the foot of A on the generatrix (eq. A2, step 3).
pub fn ellipsoid_cone_inner(
    e: &EllipsoidPose,
    base: &Vec3,
    bottom_radius: f64,
    top_radius: f64,
    height: f64,
) -> SagiResult {
    let k = if height.is_finite() && height.abs() > 0.0 {
        (top_radius - bottom_radius) / height
    } else {
        f64::NAN
    };
    let mut res = ellipsoid_wall(e, base, bottom_radius, k);
    if !k.is_finite() {
        res.converged = false;
    }
    res
}

/// Ellipsoid as a parry support map in its principal frame: `s(d) = A² d / |A d|`,
/// `A = Diag(semi_axes)`, so parry's GJK/EPA can collide ellipsoids with polyhedra.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EllipsoidSupportMap {
    /// Semi-axes along the local x, y, z axes.
    pub semi_axes: Vec3,
}

impl parry3d_f64::shape::SupportMap for EllipsoidSupportMap {
    fn local_support_point(&self, dir: &Vec3) -> parry3d_f64::math::Point<f64> {
        let a2d = self
            .semi_axes
            .component_mul(&self.semi_axes)
            .component_mul(dir);
        let s = dir.dot(&a2d).max(0.0).sqrt();
        if s > 0.0 && s.is_finite() {
            (a2d / s).into()
        } else {
            parry3d_f64::math::Point::origin()
        }
    }
}
