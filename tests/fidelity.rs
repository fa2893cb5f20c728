//! The fidelity matrix (`impulse_lab::verify`, `impulse-lab verify`) as tests: each
//! collision method against conservation laws and textbook solutions, at its defaults
//! (h = 1/600 s, θ-method rotation, sleeping off). The scenes and the measurements are
//! the library's, so the command and the tests cannot drift apart.

use impulse_lab::SolverKind;
use impulse_lab::dynamics::rotation::RotationIntegrator;
use impulse_lab::verify::{self, Tolerance};

/// Every impulse is ±P at one point of two bodies and the drift keeps each body's
/// angular momentum about its centre (free flight) plus the solver's r × P, so Σ m v and
/// Σ (x × m v + I ω) are constant up to rounding: ~10³ impulse increments and 600 drifts,
/// each exact to a few ulp of the momenta (1e-16 relative), stay below 1e-12; 1e-10 is
/// the bound.
#[test]
fn isolated_mixed_cluster_keeps_linear_and_angular_momentum() {
    for kind in SolverKind::ALL {
        let (dp, dl, impulses) =
            verify::momentum_drift(kind, RotationIntegrator::default(), verify::Cluster::Mixed)
                .unwrap();
        eprintln!("{kind}: {impulses} impulses, |ΔP|/Σm|v| {dp:.2e}, |ΔL|/|L₀| {dl:.2e}");
        assert!(impulses > 0, "{kind}: the cluster must collide");
        assert!(dp < 1e-10, "{kind}: linear momentum drift {dp:e}");
        assert!(dl < 1e-10, "{kind}: angular momentum drift {dl:e}");
    }
}

/// The same cluster with regular tetrahedra in place of the crosses (vertex and edge
/// contacts of polyhedra beside the ellipsoids' curved ones, both of non-isotropic
/// inertia), at the defaults, where the position projection is on (k_p = 0.2): the
/// projection moves and turns each overlapping body keeping the cluster's momenta
/// (`RigidBody::displace`), so the same bound holds. Under ETM, SMM and jolt it acts in
/// this run (overlaps of 0.25-0.45 mm; docs/results/fidelity.md).
#[test]
fn cluster_with_tetrahedra_keeps_its_momenta_under_projection() {
    for kind in SolverKind::ALL {
        let (dp, dl, impulses) = verify::momentum_drift(
            kind,
            RotationIntegrator::default(),
            verify::Cluster::Tetrahedra,
        )
        .unwrap();
        eprintln!("{kind}: {impulses} impulses, |ΔP|/Σm|v| {dp:.2e}, |ΔL|/|L₀| {dl:.2e}");
        assert!(impulses > 0, "{kind}: the cluster must collide");
        assert!(dp < 1e-10, "{kind}: linear momentum drift {dp:e}");
        assert!(dl < 1e-10, "{kind}: angular momentum drift {dl:e}");
    }
}

/// Symplectic Euler integrates the torque-free motion of a body of isotropic inertia
/// exactly (ω stays constant, L = I ω), so with spheres, cubes and crosses only the
/// cluster keeps L to rounding as with the θ-method. ETM and SMM leave overlaps of
/// ~1e-5 m in this run, which the position projection removes; it keeps each moved
/// body's angular momentum (`RigidBody::displace`), so the bound holds for them too.
#[test]
fn isolated_isotropic_cluster_keeps_angular_momentum_under_symplectic_euler() {
    for kind in SolverKind::ALL {
        let (dp, dl, impulses) = verify::momentum_drift(
            kind,
            RotationIntegrator::SymplecticEuler,
            verify::Cluster::Isotropic,
        )
        .unwrap();
        eprintln!("{kind}: {impulses} impulses, |ΔP|/Σm|v| {dp:.2e}, |ΔL|/|L₀| {dl:.2e}");
        assert!(impulses > 0, "{kind}: the cluster must collide");
        assert!(dp < 1e-10, "{kind}: linear momentum drift {dp:e}");
        assert!(dl < 1e-10, "{kind}: angular momentum drift {dl:e}");
    }
}

