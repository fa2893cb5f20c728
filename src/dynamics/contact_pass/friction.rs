//! Coulomb friction of one contact with maximum dissipation: the cone's impulse nearest
//! to the one that stops the slip, in the contact's tangential mass metric.

/// The point of the disk |x| ≤ r nearest to `target` x* in the metric of the symmetric
/// positive definite 2 × 2 matrix K: argmin (x − x*)ᵀ K (x − x*) subject to |x| ≤ r.
///
/// It is the exact update of one contact's friction row when the Coulomb cone is
/// active. With the other rows held, an accumulated tangential impulse x leaves the slip
/// u_t⁺ = u_t + K_tt (x − λ_t) = K_tt (x − x*), x* = λ_t − K_tt⁻¹ u_t being the impulse
/// that stops it. The KKT conditions of the problem, K (x − x*) + γ x = 0 with γ ≥ 0 and
/// |x| = r, say x = −u_t⁺/γ: the friction impulse is exactly opposite the slip it
/// leaves, Coulomb's law with the maximum-dissipation principle (the law of paper 003,
/// here for one contact at a time). Scaling x* onto the circle, x* r/|x*| (Catto's
/// sequential impulses), keeps x*'s direction instead; that is the same only when K_tt
/// is isotropic (sphere contacts, r ∥ n). At a contact off the line through the centre
/// of mass K_tt is not, and the friction then leans sideways: a cube sliding on a face
/// at μ = 0.2 decelerated at 0.187 g instead of 0.2 g.
///
/// In K's eigenbasis (K = Q diag(κ₁, κ₂) Qᵀ, y = Qᵀ K x*) the candidate is
/// x(γ) = (K + γ I)⁻¹ K x*, componentwise x_i = y_i/(κ_i + γ), and γ solves the secular
/// equation ψ(γ) = 1/|x(γ)| = 1/r, whose left side is concave and increasing in γ:
/// Newton's method from any γ₀ below the root climbs to it from below without
/// overshooting (Moré and Sorensen, 1983). γ₀ is the lower bound |K x*|/r − κ_max (or 0),
/// which is nearly the root when K is nearly isotropic. The result is scaled onto the
/// circle exactly.
pub fn nearest_in_disk(
    k: &nalgebra::Matrix2<f64>,
    target: &nalgebra::Vector2<f64>,
    r: f64,
) -> nalgebra::Vector2<f64> {
    TangentMetric::new(k).nearest_in_disk(target, r, 0.0).0
}

/// The eigen-decomposition K = Q diag(κ₁, κ₂) Qᵀ of a contact's symmetric positive
/// definite tangential block K_tt, Q the rotation by the angle whose cosine and sine are
/// `cos`, `sin`: computed once per contact and step, so that each friction update of
/// [`Self::nearest_in_disk`] is a scalar Newton iteration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TangentMetric {
    cos: f64,
    sin: f64,
    kappa: [f64; 2],
}

impl TangentMetric {
    /// From K's symmetric part [[a, b], [b, d]]: the rotation angle θ = ½ atan2(2b, a − d)
    /// diagonalises it, κ₁ = a cos²θ + 2b cosθ sinθ + d sin²θ, κ₂ = a + d − κ₁.
    pub fn new(k: &nalgebra::Matrix2<f64>) -> Self {
        let (a, b, d) = (k[(0, 0)], 0.5 * (k[(0, 1)] + k[(1, 0)]), k[(1, 1)]);
        if b == 0.0 {
            return TangentMetric {
                cos: 1.0,
                sin: 0.0,
                kappa: [a, d],
            };
        }
        let theta = 0.5 * (2.0 * b).atan2(a - d);
        let (sin, cos) = theta.sin_cos();
        let k1 = a * cos * cos + 2.0 * b * cos * sin + d * sin * sin;
        TangentMetric {
            cos,
            sin,
            kappa: [k1, a + d - k1],
        }
    }

