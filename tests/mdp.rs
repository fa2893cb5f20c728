//! Maximum-dissipation impacts (paper 003) solved by block Gauss-Seidel: the single-contact
//! solver against a brute-force minimiser, the six-mass-point body of §4.1 (several
//! Coulomb solutions, one maximally dissipative), Painlevé's rod of §4.2, momentum
//! conservation, no energy creation on the random multi-contact collision set, a pile.

mod common;

use impulse_lab::dynamics::solver::mdp::{
    ContactState, FrictionLaw, PlaneProblem, coulomb_solutions, solve_single_contact,
};
use impulse_lab::math::{Mat3, Vec3};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// f(λ) = ½ λᵀ D λ + λᵀ b: the post-impulse kinetic energy less the pre-impulse one.
fn energy(d: &Mat3, b: &Vec3, l: &Vec3) -> f64 {
    0.5 * l.dot(&(d * l)) + l.dot(b)
}

/// Brute-force minimiser of f over the conic section, written from the constraints
/// alone (no critical-point equation, no quartic): the sticking impulse −D⁻¹b if it is
/// feasible; otherwise a scan of the boundary of the feasible set of tangential impulses
/// x = λ_t (convex, containing x = 0 when b_n < 0) by rays from x = 0 at 720 angles, the
/// exit distance of each ray from the plane and cone inequalities, and a golden-section
/// refinement around every local minimum of the scan. For b_n = 0 the feasible set is a cone with apex
/// 0 and the scan minimises f along each ray in closed form.
fn brute_force(d: &Mat3, b: &Vec3, mu: f64) -> Vec3 {
    if b.x > 0.0 {
        return Vec3::zeros();
    }
    let stick = -d.try_inverse().unwrap() * b;
    if stick.x >= 0.0 && stick.yz().norm() <= mu * stick.x {
        return stick;
    }
    // On the plane (D λ + b)_n = 0: λ_n = (−b_n − D_n,t · x) / D_nn.
    let lift = |x: (f64, f64)| {
        let ln = (-b.x - d[(0, 1)] * x.0 - d[(0, 2)] * x.1) / d[(0, 0)];
        Vec3::new(ln, x.0, x.1)
    };
    // A point s·e of the ray is feasible iff ‖s e‖ ≤ μ λ_n(s e), linear in s.
    let ray = |psi: f64| -> Option<Vec3> {
        let e = (psi.cos(), psi.sin());
        let slope = mu * (d[(0, 1)] * e.0 + d[(0, 2)] * e.1) / d[(0, 0)] + 1.0;
        let rhs = mu * (-b.x) / d[(0, 0)];
        if b.x == 0.0 {
            if slope > 0.0 {
                return None; // only s = 0 is feasible along e
            }
            // Whole ray feasible: minimise f(s e) over s ≥ 0 in closed form.
            let (l0, l1) = (lift((0.0, 0.0)), lift(e) - lift((0.0, 0.0)));
            let s = (-(l1.dot(&(d * l0)) + l1.dot(b)) / l1.dot(&(d * l1))).max(0.0);
            return Some(l0 + s * l1);
        }
        if slope <= 0.0 {
            return None; // unbounded ray: f → ∞ along it, not the minimiser
        }
        let s = rhs / slope;
        Some(lift((s * e.0, s * e.1)))
    };
    let f = |psi: f64| ray(psi).map_or(f64::INFINITY, |l| energy(d, b, &l));
    let n = 720;
    let step = std::f64::consts::TAU / n as f64;
    let samples: Vec<f64> = (0..n).map(|j| f(j as f64 * step)).collect();
    // Refine every local minimum of the scan (f along the boundary can have two, and a
    // wedge's edge lies between samples), keep the best.
    let g = 0.5 * (5f64.sqrt() - 1.0);
    let mut best = (f64::INFINITY, 0.0);
    for j in 0..n {
        let (prev, next) = (samples[(j + n - 1) % n], samples[(j + 1) % n]);
        if !(samples[j] < 0.0 && samples[j] <= prev && samples[j] <= next) {
            continue;
        }
        let centre = j as f64 * step;
        let (mut lo, mut hi) = (centre - step, centre + step);
        // Keep the best point evaluated: at a wedge's edge the bracket closes on the
        // boundary of the feasible directions, where f jumps to ∞.
        let mut consider = |psi: f64| {
            let v = f(psi);
            if v < best.0 {
                best = (v, psi);
            }
            v
        };
        consider(centre);
        for _ in 0..80 {
            let (m1, m2) = (hi - g * (hi - lo), lo + g * (hi - lo));
            if consider(m1) < consider(m2) {
                hi = m2;
            } else {
                lo = m1;
            }
        }
    }
    if best.0 == f64::INFINITY {
        return Vec3::zeros();
    }
    let psi = best.1;
    let cand = ray(psi).unwrap();
    if energy(d, b, &cand) < 0.0 { cand } else { Vec3::zeros() }
}

