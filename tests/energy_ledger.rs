//! The energy ledger's bookkeeping: every joule is either in the state, explained by a
//! column, or shown as residual.

use impulse_lab::container::Container;
use impulse_lab::math::{Quat, Vec3};
use impulse_lab::{RigidBody, Shape, SolverKind, SolverParams, World};

const G: f64 = 9.81;
const H: f64 = 1.0 / 600.0;

fn world(params: SolverParams, gravity: Vec3) -> World {
    World::new(gravity, H, SolverKind::Jolt, params).unwrap()
}

/// Free fall: semi-implicit Euler changes the total energy by exactly −½ m g² h² per step;
/// the ledger books that as `integration`, and the residual stays at rounding level.
#[test]
fn free_fall_integration_error_is_booked_exactly() {
    let mut w = world(SolverParams::default(), Vec3::new(0.0, 0.0, -G));
    let i = w.add_body(RigidBody::new(
        &Shape::Cuboid {
            half_extents: Vec3::new(0.5, 0.3, 0.2),
        },
        800.0,
        Vec3::new(0.0, 0.0, 100.0),
        Quat::from_euler_angles(0.1, 0.2, 0.3),
    ));
    w.bodies[i].velocity = Vec3::new(1.0, 0.0, 3.0);
    w.bodies[i].angular_velocity = Vec3::new(0.5, -1.0, 2.0);
    let s0 = w.start_ledger();
    let m = w.bodies[i].mass;
    let steps = 600;
    let mut s = s0;
    for _ in 0..steps {
        s = w.step().unwrap();
    }
    let expected = -0.5 * m * G * G * H * H * steps as f64;
    assert!(
        (s.integration - expected).abs() < 1e-9 * expected.abs() + 1e-9 * s0.total.abs(),
        "integration {} vs −½ m g² h² n = {expected}",
        s.integration
    );
    assert!(
        (s.total - s0.total - expected).abs() < 1e-9 * s0.total.abs(),
        "the total really changed by that"
    );
    assert!(
        s.residual.abs() < 1e-9 * s0.total.abs(),
        "residual {}",
        s.residual
    );
}

/// A head-on collision with e = 0.5 and no gravity: the kinetic energy lost equals the
/// booked restitution dissipation (1 − e²) m_red u² / 2, and nothing is left as residual.
#[test]
fn restitution_loss_is_booked_and_matches_newton() {
    let e = 0.5;
    let params = SolverParams {
        restitution: e,
        friction: 0.0,
        ..Default::default()
    };
    let mut w = world(params, Vec3::zeros());
    let s = Shape::Sphere { radius: 0.5 };
    let a = w.add_body(RigidBody::new(
        &s,
        1000.0,
        Vec3::new(-0.6, 0.0, 0.0),
        Quat::identity(),
    ));
    let b = w.add_body(RigidBody::new(
        &s,
        3000.0,
        Vec3::new(0.6, 0.0, 0.0),
        Quat::identity(),
    ));
    w.bodies[a].velocity = Vec3::new(2.0, 0.0, 0.0);
    w.bodies[b].velocity = Vec3::new(-1.0, 0.0, 0.0);
    let s0 = w.start_ledger();
    let (ma, mb) = (w.bodies[a].mass, w.bodies[b].mass);
    let m_red = ma * mb / (ma + mb);
    let mut last = s0;
    for _ in 0..120 {
        last = w.step().unwrap();
    }
    let loss = 0.5 * m_red * 9.0 * (1.0 - e * e);
    assert!(
        (s0.kinetic - last.kinetic - loss).abs() < 1e-10 * loss,
        "ΔK = {}, expected {loss}",
        s0.kinetic - last.kinetic
    );
    assert!((last.dissipated_restitution - loss).abs() < 1e-10 * loss);
    assert!(
        last.residual.abs() < 1e-10 * loss,
        "residual {}",
        last.residual
    );
}

/// Position projection moves bodies without forces: the potential energy it adds is
/// booked as the ledger's `projection`, and the residual stays at rounding (here: a
/// sphere started 5 cm into the ground is pushed out, gaining m g × 5 cm).
#[test]
fn position_projection_is_booked_as_projection() {
    let params = SolverParams {
        restitution: 0.0,
        friction: 0.0,
        kp: 0.2,
        ..Default::default()
    };
    let mut w = world(params, Vec3::new(0.0, 0.0, -G));
    w.add_container(Container::Plane {
        point: Vec3::zeros(),
        normal: Vec3::z(),
    });
    let i = w.add_body(RigidBody::new(
        &Shape::Sphere { radius: 0.5 },
        1000.0,
        Vec3::new(0.0, 0.0, 0.45),
        Quat::identity(),
    ));
    let s0 = w.start_ledger();
    let mut s = s0;
    for _ in 0..600 {
        s = w.step().unwrap();
    }
    let m = w.bodies[i].mass;
    let lift = w.bodies[i].position.z - 0.45;
    assert!(
        (lift - 0.05).abs() < 1e-4,
        "projected out of the ground: lift {lift}"
    );
    assert!(
        (s.projection - m * G * lift).abs() < 1e-6 * m * G * lift,
        "projection {} should be m g Δz = {}",
        s.projection,
        m * G * lift
    );
    // Rounding of ~600 steps of a ~5e3 J total.
    assert!(
        s.residual.abs() < 1e-9 * m * G * lift,
        "residual {} with the projection booked",
        s.residual
    );
}