/// Position projection keeps the momenta: two spheres overlapping by 1 mm and sliding
/// past each other at 1 m/s are pushed apart in one step, by jolt's own projection
/// (paper 001) and by the world's after the contact pass (ETM). Moving them apart with
/// their velocities held would change the orbital angular momentum by
/// k_p δ m_red n × v_rel, about 3e-4 of L₀ here; the projection hands that change to
/// the spins, so L stays to rounding (a few ulp of L₀ per operation: 1e-13).
#[test]
fn position_projection_keeps_angular_momentum() {
    use impulse_lab::body::{RigidBody, total_angular_momentum, total_linear_momentum};
    use impulse_lab::math::{Quat, Vec3};
    use impulse_lab::shapes::Shape;
    use impulse_lab::{SolverParams, World};
    for kind in [SolverKind::Jolt, SolverKind::Etm, SolverKind::Sqm] {
        let mut w = World::new(Vec3::zeros(), 1.0 / 600.0, kind, SolverParams::default()).unwrap();
        w.sleep.enabled = false;
        let r = 0.3;
        // Centres 2r − 1 mm apart along a line 0.2 rad off x, moving ±0.5 m/s along y.
        let half = 0.5 * (2.0 * r - 0.001) * Vec3::new(0.2f64.cos(), 0.2f64.sin(), 0.0);
        for (x, v) in [(-half, 0.5), (half, -0.5)] {
            let mut b = RigidBody::new(&Shape::Sphere { radius: r }, 1000.0, x, Quat::identity());
            b.velocity = Vec3::new(0.0, v, 0.0);
            w.add_body(b);
        }
        let (p0, l0) = (
            total_linear_momentum(&w.bodies),
            total_angular_momentum(&w.bodies),
        );
        let gap0 = (w.bodies[1].position - w.bodies[0].position).norm() - 2.0 * r;
        w.step().unwrap();
        let gap1 = (w.bodies[1].position - w.bodies[0].position).norm() - 2.0 * r;
        let dl = (total_angular_momentum(&w.bodies) - l0).norm() / l0.norm();
        let dp = (total_linear_momentum(&w.bodies) - p0).norm();
        eprintln!("{kind}: gap {gap0:.2e} → {gap1:.2e}, |ΔL|/|L₀| {dl:.2e}");
        assert!(gap1 > gap0, "{kind}: the projection must open the overlap");
        assert!(dp < 1e-12, "{kind}: linear momentum changed by {dp:e}");
        assert!(dl < 1e-13, "{kind}: angular momentum drift {dl:e}");
    }
}

/// Newton's cradle with e = 1, μ = 0: the energy-conserving laws keep the kinetic energy
/// to rounding (1e-9 leaves room for a few hundred impulses); MDP, purely inelastic,
/// leaves the five balls moving together at v₀/5 (4/5 of the energy gone) — to 1e-9
/// too. CCP is checked separately (its sweeps may stop at the iteration cap).
#[test]
fn elastic_chain_keeps_its_energy() {
    for kind in SolverKind::ALL {
        if kind == SolverKind::Ccp {
            continue;
        }
        let (de, capped) = verify::cradle_energy(kind).unwrap();
        let expected = if kind == SolverKind::Mdp { 0.8 } else { 0.0 };
        eprintln!("{kind}: |ΔE|/E₀ = {de:.3e} (expected {expected}), cap hit: {capped}");
        assert!((de - expected).abs() < 1e-9, "{kind}: {de:e}");
    }
}

/// A sphere thrown without spin slides until t = 2v₀/(7μg), then rolls at 5v₀/7. The
/// friction impulse per step is exact, so the speed is right to rounding once rolling
/// (1e-4 relative bounds the last partial step's leftover slip, 8.5e-5 m/s at most);
/// the onset is estimated to a fraction of a step, 1 % is 1.2 steps.
#[test]
fn sliding_sphere_starts_rolling_at_2v0_over_7_mu_g() {
    let v0 = 2.0;
    let t_exact = 2.0 * v0 / (7.0 * 0.3 * verify::G);
    for kind in SolverKind::ALL {
        let (t, v) = verify::sliding_to_rolling(kind, v0).unwrap();
        eprintln!("{kind}: rolling at {t:.5} s (exact {t_exact:.5}), speed {v:.6}");
        assert!(
            Tolerance::Relative(0.01).accepts(t, t_exact),
            "{kind}: onset {t}"
        );
        // CCP's Newmark friction ends its last sliding step with the slip of the
        // trapezoidal rule: measured 0.17 % fast.
        assert!(
            Tolerance::Relative(0.01).accepts(v, 5.0 * v0 / 7.0),
            "{kind}: speed {v}"
        );
    }
}

/// A cube released at rest on a 20° slope with μ = 0.6 > tan θ stays: static friction
/// holds it within the cone whether or not its contacts approach. 1 mm over 5 s is the
/// issue's bound (measured: below 1e-8 m under every method).
#[test]
fn block_on_slope_within_the_friction_cone_stays() {
    for kind in SolverKind::ALL {
        let d = verify::slope_hold(kind).unwrap();
        eprintln!("{kind}: moved {d:.3e} m in 5 s");
        assert!(d < 1e-3, "{kind}: moved {d} m");
    }
}

