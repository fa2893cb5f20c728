//! The solver seam: a method states what it reads and what the world must do around it
//! (`CollisionSolver::own_parameters`, `uses_contact_pass`, `corrects_positions`), and
//! the world, the app's solver panel and the microscope ask it instead of matching its
//! name. These tests hold the statements to the code: a parameter a method says it does
//! not read must not change a single bit of its run.

use impulse_lab::body::RigidBody;
use impulse_lab::container::Container;
use impulse_lab::dynamics::solver::{Param, SolverKind, SolverParams, mdp::FrictionLaw};
use impulse_lab::math::{Quat, Vec3};
use impulse_lab::shapes::Shape;
use impulse_lab::world::World;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

mod common;

/// Twelve mixed bodies (spheres, cubes, crosses, an ellipsoid) dropped in a tight stack
/// into a closed box, overlapping their neighbours' bounding balls and spinning: within
/// 300 steps they collide, rest on the floor and on each other, so the method, the
/// contact pass and the projection all act.
fn pile(kind: SolverKind, params: SolverParams) -> World {
    let mut w = World::new(Vec3::new(0.0, 0.0, -9.81), 1.0 / 600.0, kind, params).unwrap();
    w.sleep.enabled = false;
    w.add_container(Container::Box {
        center: Vec3::zeros(),
        half_size: [0.6, 0.6],
        height: 3.0,
        walls: [true; 4],
        dividers: Vec::new(),
    });
    let shapes = [
        Shape::Sphere { radius: 0.2 },
        Shape::Cuboid {
            half_extents: Vec3::repeat(0.17),
        },
        Shape::Cross { c: 0.13 },
        Shape::Ellipsoid {
            semi_axes: Vec3::new(0.25, 0.15, 0.12),
        },
    ];
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for k in 0..12 {
        let pos = Vec3::new(
            rng.random_range(-0.3..0.3),
            rng.random_range(-0.3..0.3),
            0.25 + 0.3 * k as f64,
        );
        let q = Quat::from_euler_angles(
            rng.random_range(0.0..3.0),
            rng.random_range(0.0..3.0),
            rng.random_range(0.0..3.0),
        );
        let i = w.add_body(RigidBody::new(&shapes[k % shapes.len()], 1000.0, pos, q));
        w.bodies[i].velocity = Vec3::new(0.0, 0.0, -2.0);
        w.bodies[i].angular_velocity = Vec3::new(
            rng.random_range(-3.0..3.0),
            rng.random_range(-3.0..3.0),
            rng.random_range(-3.0..3.0),
        );
    }
    w.start_ledger();
    w
}

/// Pile parameters that make every stage act: restitution above the rest velocity, the
/// contact pass with warm start (rest velocity > 0), projection.
fn base() -> SolverParams {
    SolverParams {
        restitution: 0.4,
        friction: 0.4,
        rest_velocity: 0.05,
        max_iterations: 30,
        ..SolverParams::default()
    }
}

/// `params` with field `p` set to another valid value (one that would change the run of
/// a method that reads it).
fn perturb(params: &mut SolverParams, p: Param) {
    match p {
        Param::Restitution => params.restitution = 0.9,
        Param::Friction => params.friction = 0.05,
        Param::Lambda => params.lambda = 3.0,
        Param::Kp => params.kp = 0.45,
        Param::MaxIterations => params.max_iterations = 1,
        Param::ContactSweeps => params.contact_sweeps = 2,
        Param::Tolerance => params.tolerance = 1e-2,
        Param::RestVelocity => params.rest_velocity = 0.5,
        Param::ContactPass => params.contact_pass = !params.contact_pass,
        Param::RollingFriction => params.rolling_friction = 0.01,
        Param::SpinningFriction => params.spinning_friction = 0.01,
        Param::Cohesion => params.cohesion = 50.0,
        Param::EquivalentFriction => params.equivalent_friction = 0.9,
        Param::CcpOmega => params.ccp_omega = 0.7,
        Param::CcpTau => params.ccp_tau = 0.5,
        Param::MdpFriction => params.mdp_friction = FrictionLaw::Coulomb,
        Param::ErrorReduction => params.error_reduction = 0.9,
        Param::RestingModel => {
            params.resting_model = impulse_lab::dynamics::solver::RestingModel::Soft
        }
    }
}

const ALL_PARAMS: [Param; 18] = [
    Param::Restitution,
    Param::Friction,
    Param::Lambda,
    Param::Kp,
    Param::MaxIterations,
    Param::ContactSweeps,
    Param::Tolerance,
    Param::RestVelocity,
    Param::ContactPass,
    Param::RollingFriction,
    Param::SpinningFriction,
    Param::Cohesion,
    Param::EquivalentFriction,
    Param::CcpOmega,
    Param::CcpTau,
    Param::MdpFriction,
    Param::ErrorReduction,
    Param::RestingModel,
];

const STEPS: usize = 300;

/// The world after `STEPS` steps, and the most contacts it had in one step.
fn run_counting(kind: SolverKind, params: SolverParams) -> (World, usize) {
    let mut w = pile(kind, params);
    let mut most = 0;
    for s in 0..STEPS {
        w.step()
            .unwrap_or_else(|e| panic!("{kind} step {s} failed: {e}"));
        most = most.max(w.contacts.len());
    }
    (w, most)
}

fn run(kind: SolverKind, params: SolverParams) -> World {
    run_counting(kind, params).0
}

