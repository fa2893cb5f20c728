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
/// x(γ) = (K + γ I)⁻¹ K x*, and γ solves the secular equation 1/|x(γ)| = 1/r, whose
/// left side is concave and increasing in γ: Newton's method from any γ₀ below the
/// root climbs to it from below without overshooting (Moré and Sorensen, 1983). γ₀ is
/// the lower bound |K x*|/r − κ_max (or 0), which is nearly the root when K is nearly
/// isotropic. The result is scaled onto the circle exactly.
pub fn nearest_in_disk(
    k: &nalgebra::Matrix2<f64>,
    target: &nalgebra::Vector2<f64>,
    r: f64,
) -> nalgebra::Vector2<f64> {
    let norm = target.norm();
    if norm <= r {
        return *target;
    }
    if r <= 0.0 {
        return nalgebra::Vector2::zeros();
    }
    let radial = target * (r / norm);
    // Isotropic K (to rounding): the radial scaling is the answer.
    let kx = k * target;
    let along = kx.dot(target) / (norm * norm);
    if (kx - along * target).norm() <= 1e-12 * kx.norm() {
        return radial;
    }
    // Start from a lower bound of the root: |x(γ)| ≥ |K x*| / (κ_max + γ), κ_max the
    // larger eigenvalue of K, so |x(γ₀)| ≥ r at γ₀ = |K x*|/r − κ_max (when positive)
    // and Newton still climbs from below; for a nearly isotropic K, γ₀ is nearly the
    // root.
    let (a, b, d) = (k[(0, 0)], 0.5 * (k[(0, 1)] + k[(1, 0)]), k[(1, 1)]);
    let kappa_max = 0.5 * (a + d) + (0.25 * (a - d) * (a - d) + b * b).sqrt();
    let mut gamma = (kx.norm() / r - kappa_max).max(0.0);
    let mut x = *target;
    for _ in 0..50 {
        let shifted = k + nalgebra::Matrix2::identity() * gamma;
        let Some(inv) = shifted.try_inverse() else {
            return radial;
        };
        x = inv * kx;
        let nx = x.norm();
        if !(nx.is_finite() && nx > 0.0) {
            return radial;
        }
        if (nx - r).abs() <= 1e-12 * r {
            break;
        }
        // ψ(γ) = 1/|x(γ)|, ψ'(γ) = xᵀ (K + γI)⁻¹ x / |x|³.
        let slope = x.dot(&(inv * x)) / (nx * nx * nx);
        if !(slope.is_finite() && slope > 0.0) {
            return radial;
        }
        gamma += (1.0 / r - 1.0 / nx) / slope;
    }
    x * (r / x.norm())
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