/// A block sliding down a 20° slope with μ = 0.2 accelerates at g(sin θ − μ cos θ), and
/// one thrown downhill with μ = 0.6 decelerates at g(μ cos θ − sin θ): Coulomb friction
/// at full slip, exact per step for a face contact, within 1 %.
#[test]
fn sliding_block_on_slope_follows_coulomb() {
    for kind in SolverKind::ALL {
        let a = verify::slope_slide(kind).unwrap();
        let expected = verify::slope_expected(0.2);
        eprintln!("{kind}: acceleration {a:.4} m/s² (expected {expected:.4})");
        assert!(
            Tolerance::Relative(0.01).accepts(a, expected),
            "{kind}: {a}"
        );
    }
    for kind in SolverKind::ALL {
        let d = verify::slope_brake(kind).unwrap();
        let expected = -verify::slope_expected(0.6);
        eprintln!("{kind}: deceleration {d:.4} m/s² (expected {expected:.4})");
        // MDP brakes 6.5 % short: its per-contact maximum dissipation (paper 003, Eq. 5)
        // tilts a corner's friction off the slip (docs/results/fidelity.md); its
        // Coulomb variant (paper 003 §4) is held to Coulomb's value below.
        if kind != SolverKind::Mdp {
            assert!(
                Tolerance::Relative(0.01).accepts(d, expected),
                "{kind}: {d}"
            );
        }
    }
    let d = verify::slope_brake_mdp_coulomb().unwrap();
    let expected = -verify::slope_expected(0.6);
    eprintln!("mdp, Coulomb variant: deceleration {d:.4} m/s² (expected {expected:.4})");
    assert!(
        Tolerance::Relative(0.01).accepts(d, expected),
        "mdp, Coulomb variant: {d}"
    );
}

/// Rebound heights at the defaults, the impulse timed at the moment of impact
/// (`World::impact_timing`): jolt, SQM, SMM and ETM give e² for
/// e = 0.3, 0.5 and 0.8 over two successive bounces. The apexes are exact parabola fits,
/// so only the start of the drop is off, by g h²/8 of the discrete arc through rest
/// (3.4e-6 m of 1 m): 1e-4 relative. CCP and MDP are not affected (Newmark; MDP closes a
/// speculative gap itself): CCP rebounds to 0.998 of the height, MDP not at all.
#[test]
fn rebounds_follow_e_squared() {
    for kind in [
        SolverKind::Jolt,
        SolverKind::Sqm,
        SolverKind::Smm,
        SolverKind::Etm,
    ] {
        for e in [0.3, 0.5, 0.8] {
            let h = verify::rebound_heights(kind, e, 2, true).unwrap();
            eprintln!("{kind} e = {e}: apexes {h:?}");
            assert_eq!(h.len(), 3, "{kind} e = {e}: two rebounds");
            for k in 0..2 {
                let ratio = h[k + 1] / h[k];
                assert!(
                    Tolerance::Relative(1e-4).accepts(ratio, e * e),
                    "{kind} e = {e}: ratio {ratio}"
                );
            }
        }
    }
}

/// CCP on the elastic chain: the bar, 1e-9 at the defaults without hitting the
/// cap. CCP's sweeps stop when the paper's increment test holds and the estimated
/// energy error of the sweeps still to come is below 1e-2 × tolerance (1e-10) of the
/// energy at stake, the kinetic energy after the solve plus that of the velocity jump
/// (`dynamics::solver::ccp`, "Stop"): about 3 E₀ at the impact (E₀ after, the jump of
/// balls 1 and 5 2 E₀), so 3e-10 E₀ per impact solve, and the chain has one impact
/// solve and a few smaller ones that settle it. The increment test alone left 4.5e-8.
#[test]
fn ccp_elastic_chain_keeps_its_energy_within_the_cap() {
    let (de, capped) = verify::cradle_energy(SolverKind::Ccp).unwrap();
    eprintln!("ccp: |ΔE|/E₀ = {de:.3e}, cap hit: {capped}");
    assert!(!capped, "a step of the chain hit the iteration cap");
    assert!(de < 1e-9, "energy lost: {de:e}");
}