fn random_spd(rng: &mut ChaCha8Rng) -> Mat3 {
    let l = Mat3::from_fn(|_, _| rng.random_range(-1.0..1.0));
    let scale = 10f64.powf(rng.random_range(-2.0..2.0));
    scale * (l * l.transpose() + Mat3::identity() * rng.random_range(0.01..1.0))
}

/// 10,000 random SPD D (eigenvalue ratios up to ~10³) and b, μ ∈ {0} ∪ [0, 2]; b_n < 0
/// mostly, sometimes b_n = 0 (degenerate conic) or b_n > 0. The solver's impulse must be
/// feasible (cone, plane) and reach the brute-force minimum of f: its energy may exceed
/// the brute force's by rounding only (1e-9 relative: the golden section ends at
/// Δψ ≈ 1e-17 rad), and the impulses must agree to 1e-5 relative (the minimiser is unique
/// and f is strictly convex, so equal energies mean equal impulses; the brute force's
/// angle is exact to ~1e-8, the impulse error is that times the conic's curvature).
#[test]
fn single_contact_matches_brute_force_on_10000_random_problems() {
    let mut rng = ChaCha8Rng::seed_from_u64(3003);
    let (mut stick, mut slide, mut zero, mut degenerate) = (0, 0, 0, 0);
    let mut worst_df: f64 = 0.0;
    let mut worst_dl: f64 = 0.0;
    for case in 0..10_000 {
        let d = random_spd(&mut rng);
        let mut b = Vec3::new(
            rng.random_range(-1.0..0.0),
            rng.random_range(-1.0..1.0),
            rng.random_range(-1.0..1.0),
        ) * 10f64.powf(rng.random_range(-2.0..2.0));
        match rng.random_range(0..20) {
            0 => b.x = -b.x,
            1 | 2 => {
                b.x = 0.0;
                degenerate += 1;
            }
            _ => {}
        }
        let mu = if rng.random_bool(0.1) {
            0.0
        } else {
            rng.random_range(0.0..2.0)
        };
        let sol = solve_single_contact(&d, &b, mu);
        let l = sol.lambda;
        let brute = brute_force(&d, &b, mu);
        let scale = brute.norm().max(l.norm()).max(1e-300);
        // Feasible: in the cone, and on the plane of maximum compression if colliding.
        assert!(
            l.x >= 0.0 && l.yz().norm() <= mu * l.x * (1.0 + 1e-9) + 1e-12 * scale,
            "case {case}: {l:?} outside the cone (μ = {mu})"
        );
        if b.x < 0.0 {
            let un = (d * l + b).x;
            assert!(
                un.abs() <= 1e-9 * (b.norm() + (d * l).norm()),
                "case {case}: post-impulse u_n = {un}"
            );
        }
        let (fs, fb) = (energy(&d, &b, &l), energy(&d, &b, &brute));
        let f_scale = (d * brute).norm() * brute.norm() + b.norm() * brute.norm() + 1e-300;
        let df = (fs - fb) / f_scale;
        worst_df = worst_df.max(df);
        assert!(
            df <= 1e-9,
            "case {case}: solver energy {fs} above brute force {fb} (D = {d}, b = {b:?}, μ = {mu}, state {:?})",
            sol.state
        );
        let dl = (l - brute).norm() / scale;
        worst_dl = worst_dl.max(dl);
        assert!(
            dl <= 1e-5,
            "case {case}: λ = {l:?} vs brute force {brute:?} (D = {d}, b = {b:?}, μ = {mu}) f {fs:e} vs {fb:e}"
        );
        match sol.state {
            ContactState::Sticking => stick += 1,
            ContactState::Sliding => slide += 1,
            ContactState::Separating => zero += 1,
        }
    }
    eprintln!(
        "10000 single contacts: {stick} sticking, {slide} on the cone boundary, {zero} zero \
         ({degenerate} with b_n = 0); worst energy excess {worst_df:.2e}, worst |Δλ|/|λ| {worst_dl:.2e}"
    );
    assert!(slide > 5000 && stick > 500, "the set must exercise both branches");
}