    /// [`nearest_in_disk`] in this metric, and the multiplier γ of the answer (0 when the
    /// disk does not bind or K is isotropic). `gamma_hint` is where Newton's method
    /// starts if it is above the lower bound γ₀: the γ of the same contact's last
    /// update, close to the root when the sweeps converge. A start above the root is
    /// safe: ψ is concave, so the first Newton step lands at or below the root, and
    /// every step is kept at or above γ₀ (a lower bound of the root), where K + γ I is
    /// positive definite; from there the iteration climbs to the root.
    pub fn nearest_in_disk(
        &self,
        target: &nalgebra::Vector2<f64>,
        r: f64,
        gamma_hint: f64,
    ) -> (nalgebra::Vector2<f64>, f64) {
        let norm2 = target.norm_squared();
        if norm2 <= r * r {
            return (*target, 0.0);
        }
        if r <= 0.0 {
            return (nalgebra::Vector2::zeros(), 0.0);
        }
        let radial = || target * (r / norm2.sqrt());
        let [k1, k2] = self.kappa;
        // Isotropic K (to rounding): the radial scaling is the answer.
        if (k1 - k2).abs() <= 1e-12 * k1.abs().max(k2.abs()) {
            return (radial(), 0.0);
        }
        let (c, s) = (self.cos, self.sin);
        // y = Qᵀ K x* = diag(κ) Qᵀ x*.
        let y = [
            k1 * (c * target.x + s * target.y),
            k2 * (-s * target.x + c * target.y),
        ];
        let inv_r = 1.0 / r;
        let y_norm = (y[0] * y[0] + y[1] * y[1]).sqrt();
        let gamma_low = (y_norm * inv_r - k1.max(k2)).max(0.0);
        let mut gamma = gamma_low.max(gamma_hint);
        let (mut x, mut nx) = ([0.0; 2], 0.0);
        for _ in 0..50 {
            let (i1, i2) = (1.0 / (k1 + gamma), 1.0 / (k2 + gamma));
            x = [y[0] * i1, y[1] * i2];
            let (xx0, xx1) = (x[0] * x[0], x[1] * x[1]);
            let s2 = xx0 + xx1;
            nx = s2.sqrt();
            if !(nx.is_finite() && nx > 0.0) {
                return (radial(), 0.0);
            }
            if (nx - r).abs() <= 1e-12 * r {
                break;
            }
            // ψ(γ) = 1/|x(γ)| has ψ'(γ) = q/|x|³ with q = xᵀ (K + γI)⁻¹ x, so the Newton
            // step (1/r − ψ)/ψ' is |x|² (|x|/r − 1)/q: one division besides (K + γI)⁻¹.
            let q = xx0 * i1 + xx1 * i2;
            let step = s2 * (nx * inv_r - 1.0) / q;
            if !step.is_finite() {
                return (radial(), 0.0);
            }
            gamma = (gamma + step).max(gamma_low);
        }
        let scale = r / nx;
        let x =
            nalgebra::Vector2::new(scale * (c * x[0] - s * x[1]), scale * (s * x[0] + c * x[1]));
        (x, gamma)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::{Matrix2, Vector2};

    #[test]
    fn nearest_in_disk_scales_radially_for_an_isotropic_metric_and_keeps_inner_points() {
        let k = Matrix2::identity() * 3.0;
        let x = nearest_in_disk(&k, &Vector2::new(3.0, 4.0), 2.0);
        assert!((x - Vector2::new(1.2, 1.6)).norm() < 1e-15, "{x:?}");
        let inside = Vector2::new(0.3, -0.4);
        assert_eq!(nearest_in_disk(&k, &inside, 2.0), inside);
        assert_eq!(nearest_in_disk(&k, &inside, 0.0), Vector2::zeros());
    }

    /// Against the KKT conditions and a brute-force search of the circle, on metrics up
    /// to 10⁴ : 1 anisotropic (a contact far off the line of the centre of mass).
    #[test]
    fn nearest_in_disk_opposes_the_slip_it_leaves_and_is_the_minimum() {
        for (i, (a, b, d)) in [
            (1.0, 0.0, 4.0),
            (2.0, 0.9, 1.0),
            (1.0, -0.999, 1.0),
            (1e4, 3.0, 1.0),
        ]
        .into_iter()
        .enumerate()
        {
            let k = Matrix2::new(a, b, b, d);
            for target in [
                Vector2::new(5.0, 1.0),
                Vector2::new(-0.3, 2.0),
                Vector2::new(0.7, -0.7),
            ] {
                let r = 0.4 * target.norm();
                let x = nearest_in_disk(&k, &target, r);
                assert!(
                    (x.norm() - r).abs() < 1e-12 * r,
                    "case {i}: |x| = {}, r = {r}",
                    x.norm()
                );
                // The slip left, K (x − x*), is opposite x.
                let slip = k * (x - target);
                let cross = slip.x * x.y - slip.y * x.x;
                assert!(
                    cross.abs() < 1e-9 * slip.norm() * r && slip.dot(&x) < 0.0,
                    "case {i}: slip {slip:?} not opposite x {x:?}"
                );
                let cost = |y: Vector2<f64>| (y - target).dot(&(k * (y - target)));
                let best = (0..100_000)
                    .map(|j| {
                        let phi = j as f64 * std::f64::consts::TAU / 100_000.0;
                        cost(Vector2::new(r * phi.cos(), r * phi.sin()))
                    })
                    .fold(f64::INFINITY, f64::min);
                assert!(
                    cost(x) <= best * (1.0 + 1e-9),
                    "case {i}: {} > {best}",
                    cost(x)
                );
            }
        }
    }
}
