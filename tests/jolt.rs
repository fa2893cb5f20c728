//! Velocity-jolt solver (paper 001) acceptance tests.

use impulse_lab::body::total_linear_momentum;
use impulse_lab::container::Container;
use impulse_lab::math::{Quat, Vec3};
use impulse_lab::{RigidBody, Shape, SolverKind, SolverParams, World};

fn world(gravity: Vec3, params: SolverParams) -> World {
    World::new(gravity, 1.0 / 600.0, SolverKind::Jolt, params).unwrap()
}

/// Two equal spheres head-on, no gravity: momentum is kept to 1e-12 and they separate
/// with e times the approach speed (Newton's law, eq. B.9 with m_red = 1/2).
#[test]
fn head_on_equal_spheres_keep_momentum_and_obey_restitution() {
    for e in [0.0, 0.3, 0.8, 1.0] {
        let params = SolverParams {
            restitution: e,
            friction: 0.3,
            kp: 0.2,
            ..Default::default()
        };
        let mut w = world(Vec3::zeros(), params);
        let s = Shape::Sphere { radius: 0.5 };
        let a = w.add_body(RigidBody::new(
            &s,
            1000.0,
            Vec3::new(-0.6, 0.0, 0.0),
            Quat::identity(),
        ));
        let b = w.add_body(RigidBody::new(
            &s,
            1000.0,
            Vec3::new(0.6, 0.0, 0.0),
            Quat::identity(),
        ));
        w.bodies[a].velocity = Vec3::new(3.0, 0.0, 0.0);
        w.bodies[b].velocity = Vec3::new(-3.0, 0.0, 0.0);
        let p0 = total_linear_momentum(&w.bodies);
        let approach = 6.0;
        w.start_ledger();
        for _ in 0..200 {
            w.step().unwrap();
            let dp = (total_linear_momentum(&w.bodies) - p0).norm();
            assert!(
                dp <= 1e-12 * w.bodies[a].mass * approach,
                "e = {e}: momentum drift {dp}"
            );
        }
        let sep = w.bodies[b].velocity.x - w.bodies[a].velocity.x;
        assert!(
            (sep - e * approach).abs() < 1e-12 * approach,
            "e = {e}: separation speed {sep}, expected {}",
            e * approach
        );
        // Head-on: no spin, no sideways motion.
        assert!(
            w.bodies
                .iter()
                .all(|b| b.angular_velocity.norm() < 1e-15 && b.velocity.yz().norm() < 1e-15)
        );
    }
}

/// A small fast sphere travelling 1.7 m per step (much more than its 1 cm radius) must
/// not tunnel through the ground: the one-sided plane test of paper 001 catches it.
#[test]
fn fast_small_sphere_does_not_pass_through_ground() {
    let params = SolverParams {
        restitution: 0.5,
        friction: 0.0,
        kp: 0.2,
        ..Default::default()
    };
    let mut w = world(Vec3::new(0.0, 0.0, -9.81), params);
    w.add_container(Container::Plane {
        point: Vec3::zeros(),
        normal: Vec3::z(),
    });
    let i = w.add_body(RigidBody::new(
        &Shape::Sphere { radius: 0.01 },
        7800.0,
        Vec3::new(0.0, 0.0, 0.5),
        Quat::identity(),
    ));
    w.bodies[i].velocity = Vec3::new(0.0, 0.0, -1000.0);
    let mut lowest = f64::INFINITY;
    for _ in 0..600 {
        w.step().unwrap();
        lowest = lowest.min(w.bodies[i].position.z);
    }
    // It penetrates for at most the step it lands in and is pushed back out.
    assert!(
        w.bodies[i].position.z > 0.0,
        "sphere ended below the ground at z = {}",
        w.bodies[i].position.z
    );
    assert!(
        lowest > -1000.0 / 600.0 - 1e-9,
        "penetration bounded by one step of travel, lowest z = {lowest}"
    );
    assert!(
        w.bodies[i].velocity.z.abs() < 1000.0,
        "bounce cannot gain speed"
    );
}

/// A sphere dropped on the ground with e = 0 comes to rest on it: it neither sinks nor
/// jitters.
#[test]
fn sphere_comes_to_rest_on_ground() {
    let params = SolverParams {
        restitution: 0.0,
        friction: 0.5,
        kp: 0.2,
        ..Default::default()
    };
    let mut w = world(Vec3::new(0.0, 0.0, -9.81), params);
    w.add_container(Container::Plane {
        point: Vec3::zeros(),
        normal: Vec3::z(),
    });
    let i = w.add_body(RigidBody::new(
        &Shape::Sphere { radius: 0.5 },
        1000.0,
        Vec3::new(0.0, 0.0, 1.0),
        Quat::identity(),
    ));
    for _ in 0..1200 {
        w.step().unwrap();
    }
    let b = &w.bodies[i];
    assert!(
        (b.position.z - 0.5).abs() < 1e-3,
        "rests on the ground, z = {}",
        b.position.z
    );
    assert!(
        b.velocity.norm() < 9.81 / 600.0 + 1e-12,
        "at most one step of gravity left, v = {}",
        b.velocity.norm()
    );
}

/// Speculative contacts: a 5 cm sphere at 400 m/s (67 cm per step) must not tunnel
/// through a 10 cm static slab. Without a margin that grows with speed the first step
/// that sees the pair would already have carried the sphere past it.
#[test]
fn fast_sphere_does_not_tunnel_through_thin_static_body() {
    for solver in [
        SolverKind::Jolt,
        SolverKind::Sqm,
        SolverKind::Etm,
        SolverKind::Smm,
    ] {
        let params = SolverParams {
            restitution: 0.5,
            friction: 0.0,
            kp: 0.2,
            ..Default::default()
        };
        let mut w = World::new(Vec3::zeros(), 1.0 / 600.0, solver, params).unwrap();
        let slab = Shape::Cuboid {
            half_extents: Vec3::new(0.05, 1.0, 1.0),
        };
        w.add_body(RigidBody::new(&slab, 1000.0, Vec3::zeros(), Quat::identity()).into_static());
        let s = w.add_body(RigidBody::new(
            &Shape::Sphere { radius: 0.05 },
            1000.0,
            Vec3::new(-0.4, 0.1, 0.0),
            Quat::identity(),
        ));
        w.bodies[s].velocity = Vec3::new(400.0, 0.0, 0.0);
        for _ in 0..60 {
            w.step().unwrap();
            assert!(
                w.bodies[s].position.x < 0.0,
                "{solver}: the sphere passed the slab, x = {}",
                w.bodies[s].position.x
            );
        }
        let v = w.bodies[s].velocity.x;
        assert!(
            (v + 200.0).abs() < 1e-9,
            "{solver}: bounces back with e × 400 m/s, got {v}"
        );
    }
}