#[test]
fn a_parameter_a_method_does_not_read_changes_nothing() {
    for kind in SolverKind::ALL {
        let read = kind.parameters();
        let (reference, most) = run_counting(kind, base());
        assert!(
            most >= 8,
            "{kind}: the pile must be in contact to test anything (at most {most} contacts)"
        );
        let mut params = base();
        for p in ALL_PARAMS.into_iter().filter(|p| !read.contains(p)) {
            perturb(&mut params, p);
        }
        params.validate().unwrap();
        let other = run(kind, params);
        common::assert_same_state(
            &reference.bodies,
            &other.bodies,
            &format!("{kind} with the parameters it does not read changed"),
        );
    }
}

#[test]
fn the_parameters_a_method_reads_change_its_run() {
    // The converse, for the parameters every pile exercises and that act in every step:
    // the method's own (its resolve reads them) and k_p where the world's projection
    // runs. A method that says it reads one must move differently when it changes (a
    // stale list would show sliders that do nothing). The contact pass's parameters are
    // left out: they act only on what a method leaves to the pass, which in this pile
    // may be nothing.
    let exercised = [
        Param::Friction,
        Param::Kp,
        Param::MaxIterations,
        Param::RestVelocity,
    ];
    for kind in SolverKind::ALL {
        let own = kind.create().own_parameters().to_vec();
        let reference = run(kind, base());
        for p in kind
            .parameters()
            .into_iter()
            .filter(|p| exercised.contains(p) && (own.contains(p) || *p == Param::Kp))
        {
            let mut params = base();
            perturb(&mut params, p);
            let other = run(kind, params);
            let moved = reference
                .bodies
                .iter()
                .zip(&other.bodies)
                .any(|(a, b)| a.position != b.position);
            assert!(
                moved,
                "{kind} says it reads {p:?}, but changing it changed nothing"
            );
        }
    }
}

#[test]
fn capabilities_match_the_methods_papers() {
    // Jolt projects positions itself (paper 001, eq. B.18) and MDP has its error
    // reduction (paper 003, §3.1): the world's projection, hence k_p, is not theirs...
    assert!(!SolverKind::Mdp.parameters().contains(&Param::Kp));
    // ...but jolt reads k_p in its own projection, and SQM, SMM and ETM through the
    // world's.
    for kind in [
        SolverKind::Jolt,
        SolverKind::Sqm,
        SolverKind::Smm,
        SolverKind::Etm,
    ] {
        assert!(kind.parameters().contains(&Param::Kp), "{kind} reads k_p");
    }
    // CCP leaves contacts slower than the rest velocity to the contact pass, as every
    // method does, and moves overlapping pairs apart itself (k_p in its own resolve).
    let ccp = SolverKind::Ccp.parameters();
    assert!(ccp.contains(&Param::ContactPass) && ccp.contains(&Param::RestVelocity));
    assert!(ccp.contains(&Param::Kp), "CCP's own projection reads k_p");
    let solver = SolverKind::Ccp.create();
    let defaults = impulse_lab::dynamics::solver::SolverParams::default();
    assert!(solver.uses_contact_pass() && !solver.corrects_positions(&defaults));
    let without_pass = impulse_lab::dynamics::solver::SolverParams {
        contact_pass: false,
        ..defaults
    };
    assert!(solver.corrects_positions(&without_pass));
    assert!(
        !ccp.contains(&Param::Restitution),
        "CCP's contact law is elastic"
    );
    assert!(SolverKind::Etm.parameters().contains(&Param::Lambda));
}

/// The contact pass's floors (`CollisionSolver::pass_floors`): CCP gives one for each
/// contact it resolved, the lowest u_n⁺ its Newmark law allows, h (u₀ + u⁺)ₙ/2 ≥ g_min,
/// i.e. −u₀,ₙ for a touching ball dropped on the floor at 2 m/s with no gravity: the
/// pass must not stop the ball's rebound (u_n⁺ = +2 m/s ≥ −(−2)). The other methods'
/// laws are the pass's own (u_n⁺ ≥ 0) and give none.
#[test]
fn only_ccp_gives_the_contact_pass_its_own_floors() {
    for kind in SolverKind::ALL {
        let mut w = World::new(Vec3::zeros(), 1.0 / 600.0, kind, SolverParams::default()).unwrap();
        w.add_container(Container::Plane {
            point: Vec3::zeros(),
            normal: Vec3::z(),
        });
        let mut b = RigidBody::new(
            &Shape::Sphere { radius: 0.1 },
            1000.0,
            Vec3::new(0.0, 0.0, 0.1),
            Quat::identity(),
        );
        b.velocity = Vec3::new(0.0, 0.0, -2.0);
        w.add_body(b);
        w.step().unwrap();
        let floors = w.solver().pass_floors();
        if kind == SolverKind::Ccp {
            assert_eq!(floors.len(), w.contacts.len(), "one entry per contact");
            let floor = floors[0].expect("CCP resolved the impact");
            // u₀,ₙ = −2 m/s: the floor is +2 m/s less the slack of the converged
            // solve (rounding), and the ball left at +2 m/s.
            assert!((floor - 2.0).abs() < 1e-9, "CCP's floor {floor}");
            assert!((w.bodies[0].velocity.z - 2.0).abs() < 1e-9);
        } else {
            assert!(floors.is_empty(), "{kind} gives floors: {floors:?}");
        }
    }
}