/// The elastic multi-contact box: 14 cubes and 13 crosses in a closed box,
/// e = 1, μ = 0, no gravity, 10 s (`verify::elastic_box`). Every impulse of an e = 1,
/// μ = 0 law leaves u_n⁺ = −u_n⁻, so its work P·(u⁻ + u⁺)/2 (paper 000, eq. 16) is zero,
/// and free flight of isotropic bodies keeps the energy: what is left is rounding
/// (~1e-12 under ETM, SQM and jolt) and SMM's linear solve, stopped at 1e-8 of each
/// impact's velocity jump (~2e-9 over its ~4,000 impulses); 1e-6 leaves room for that
/// and catches a safeguard that scales an elastic solution back or a jolt aimed at a
/// stale approach speed (figures in docs/results/fidelity.md). CCP's Newmark contact
/// keeps the energy too (paper 002 §5.3): a converged solve does no normal work
/// (p_n g_n = 0 at every contact that pushes; a speculative contact that the step
/// closes is active, g_n ≥ 0), and the contact pass leaves its contacts at the bound of
/// its law (`CollisionSolver::pass_floors`); it keeps ~4e-10. MDP's purely inelastic
/// law has no e = 1 (the row does not apply), but it must lose energy.
#[test]
fn elastic_box_keeps_its_energy() {
    for kind in SolverKind::ALL {
        let (de, impulses) = verify::elastic_box_energy(kind, verify::ELASTIC_BOX_STEPS).unwrap();
        eprintln!("{kind}: (E − E₀)/E₀ = {de:.3e} after 10 s, {impulses} impulses");
        assert!(
            impulses > 1000,
            "{kind}: the bodies must collide many times"
        );
        match kind {
            SolverKind::Mdp => assert!(de < -0.5, "{kind}: an inelastic law kept {de:e}"),
            _ => assert!(
                de.abs() < verify::ELASTIC_BOX_TOLERANCE,
                "{kind}: energy changed by {de:e} of E₀"
            ),
        }
    }
}

/// Oblique impacts: a sphere strikes a plane at 8 angles (10°-80° from the
/// normal, e = 0.5, μ = 0.3), from touching and from speculative starts (a quarter of
/// the step's approach away). Every method's post-impact v_t, r ω and v_n equal impact
/// theory with the method's own law (`verify::ImpactLaw::of`) within 1e-6 of the impact
/// speed: each impact is one contact solved exactly, so the error is rounding. The
/// speculative starts need the contact point against a container on the body's surface
/// (a point midway between the surfaces gives friction the lever arm r + gap/2).
#[test]
fn oblique_impacts_follow_impact_theory() {
    for kind in SolverKind::ALL {
        for speculative in [false, true] {
            let err = verify::oblique_sweep(kind, speculative).unwrap();
            eprintln!("{kind}: speculative {speculative}: worst |Δv|/v = {err:.3e}");
            assert!(
                err < verify::OBLIQUE_TOLERANCE,
                "{kind} (speculative {speculative}): post-impact velocities off by {err:e} of v"
            );
        }
    }
}

/// The two regimes of the sweep are really visited: at 10° every law sticks and at 80°
/// every law slides (the sweep's expected values are not all one formula), and the laws
/// differ as their papers say. CCP's Coulomb law acts on the step's displacement (paper
/// 002, eqs. 30-33 with the Newmark velocity of eq. 51), so a sticking contact reverses
/// its slip (v_t' = 3/7 v_t, r ω' = 10/7 v_t, energy kept) where Newton-Coulomb stops it
/// (v_t' = r ω' = 5/7 v_t).
#[test]
fn ccp_sticks_by_reversing_the_slip_as_paper_002s_displacement_law_says() {
    let theta = 10f64.to_radians();
    let vt = theta.sin();
    let ccp = verify::oblique_impact(SolverKind::Ccp, theta, 0.0).unwrap();
    assert!((ccp.v_t - 3.0 / 7.0 * vt).abs() < 1e-12, "{ccp:?}");
    assert!((0.1 * ccp.omega - 10.0 / 7.0 * vt).abs() < 1e-12, "{ccp:?}");
    let slip_before = vt;
    let slip_after = ccp.v_t - 0.1 * ccp.omega;
    assert!((slip_after + slip_before).abs() < 1e-12, "slip reversed");
    let sqm = verify::oblique_impact(SolverKind::Sqm, theta, 0.0).unwrap();
    assert!((sqm.v_t - 5.0 / 7.0 * vt).abs() < 1e-12, "{sqm:?}");
    assert!(
        (sqm.v_t - 0.1 * sqm.omega).abs() < 1e-12,
        "rolls after the impact"
    );
    // 80°: sliding through the impact under every law, P_t = μ P_n.
    let theta = 80f64.to_radians();
    for kind in SolverKind::ALL {
        let law = verify::ImpactLaw::of(kind, verify::OBLIQUE_E, verify::OBLIQUE_MU);
        let got = verify::oblique_impact(kind, theta, 0.0).unwrap();
        let pt = law.mu * (1.0 + law.e) * theta.cos();
        assert!(
            (got.v_t - (theta.sin() - pt)).abs() < 1e-12,
            "{kind}: slides with P_t = μ P_n: {got:?}"
        );
    }
}

