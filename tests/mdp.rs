//! Maximum-dissipation impacts (paper 003) solved by block Gauss-Seidel across pairs and
//! weighted block Jacobi within a pair (§5): the single-contact solver against a
//! brute-force minimiser, the six-mass-point body of §4.1 (several Coulomb solutions, one
//! maximally dissipative), Painlevé's rod of §4.2, momentum conservation, no energy
//! creation on the random multi-contact collision set, a pile, no spin from a symmetric
//! contact set.

mod common;

use impulse_lab::World;
use impulse_lab::dynamics::graph::ContactGraph;
use impulse_lab::dynamics::solver::SolverContext;
use impulse_lab::dynamics::solver::mdp::{
    ContactState, FrictionLaw, PlaneProblem, coulomb_solutions, solve_single_contact,
};
use impulse_lab::dynamics::solver::prepared::PreparedContact;
use impulse_lab::dynamics::warm_start::ContactImpulses;
use impulse_lab::math::{Mat3, Quat, Vec3};
use impulse_lab::scene::load_scene;
use impulse_lab::{RigidBody, Shape, SolverKind, SolverParams};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::Path;

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
    boundary_local_minima(d, b, mu)
        .into_iter()
        .min_by(|x, y| x.0.total_cmp(&y.0))
        .map_or(Vec3::zeros(), |(_, l)| l)
}

/// Every local minimum (f, λ) of f along the boundary of the conic section, by the scan of
/// [`brute_force`] (rays at 720 angles, golden-section refinement of each local minimum
/// of the scan); only those with f < 0 (below the zero impulse).
fn boundary_local_minima(d: &Mat3, b: &Vec3, mu: f64) -> Vec<(f64, Vec3)> {
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
    let mut minima = Vec::new();
    for j in 0..n {
        let mut best = (f64::INFINITY, 0.0);
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
        minima.push((best.0, ray(best.1).unwrap()));
    }
    minima
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
    assert!(
        slide > 5000 && stick > 500,
        "the set must exercise both branches"
    );
}

/// The single-contact problem of the world's only contact at the current state: the
/// Delassus block D = Qᵀ K Q and the relative velocity b = Qᵀ u in the contact frame
/// Q = [n t₁ t₂] (no gap term: the impact problem of paper 003 eq. 3).
fn contact_problem(w: &mut World) -> (Mat3, Vec3, Mat3) {
    let contacts = w.detect().to_vec();
    assert_eq!(contacts.len(), 1, "one contact expected: {contacts:?}");
    let c = PreparedContact::new(&w.bodies, &contacts[0]);
    let q = Mat3::from_columns(&[c.n, c.t1, c.t2]);
    let u = c.relative_velocity(&w.bodies);
    (q.transpose() * c.k * q, q.transpose() * u, q)
}