/// Stacks: a column of 10 cubes and a pyramid of 15 (`verify::stack`), e = 0,
/// μ = 0.5, sleeping on, 10 s. Under every method no body drifts 1 mm from where it was
/// placed or moves faster than 1e-3 m/s at any step, and every body is asleep by the
/// end. A resting stack moves by the projection's corrections
/// only; the largest speeds, 5-7e-4 m/s, come from the first steps (the pass starts
/// cold). Both need a manifold's points updated together (a corner visited alone takes
/// the whole load and tips the body) and a projection that can rotate a body
/// (docs/results/fidelity.md, "Stacks").
#[test]
fn stacks_stay_put_and_fall_asleep() {
    for kind in SolverKind::ALL {
        for pyramid in [false, true] {
            let o = verify::stack_outcome(kind, pyramid).unwrap();
            eprintln!("{kind} pyramid {pyramid}: {o:?}");
            assert!(
                o.drift < verify::STACK_DRIFT,
                "{kind} (pyramid {pyramid}): a body drifted {} m",
                o.drift
            );
            assert!(
                o.speed < verify::STACK_SPEED,
                "{kind} (pyramid {pyramid}): a body moved at {} m/s",
                o.speed
            );
            assert_eq!(o.awake, 0, "{kind} (pyramid {pyramid}): awake at 10 s");
            // An island sleeps after 0.5 s still (`SleepParams::time`); the stacks are
            // still from the first step under every method (asleep at 0.50 s).
            assert!(
                o.asleep_at.is_some_and(|t| t <= 1.0),
                "{kind} (pyramid {pyramid}): asleep only at {:?}",
                o.asleep_at
            );
        }
    }
}

/// A free non-isotropic body: a cuboid tumbling near its intermediate axis
/// (it flips), no gravity, 10 s. The default rotation (θ = ½, implicit midpoint with the
/// Cayley-consistent orientation) keeps its world angular momentum and its energy within
/// 1e-9 (measured 2.5e-12 and 5.0e-12: Newton's stop and rounding); the first-order
/// options drift by percents (θ = 1: 7.5e-2 of E, symplectic Euler 8.5e-2), as their
/// documentation says.
#[test]
fn a_free_tumbling_body_keeps_momentum_and_energy_under_the_midpoint_rule() {
    for kind in SolverKind::ALL {
        let (dl, de) =
            verify::free_body_drift(kind, RotationIntegrator::Theta { theta: 0.5 }).unwrap();
        assert!(
            dl < verify::FREE_BODY_TOLERANCE && de < verify::FREE_BODY_TOLERANCE,
            "{kind}: |ΔL|/L₀ {dl:e}, |ΔE|/E₀ {de:e}"
        );
    }
    let (_, de) =
        verify::free_body_drift(SolverKind::Sqm, RotationIntegrator::SymplecticEuler).unwrap();
    assert!(de > 1e-3, "symplectic Euler should drift: {de:e}");
}

/// Resistance at any rest velocity: a sphere rolling at 2 m/s with rolling
/// resistance μ_r = 0.01 m decelerates at (5/7) μ_r g / r = 0.7007 m/s² under every
/// method (the contact pass applies the torque μ_r N exactly each step: measured to
/// 5e-14 relative; bound 1e-6). At rest_velocity 0 no contact reaches the pass and the
/// sphere rolls on; that configuration is named by `SolverParams::inert` (what
/// `validate`, `run` and the Solver panel print).
#[test]
fn rolling_resistance_decelerates_as_theory_or_is_named_when_it_cannot_act() {
    let expected = -(5.0 / 7.0) * verify::ROLLING_RESISTANCE * verify::G / 0.1;
    for kind in SolverKind::ALL {
        let a = verify::rolling_deceleration(kind, 0.05).unwrap();
        assert!(
            ((a - expected) / expected).abs() < 1e-6,
            "{kind}: {a} against {expected}"
        );
        assert_eq!(verify::rolling_deceleration(kind, 0.0).unwrap(), 0.0);
    }
    let named = impulse_lab::dynamics::solver::SolverParams {
        rolling_friction: verify::ROLLING_RESISTANCE,
        rest_velocity: 0.0,
        ..Default::default()
    }
    .inert();
    assert!(named.iter().any(|(field, _)| *field == "rolling_friction"));
}