fn scene_world(name: &str) -> World {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenes")
        .join(format!("{name}.ron"));
    load_scene(&path)
        .unwrap_or_else(|e| panic!("{e}"))
        .build_world()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Paper 003 §4.1 on `scenes/mdp_six_point_body.ron` (a configuration found by a search
/// over masses, arms, μ, normal and incoming velocity, since the paper's numbers were lost):
/// - the impulsive Coulomb law has exactly three solutions, all sliding (the sticking
///   impulse leaves the cone). Each is checked against the law itself (on the plane of
///   maximum compression, on the cone, friction directly opposing the post-impulse slip),
///   and the count is confirmed independently of the quartic by a scan of the sign of
///   the Coulomb condition u_t⁺ × d over 200,000 cone-boundary directions;
/// - the maximally dissipative impulse matches the brute-force minimiser, is unique
///   (f is strictly convex and the conic section convex; numerically the scan's other
///   local minima of f along the boundary lie clearly above it) and dissipates more than
///   every Coulomb solution;
/// - the block solver takes the maximally dissipative impulse, or with the Coulomb law
///   the most dissipative Coulomb solution, in one world step.
#[test]
fn six_point_body_has_three_coulomb_solutions_and_one_maximally_dissipative() {
    let mut w = scene_world("mdp_six_point_body");
    let mu = w.params.friction;
    let (d, b, q) = contact_problem(&mut w);
    assert!(b.x < 0.0, "the contact collides: b = {b:?}");
    let sols = coulomb_solutions(&d, &b, mu);
    let stick = -d.try_inverse().unwrap() * b;
    assert!(
        stick.yz().norm() > mu * stick.x,
        "the sticking impulse must leave the cone"
    );
    assert_eq!(sols.len(), 3, "Coulomb solutions: {sols:?}");
    let scale = b.norm();
    for l in &sols {
        let u = d * l + b;
        // 1e-9: the roots are polished by Newton's method to rounding.
        assert!(u.x.abs() < 1e-9 * scale, "post-impulse u_n = {}", u.x);
        assert!((l.yz().norm() - mu * l.x).abs() < 1e-9 * l.norm());
        let cos = l.yz().dot(&u.yz()) / (l.yz().norm() * u.yz().norm());
        assert!(
            cos < -1.0 + 1e-9,
            "friction must oppose the slip: cos = {cos}"
        );
    }
    // Independent count: sign changes of the Coulomb condition along the cone boundary.
    let plane = PlaneProblem::new(&d, &b, mu);
    let cond = |phi: f64| {
        plane.boundary_point(phi).map(|x| {
            let u = plane.a * x + plane.p;
            let dir = x / x.norm();
            (u.x * dir.y - u.y * dir.x, u.dot(&dir))
        })
    };
    let n = 200_000;
    let mut count = 0;
    for j in 0..n {
        let (p0, p1) = (
            std::f64::consts::TAU * j as f64 / n as f64,
            std::f64::consts::TAU * (j + 1) as f64 / n as f64,
        );
        if let (Some((w0, s0)), Some((w1, _))) = (cond(p0), cond(p1))
            && w0.signum() != w1.signum()
            && s0 < 0.0
        {
            count += 1;
        }
    }
    assert_eq!(count, 3, "sign changes of the Coulomb condition");

    let mdp = solve_single_contact(&d, &b, mu);
    assert_eq!(mdp.state, ContactState::Sliding);
    let brute = brute_force(&d, &b, mu);
    assert!(
        (mdp.lambda - brute).norm() < 1e-6 * brute.norm(),
        "MDP {:?} vs brute force {brute:?}",
        mdp.lambda
    );
    let f_mdp = energy(&d, &b, &mdp.lambda);
    let f_coulomb: Vec<f64> = sols.iter().map(|l| energy(&d, &b, l)).collect();
    let minima = boundary_local_minima(&d, &b, mu);
    let mut values: Vec<f64> = minima.iter().map(|m| m.0).collect();
    values.sort_by(f64::total_cmp);
    // Unique: the best local minimum is f_mdp, any other is above it by > 1e-3 |f|.
    assert!((values[0] - f_mdp).abs() < 1e-9 * f_mdp.abs());
    assert!(
        values
            .iter()
            .skip(1)
            .all(|v| *v > f_mdp + 1e-3 * f_mdp.abs()),
        "local minima of f on the boundary: {values:?}"
    );
    for (l, f) in sols.iter().zip(&f_coulomb) {
        assert!(
            *f > f_mdp + 1e-3 * f_mdp.abs(),
            "MDP must dissipate more than every Coulomb solution"
        );
        assert!((l - mdp.lambda).norm() > 1e-3 * l.norm());
    }
    eprintln!("six-point body: D = {d}b = {b:?}, μ = {mu}");
    eprintln!(
        "  sticking impulse {stick:?} (|λ_t|/λ_n = {:.4} > μ)",
        stick.yz().norm() / stick.x
    );
    for (l, f) in sols.iter().zip(&f_coulomb) {
        eprintln!("  Coulomb solution λ = {:?}, ΔK = {f:.6} J", l.as_slice());
    }
    eprintln!(
        "  maximally dissipative λ = {:?}, ΔK = {f_mdp:.6} J; boundary local minima of ΔK {values:?}",
        mdp.lambda.as_slice()
    );

    // The block solver on the same contact (resolved directly: a world step would first
    // turn ω by the gyroscopic term of the rotation integrator, changing b).
    let best_coulomb = sols[f_coulomb
        .iter()
        .enumerate()
        .min_by(|x, y| x.1.total_cmp(y.1))
        .unwrap()
        .0];
    for (law, want) in [
        (FrictionLaw::MaximumDissipation, mdp.lambda),
        (FrictionLaw::Coulomb, best_coulomb),
    ] {
        let mut w = scene_world("mdp_six_point_body");
        w.params.mdp_friction = law;
        let contacts = w.detect().to_vec();
        let p0 = w.bodies[0].mass * w.bodies[0].velocity;
        let graph = ContactGraph::of(&w.bodies, &contacts);
        let report = SolverKind::Mdp
            .create()
            .resolve(SolverContext {
                bodies: &mut w.bodies,
                contacts: &contacts,
                graph: &graph,
                impulses: &mut vec![ContactImpulses::default(); contacts.len()],
                params: &w.params,
                dt: w.dt,
                trace: None,
            })
            .unwrap();
        let got = q.transpose() * (w.bodies[0].mass * w.bodies[0].velocity - p0);
        // 1e-6: the contact's gap is within 1e-10 m of 0; g/h shifts b_n by ~1e-7 m/s.
        assert!(
            (got - want).norm() < 1e-6 * want.norm(),
            "{law}: impulse {got:?}, expected {want:?}"
        );
        eprintln!(
            "  block solver, {law}: impulse {:?} in {} sweeps, residual {:.1e} m/s",
            got.as_slice(),
            report.iterations,
            report.residual
        );
    }
}

/// A rod of length 1 m (capsule, radius 5 mm, ρ = 1000) at angle θ to the ground, its
/// lower tip touching it, sliding along x at `speed` without rotating (b_n = 0); no
/// gravity (the impact problem at the current instant).
fn painleve_rod(theta: f64, speed: f64, mu: f64) -> World {
    let mut w = World::new(
        Vec3::zeros(),
        0.001,
        SolverKind::Mdp,
        SolverParams {
            friction: mu,
            ..Default::default()
        },
    )
    .unwrap();
    w.add_container(impulse_lab::container::Container::Plane {
        point: Vec3::zeros(),
        normal: Vec3::z(),
    });
    let (length, radius) = (1.0, 0.005);
    // R_y(90° − θ) turns the rod's axis z to (cos θ, 0, sin θ): the lower tip is at −x.
    let q = Quat::from_axis_angle(&Vec3::y_axis(), std::f64::consts::FRAC_PI_2 - theta);
    let z = 0.5 * length * theta.sin() + radius;
    let i = w.add_body(RigidBody::new(
        &Shape::Rod { length, radius },
        1000.0,
        Vec3::new(0.0, 0.0, z),
        q,
    ));
    w.bodies[i].velocity = Vec3::new(speed, 0.0, 0.0);
    w
}

/// Paper 003 §4.2, Painlevé's rod. Derivation of the paradox condition (slender rod, mass
/// m, length L, I = mL²/12, angle θ, tip at r = −(L/2)(cos θ, 0, sin θ) from the centre,
/// no rotation, contact force (F_x, N)): the tip's normal acceleration is
///   a_n = (N − mg)/m + (L/2) cos θ · α,  α = (r × F)_y / I = (L/2)(N cos θ − F_x sin θ)·12/(mL²)
///       = −g + (N/m)(1 + 3cos²θ) − (3/m) sin θ cos θ F_x.
/// Sliding tip first (towards −x), friction is F_x = +μN, so a_n = −g + (N/m)·C with
///   C = 1 + 3cos²θ − 3μ sin θ cos θ   (= m (D_nn − μ |D_nt|) in terms of eq. 2).
/// A non-impulsive contact force (a_n = 0, N ≥ 0) exists iff C > 0; the paradox (no such
/// force) holds iff μ > (1 + 3cos²θ)/(3 sin θ cos θ) = (4 + tan²θ)/(3 tan θ), whose least
/// value is μ = 4/3 at tan θ = 2. Sliding the other way (F_x = −μN) C > 0 always.
///
/// Our rod is a capsule of radius ρ: the contact is at the bottom of the tip's cap, so the
/// lever arm is r = (−(L/2) cos θ, 0, −(L/2) sin θ − ρ), and the same derivation with a
/// general transverse inertia I gives C ∝ I/m + r_x² − μ r_x r_z, i.e. the paradox iff
/// μ > (I/m + r_x²)/(r_x r_z), which is the slender-rod bound for ρ → 0 (4/3 is then
/// reached at tan θ = 2; our ρ = 5 mm moves it by < 1%).
///
/// Checked on a grid of θ and μ in both directions (skipping 0.1% around the threshold):
/// where the
/// paradox holds the maximum-dissipation impulse is the sticking one, λ = −D⁻¹b, in the
/// cone and pushing (slip-stick transition); elsewhere it is zero. The Coulomb law has
/// both 0 and the sticking impulse in the paradox case (the paper's non-uniqueness) and
/// its solver takes 0 (the contact is not colliding).
#[test]
fn painleve_rod_sticks_where_paradox_holds_and_gets_no_impulse_elsewhere() {
    let (mut sticking, mut zero, mut skipped) = (0, 0, 0);
    for deg in (5..=85).step_by(5) {
        let theta = (deg as f64).to_radians();
        let rod = painleve_rod(theta, 1.0, 1.0);
        let (rx, rz) = (0.5 * theta.cos(), 0.5 * theta.sin() + 0.005);
        let i_over_m = rod.bodies[0].inertia.x / rod.bodies[0].mass;
        let threshold = (i_over_m + rx * rx) / (rx * rz);
        let slender = (1.0 + 3.0 * theta.cos().powi(2)) / (3.0 * theta.sin() * theta.cos());
        // The capsule's bound is the slender rod's up to O(ρ/r_z).
        assert!(
            (threshold / slender - 1.0).abs() < 2.0 * 0.005 / (0.5 * theta.sin()),
            "θ = {deg}°: {threshold} vs slender {slender}"
        );
        for mu in [0.2, 0.5, 1.0, 1.3, 1.4, 1.5, 2.0, 3.0, 5.0, 10.0] {
            for speed in [-1.0, 1.0] {
                let mut w = painleve_rod(theta, speed, mu);
                let (d, b, _) = contact_problem(&mut w);
                assert!(b.x.abs() < 1e-15, "neither colliding nor separating: {b:?}");
                let paradox = speed < 0.0 && mu > threshold;
                if speed < 0.0 && (mu / threshold - 1.0).abs() < 0.001 {
                    skipped += 1;
                    continue;
                }
                // The slender-rod coefficient agrees with eq. 2's D to the capsule's size.
                let c_d = d[(0, 0)] - mu * d[(0, 1)].hypot(d[(0, 2)]);
                if speed < 0.0 {
                    assert_eq!(
                        c_d < 0.0,
                        paradox,
                        "θ = {deg}°, μ = {mu}: D_nn − μ|D_nt| = {c_d}"
                    );
                }
                let sol = solve_single_contact(&d, &b, mu);
                let coulomb = coulomb_solutions(&d, &b, mu);
                if paradox {
                    let stick = -d.try_inverse().unwrap() * b;
                    assert_eq!(sol.state, ContactState::Sticking, "θ = {deg}°, μ = {mu}");
                    assert!((sol.lambda - stick).norm() <= 1e-12 * stick.norm());
                    assert!(stick.x > 0.0 && stick.yz().norm() <= mu * stick.x);
                    assert!(
                        (d * sol.lambda + b).norm() < 1e-12 * b.norm(),
                        "sticks after"
                    );
                    assert!(coulomb.len() >= 2 && coulomb.contains(&Vec3::zeros()));
                    sticking += 1;
                } else {
                    assert_eq!(sol.state, ContactState::Separating, "θ = {deg}°, μ = {mu}");
                    assert_eq!(sol.lambda, Vec3::zeros());
                    zero += 1;
                }
                let c = impulse_lab::dynamics::solver::mdp::solve_with_law(
                    &d,
                    None,
                    &b,
                    mu,
                    FrictionLaw::Coulomb,
                );
                assert_eq!(c.lambda, Vec3::zeros());
            }
        }
    }
    // The scene: θ = atan 2, μ = 1.5 > 4/3.
    let mut w = scene_world("mdp_painleve_rod");
    w.gravity = Vec3::zeros();
    let mu = w.params.friction;
    let (d, b, _) = contact_problem(&mut w);
    let sol = solve_single_contact(&d, &b, mu);
    assert_eq!(sol.state, ContactState::Sticking);
    eprintln!(
        "Painlevé: {sticking} sticking impulses (paradox), {zero} zero impulses, {skipped} \
         within 0.1% of the threshold skipped; scene (θ = 63.43°, μ = {mu}, v = 1 m/s): \
         λ = {:?} N s (|λ_t|/λ_n = {:.4})",
        sol.lambda.as_slice(),
        sol.lambda.yz().norm() / sol.lambda.x
    );
    assert!(sticking > 20 && zero > 100);
}

fn kinetic(bodies: &[RigidBody]) -> f64 {
    bodies
        .iter()
        .map(|b| b.kinetic_energy_translational() + b.kinetic_energy_rotational())
        .sum()
}

/// A small isolated cluster (no gravity, no containers, no static bodies) of spheres,
/// cubes and tetrahedra thrown together, with both friction laws and the default error
/// reduction: every impulse acts as ±p on two bodies at one point, so linear momentum is
/// kept through 150 world steps and angular momentum about the origin through each
/// resolve, to 1e-10 relative (of Σ m|v| and Σ |x||m v| + |I ω|: the sums of ~10⁴
/// impulse increments each exact to ~1e-16). The world steps with the θ-method rotation
/// (θ = ½, paper 004); the drift of L over whole steps is printed.
#[test]
fn isolated_cluster_conserves_momentum() {
    use impulse_lab::body::{total_angular_momentum, total_linear_momentum};
    for law in [FrictionLaw::MaximumDissipation, FrictionLaw::Coulomb] {
        let params = SolverParams {
            friction: 0.4,
            mdp_friction: law,
            ..Default::default()
        };
        let mut w =
            World::new(Vec3::zeros(), 1.0 / 600.0, SolverKind::Mdp, params.clone()).unwrap();
        w.rotation = impulse_lab::dynamics::rotation::RotationIntegrator::Theta { theta: 0.5 };
        common::add_isolated_cluster(&mut w);
        let p0 = total_linear_momentum(&w.bodies);
        let l_start = total_angular_momentum(&w.bodies);
        let scale: f64 = w.bodies.iter().map(|b| b.mass * b.velocity.norm()).sum();
        let mut solver = SolverKind::Mdp.create();
        let (mut impulses, mut sweeps, mut worst_l, mut worst_p) = (0u64, 0u64, 0.0f64, 0.0f64);
        let mut worst_l_steps = 0.0f64;
        for step in 0..150 {
            let contacts = w.detect().to_vec();
            let l0 = total_angular_momentum(&w.bodies);
            let l_scale: f64 = w
                .bodies
                .iter()
                .map(|b| {
                    b.position.norm() * b.mass * b.velocity.norm()
                        + (b.inertia_world() * b.angular_velocity).norm()
                })
                .sum();
            let mut bodies = w.bodies.clone();
            let graph = ContactGraph::of(&bodies, &contacts);
            solver
                .resolve(SolverContext {
                    bodies: &mut bodies,
                    contacts: &contacts,
                    graph: &graph,
                    impulses: &mut vec![ContactImpulses::default(); contacts.len()],
                    params: &params,
                    dt: w.dt,
                    trace: None,
                })
                .unwrap_or_else(|e| panic!("{law}: step {step}: {e}"));
            let dl = (total_angular_momentum(&bodies) - l0).norm() / l_scale;
            worst_l = worst_l.max(dl);
            assert!(dl < 1e-10, "{law}: step {step}: ΔL = {dl:.3e} (relative)");
            w.step()
                .unwrap_or_else(|e| panic!("{law}: step {step}: {e}"));
            impulses += u64::from(w.last_report.impulses);
            sweeps += u64::from(w.last_report.iterations);
            let dp = (total_linear_momentum(&w.bodies) - p0).norm() / scale;
            worst_p = worst_p.max(dp);
            assert!(dp < 1e-10, "{law}: step {step}: ΔP = {dp:.3e} (relative)");
            // Reported, not asserted: the rotation integrator's orientation update uses
            // the pre- and post-impulse ω (ω_θ), so an impulse mid-step changes the
            // world-frame L by O(h Δω); the solver's own impulses keep L (above).
            let dl_steps = (total_angular_momentum(&w.bodies) - l_start).norm() / l_scale;
            worst_l_steps = worst_l_steps.max(dl_steps);
        }
        eprintln!(
            "{law}: {impulses} impulse increments, {sweeps} sweeps over 150 steps; worst relative ΔP {worst_p:.2e}, worst relative ΔL per resolve {worst_l:.2e}, ΔL over whole steps (θ = ½, not asserted) {worst_l_steps:.2e}"
        );
        assert!(impulses > 0, "{law}: the cluster must collide");
    }
}

/// The random multi-contact collision set of the impulse solvers (`tests/common`, shared
/// with `tests/sqm_smm.rs`): 10,000 collisions of 2-3 cubes, spheres and tetrahedra,
/// μ ∈ {0} ∪ [0, 1] (e is ignored: MDP is purely inelastic), error reduction ε = 0 (the
/// error-reduction term is a position correction that deliberately gives overlapping
/// contacts a separating velocity ε|g|/h, i.e. adds energy; it is kept separate). Both
/// friction laws: the kinetic energy never rises (1e-12 relative: rounding of a few
/// sweeps), and the report books exactly the kinetic-energy change.
#[test]
fn random_collision_set_never_gains_energy() {
    let mut rng = ChaCha8Rng::seed_from_u64(2014);
    let mut collisions = 0;
    let mut skipped = 0;
    let mut stats = Vec::new();
    for law in [FrictionLaw::MaximumDissipation, FrictionLaw::Coulomb] {
        stats.push((law, 0usize, 0.0f64, 0u64, 0usize, 0.0f64));
    }
    while collisions < 10_000 {
        let Some(common::RandomCollision {
            world: w,
            mut params,
            contacts,
            ..
        }) = common::random_collision(&mut rng, 1.0 / 600.0)
        else {
            skipped += 1;
            continue;
        };
        collisions += 1;
        params.error_reduction = 0.0;
        let ke0 = kinetic(&w.bodies);
        for s in stats.iter_mut() {
            params.mdp_friction = s.0;
            let mut bodies = w.bodies.clone();
            let graph = ContactGraph::of(&bodies, &contacts);
            let report = SolverKind::Mdp
                .create()
                .resolve(SolverContext {
                    bodies: &mut bodies,
                    contacts: &contacts,
                    graph: &graph,
                    impulses: &mut vec![ContactImpulses::default(); contacts.len()],
                    params: &params,
                    dt: w.dt,
                    trace: None,
                })
                .unwrap_or_else(|e| panic!("collision {collisions}: {}: {e}", s.0));
            let ke1 = kinetic(&bodies);
            let gain = (ke1 - ke0) / ke0;
            assert!(
                gain <= 1e-12,
                "collision {collisions}: {}: kinetic energy rose by {gain:.3e} (μ = {}, {} contacts, {} sweeps, cap {})",
                s.0,
                params.friction,
                contacts.len(),
                report.iterations,
                report.hit_iteration_cap
            );
            let booked = report.dissipated_restitution + report.dissipated_friction;
            assert!(
                ((ke0 - ke1) - booked).abs() <= 1e-9 * ke0,
                "collision {collisions}: {}: KE change {} but report books {booked}",
                s.0,
                ke0 - ke1
            );
            s.1 += usize::from(report.hit_iteration_cap);
            s.2 = s.2.max(gain);
            s.3 += u64::from(report.iterations);
            s.4 = s.4.max(report.iterations as usize);
            s.5 = s.5.max((ke0 - ke1) / ke0);
        }
    }
    eprintln!("random collision set: {collisions} collisions ({skipped} draws skipped)");
    for (law, capped, worst, sweeps, max_sweeps, most_dissipated) in &stats {
        eprintln!(
            "  {law}: worst relative KE gain {worst:.3e}, mean sweeps {:.2}, max {max_sweeps}, {capped} hit the cap, largest relative loss {most_dissipated:.3}",
            *sweeps as f64 / collisions as f64
        );
    }
}

/// The collision trace ("collision microscope"): one row per contact and Gauss-Seidel
/// sweep, its stage saying which branch of the single-contact problem was taken. A cube
/// lands tilted on the ground (4 corner contacts, μ = 0.5): the first sweep's rows are
/// numbered 0, later sweeps count up, every stage is one of the three branches, and the
/// row impulses add up to the cube's momentum change.
#[test]
fn trace_records_sweeps_and_the_branch_per_contact() {
    let params = SolverParams {
        friction: 0.5,
        error_reduction: 0.0,
        ..Default::default()
    };
    let mut w = World::new(Vec3::zeros(), 1.0 / 600.0, SolverKind::Mdp, params.clone()).unwrap();
    w.add_container(impulse_lab::container::Container::Plane {
        point: Vec3::zeros(),
        normal: Vec3::z(),
    });
    // Tilted by a few mrad: all four bottom corners within the contact margin.
    let q = Quat::from_euler_angles(0.002, -0.003, 0.4);
    let i = w.add_body(RigidBody::new(
        &Shape::Cuboid {
            half_extents: Vec3::repeat(0.5),
        },
        1000.0,
        Vec3::new(0.0, 0.0, 0.5),
        q,
    ));
    // Lower it until its lowest corner just touches (gap ≤ 0).
    let lowest = w
        .detect()
        .iter()
        .map(|c| c.gap)
        .fold(f64::INFINITY, f64::min);
    w.bodies[i].position.z -= lowest + 1e-6;
    w.bodies[i].velocity = Vec3::new(1.5, 0.3, -2.0);
    w.bodies[i].angular_velocity = Vec3::new(0.5, -1.0, 2.0);
    let contacts = w.detect().to_vec();
    assert_eq!(contacts.len(), 4, "{contacts:?}");
    let p0 = w.bodies[i].mass * w.bodies[i].velocity;
    let mut trace = Vec::new();
    let graph = ContactGraph::of(&w.bodies, &contacts);
    let report = SolverKind::Mdp
        .create()
        .resolve(SolverContext {
            bodies: &mut w.bodies,
            contacts: &contacts,
            graph: &graph,
            impulses: &mut vec![ContactImpulses::default(); contacts.len()],
            params: &params,
            dt: w.dt,
            trace: Some(&mut trace),
        })
        .unwrap();
    assert!(report.iterations >= 2, "{report:?}");
    assert_eq!(trace.len(), 4 * report.iterations as usize);
    let mut stages = std::collections::BTreeMap::new();
    for (k, row) in trace.iter().enumerate() {
        assert_eq!(row.iteration as usize, k / 4, "sweep number of row {k}");
        assert_eq!(row.contact, k % 4);
        assert!(["sticking", "sliding", "separating"].contains(&row.stage));
        *stages.entry(row.stage).or_insert(0) += 1;
    }
    let sum: Vec3 = trace.iter().map(|r| Vec3::from(r.impulse)).sum();
    let dp = w.bodies[i].mass * w.bodies[i].velocity - p0;
    assert!((sum - dp).norm() < 1e-12 * dp.norm(), "{sum:?} vs {dp:?}");
    eprintln!(
        "trace: {} sweeps, residual {:.2e} m/s, stages {stages:?}",
        report.iterations, report.residual
    );
}

/// `pile_spheres_1080` with MDP for its first 1.5 s (900 steps: the lattice falls and the
/// pile forms; the full 5 s run is `impulse-lab run pile_spheres_1080 --solver
/// mdp`, kept out of the test suite for time): every step succeeds, the state stays
/// finite, no sphere leaves the box (centres within the inner walls less the radius, up
/// to the 1 mm the error reduction may leave), and the ledger's residual stays at
/// rounding (MDP books every impulse's work, the error-reduction push included).
#[test]
fn pile_spheres_1080_runs_with_mdp() {
    let mut w = scene_world("pile_spheres_1080");
    w.set_solver(SolverKind::Mdp);
    w.start_ledger();
    let (hx, hy, r) = (7.0, 5.5, 0.5);
    let (mut sweeps, mut capped, mut sample) = (0u64, 0u32, None);
    for step in 1..=900 {
        let s = w.step().unwrap_or_else(|e| panic!("step {step}: {e}"));
        sweeps += u64::from(w.last_report.iterations);
        capped += u32::from(w.last_report.hit_iteration_cap);
        for (i, b) in w.bodies.iter().enumerate() {
            let p = b.position;
            assert!(
                p.iter().chain(b.velocity.iter()).all(|x| x.is_finite()),
                "step {step}: body {i} non-finite"
            );
            assert!(
                p.x.abs() <= hx - r + 1e-3 && p.y.abs() <= hy - r + 1e-3 && p.z >= r - 1e-3,
                "step {step}: body {i} escaped to {p:?}"
            );
        }
        sample = Some(s);
    }
    let s = sample.unwrap();
    eprintln!(
        "pile_spheres_1080, MDP, 900 steps: {} contacts now, mean sweeps {:.2}, {capped} steps hit the cap ({} sweeps), KE {:.1} J, residual {:.2e} J of total {:.3e} J",
        s.contacts,
        sweeps as f64 / 900.0,
        w.params.max_iterations,
        s.kinetic,
        s.residual,
        s.total
    );
    assert!(s.contacts > 500, "the lower layers must have landed");
    assert!(
        s.residual.abs() < 1e-6 * s.total,
        "ledger residual {}",
        s.residual
    );
}

/// A 0.2 m cube (1,000 kg/m³) thrown face down at 2 m/s straight down a 20° slope,
/// MDP at its defaults with μ = 0.6 and μ = 0.4, h = 1/600 s, sleeping off: its four
/// corner contacts are coplanar and the whole scene is mirror-symmetric about the plane
/// spanned by the slope normal n and the downhill direction. The mirror maps a spin ω·n
/// about the normal to −ω·n, and a solution of eq. 5 at every corner that keeps the
/// symmetry has none; the per-pair weighted Jacobi sweep keeps it (the four corners are
/// solved from the same velocities). Only rounding breaks it: each applied impulse rounds
/// the corner velocities (~2 m/s) by ~1e-16 relative, ~4e-15 rad/s over the 0.1 m lever
/// arm, and the run applies ~3,500-4,000 of them: ~1e-11 rad/s if every rounding error
/// added up (measured between 0 and 3e-11 at μ = 0.6 and 0.4, depending on how the
/// single-contact solver rounds). 1e-9 rad/s leaves a margin of 30 over the largest and is
/// eight orders below the 0.13-0.21 rad/s that Gauss-Seidel over the four
/// corners in contact order produces. The cube must still be sliding at 0.7 s (it stops at
/// 0.92 s at μ = 0.6), so every step counts.
#[test]
fn thrown_block_on_slope_gets_no_spin_about_the_normal() {
    let (n, down) = impulse_lab::verify::slope_frame();
    for mu in [0.6, 0.4] {
        // `impulse-lab verify`'s block, thrown down the slope at 2 m/s.
        let mut w = impulse_lab::verify::block_on_slope(SolverKind::Mdp, mu, 2.0).unwrap();
        w.start_ledger();
        let k0 = w.bodies[0].kinetic_energy_translational();
        let (mut spin, mut impulses, mut sweeps): (f64, u64, u64) = (0.0, 0, 0);
        for step in 1..=420 {
            let s = w
                .step()
                .unwrap_or_else(|e| panic!("μ = {mu}: step {step}: {e}"));
            // The ledger balances: every impulse of a pair, applied one after another, is
            // booked with its exact ΔK (~1e-16 of K each, a few thousand of them).
            assert!(
                s.residual.abs() < 1e-10 * k0,
                "μ = {mu}: step {step}: ledger residual {} J",
                s.residual
            );
            spin = spin.max(w.bodies[0].angular_velocity.dot(&n).abs());
            impulses += u64::from(w.last_report.impulses);
            sweeps += u64::from(w.last_report.iterations);
        }
        let v = w.bodies[0].velocity.dot(&down);
        eprintln!(
            "μ = {mu}: largest |ω·n| over 0.7 s {spin:.3e} rad/s, downhill speed {v:.4} m/s, {impulses} impulses in {sweeps} sweeps"
        );
        assert!(
            v > 0.1 && v < 2.0,
            "μ = {mu}: the cube must still slide, v = {v}"
        );
        assert!(spin < 1e-9, "μ = {mu}: |ω·n| reached {spin:.3e} rad/s");
    }
}

/// The scene format's MDP parameters and the mass-point shape: defaults, and field-named
/// errors for bad values (no panic, no silently wrong number).
#[test]
fn scene_parameters_and_mass_points_are_validated() {
    use impulse_lab::scene::parse_scene;
    let scene = |params: &str, shape: &str| {
        format!(
            "Scene(name: \"t\", solver: \"mdp\", params: ({params}), bodies: [Body(shape: {shape})])"
        )
    };
    let ok = parse_scene(
        &scene(
            "mdp_friction: Coulomb, error_reduction: 0.5",
            "MassPoints(points: [(1, 0, 0), (0, 1, 0), (0, 0, 1)], masses: [1, 2, 3], radius: 0.01)",
        ),
        "t.ron",
    )
    .unwrap();
    assert_eq!(ok.params.mdp_friction, FrictionLaw::Coulomb);
    assert_eq!(ok.params.error_reduction, 0.5);
    let w = ok.build_world().unwrap();
    assert_eq!(w.solver_kind(), SolverKind::Mdp);
    // Point masses: m = 6 kg whatever the density; the centre of mass (1, 2, 3)/6.
    assert!((w.bodies[0].mass - 6.0).abs() < 1e-12);
    assert!((w.bodies[0].position - Vec3::new(1.0, 2.0, 3.0) / 6.0).norm() < 1e-12);
    assert_eq!(
        SolverParams::default().mdp_friction,
        FrictionLaw::MaximumDissipation
    );
    assert_eq!(SolverParams::default().error_reduction, 0.2);
    for (params, shape, field) in [
        (
            "error_reduction: 1.5",
            "Sphere(radius: 1)",
            "error_reduction",
        ),
        (
            "error_reduction: -0.1",
            "Sphere(radius: 1)",
            "error_reduction",
        ),
        (
            "mdp_friction: Stiction",
            "Sphere(radius: 1)",
            "mdp_friction",
        ),
        (
            "",
            "MassPoints(points: [(1, 0, 0), (-1, 0, 0)], masses: [1, 1], radius: 0.01)",
            "points",
        ),
        (
            "",
            "MassPoints(points: [(1, 0, 0), (0, 1, 0)], masses: [1], radius: 0.01)",
            "masses",
        ),
        (
            "",
            "MassPoints(points: [(1, 0, 0), (0, 1, 0), (0, 0, 1)], masses: [1, -2, 1], radius: 0.01)",
            "masses[1]",
        ),
        (
            "",
            "MassPoints(points: [(1, 0, 0), (0, 1, 0), (0, 0, 1)], masses: [1, 1, 1], radius: 0)",
            "radius",
        ),
    ] {
        let err = parse_scene(&scene(params, shape), "t.ron")
            .err()
            .unwrap_or_else(|| panic!("{params} {shape} must be refused"))
            .to_string();
        assert!(err.contains(field), "{params} {shape}: {err}");
    }
}

/// A non-finite state is a `SolverError`, not a panic or a NaN impulse.
#[test]
fn non_finite_velocity_is_an_error() {
    let mut w = painleve_rod(1.0, -1.0, 1.5);
    let contacts = w.detect().to_vec();
    w.bodies[0].velocity.x = f64::NAN;
    let params = w.params.clone();
    let graph = ContactGraph::of(&w.bodies, &contacts);
    let r = SolverKind::Mdp.create().resolve(SolverContext {
        bodies: &mut w.bodies,
        contacts: &contacts,
        graph: &graph,
        impulses: &mut vec![ContactImpulses::default(); contacts.len()],
        params: &params,
        dt: w.dt,
        trace: None,
    });
    assert!(
        matches!(
            r,
            Err(impulse_lab::dynamics::solver::SolverError::Diverged { .. })
        ),
        "{r:?}"
    );
}
