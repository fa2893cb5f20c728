//! The soft resting model (`SolverParams::resting_model = Soft`, `contact_pass::Softness`):
//! Box2D v3's soft step at the world's step, checked against what a spring-damper must
//! do and against the ledger.
//!
//! A soft contact is a spring of natural frequency ω = 2πf. At rest under a weight W
//! it must sit at the spring's static deflection, d* = W/(m ω²) = g/ω² for one body on
//! the floor (0.276 mm at 30 Hz), whatever h and ζ: in the pass, with the warm start
//! carrying λ = m g h, the biased update leaves the body rising at m_s b − i_s g h and
//! the push-out h (m_s b − i_s g h) vanishes when the bias b = (ω/a₁) d equals
//! (i_s/m_s) g h = g h/a₂, i.e. d = g h a₁/(a₂ ω) = g/ω².

use impulse_lab::container::Container;
use impulse_lab::dynamics::contact_pass::Softness;
use impulse_lab::dynamics::solver::RestingModel;
use impulse_lab::math::{Quat, Vec3};
use impulse_lab::{RigidBody, Shape, SolverKind, SolverParams, World};

const DT: f64 = 1.0 / 600.0;
const G: f64 = 9.81;

fn soft_params() -> SolverParams {
    SolverParams {
        restitution: 0.3,
        friction: 0.3,
        resting_model: RestingModel::Soft,
        ..Default::default()
    }
}

fn world(kind: SolverKind, params: SolverParams) -> World {
    let mut w = World::new(Vec3::new(0.0, 0.0, -G), DT, kind, params).unwrap();
    w.sleep.enabled = false;
    w.add_container(Container::Box {
        center: Vec3::zeros(),
        half_size: [5.0, 5.0],
        height: 5.0,
        walls: [true; 4],
        dividers: vec![],
    });
    w
}

/// The deepest overlap of the world's contacts (m, ≥ 0).
fn deepest(w: &World) -> f64 {
    w.contacts.iter().fold(0.0_f64, |d, c| d.max(-c.gap))
}

/// A sphere set on the floor sinks to the spring's static deflection g/ω² and stays
/// there, under every method that uses the contact pass.
#[test]
fn a_resting_sphere_sits_at_the_static_deflection_of_the_contact_spring() {
    let params = soft_params();
    let omega = 2.0 * std::f64::consts::PI * params.contact_hertz;
    let expected = G / (omega * omega);
    for kind in [
        SolverKind::Jolt,
        SolverKind::Sqm,
        SolverKind::Etm,
        SolverKind::Smm,
    ] {
        let mut w = world(kind, params.clone());
        let s = Shape::Sphere { radius: 0.5 };
        w.add_body(RigidBody::new(
            &s,
            1000.0,
            Vec3::new(0.0, 0.0, 0.5),
            Quat::identity(),
        ));
        w.start_ledger();
        // Overdamped (ζ = 10): the slow mode decays at about ω/(2ζ) ≈ 9.4/s, so 4 s
        // leave e^-37 of the start.
        for _ in 0..2400 {
            w.step().unwrap();
        }
        let d = deepest(&w);
        let v = w.bodies[0].velocity.norm();
        eprintln!("{kind}: overlap {d:.9e} m, g/ω² = {expected:.9e} m, speed {v:.2e} m/s");
        assert!(
            (d - expected).abs() < 1e-9,
            "{kind}: overlap {d:e} m, expected g/ω² = {expected:e} m"
        );
        assert!(v < 1e-9, "{kind}: still moving at {v:e} m/s");
    }
}

/// A cube resting on a face (four contact points, one rigid body) settles to the same
/// deflection: the four springs share the weight.
#[test]
fn a_resting_cube_sits_at_the_same_deflection() {
    let params = soft_params();
    let softness = Softness::new(params.contact_hertz, params.contact_damping_ratio, DT);
    assert!(softness.bias_rate > 0.0 && softness.mass_scale < 1.0);
    let omega = 2.0 * std::f64::consts::PI * params.contact_hertz;
    let expected = G / (omega * omega);
    let mut w = world(SolverKind::Jolt, params);
    let s = Shape::Cuboid {
        half_extents: Vec3::new(0.5, 0.5, 0.5),
    };
    w.add_body(RigidBody::new(
        &s,
        1000.0,
        Vec3::new(0.0, 0.0, 0.5),
        Quat::identity(),
    ));
    for _ in 0..2400 {
        w.step().unwrap();
    }
    let d = deepest(&w);
    eprintln!("cube: overlap {d:.9e} m, g/ω² = {expected:.9e} m");
    assert!(
        (d - expected).abs() < 1e-3 * expected,
        "overlap {d:e} m, expected {expected:e} m"
    );
}

/// Every joule the soft model moves is booked: the bias's push-out as `projection`, the
/// sweeps' work as dissipation. A pour of spheres and cubes keeps the ledger's residual
/// at rounding level (the same bound as the hard pass's ledger tests).
#[test]
fn the_ledger_closes_under_the_soft_model() {
    for kind in [SolverKind::Jolt, SolverKind::Sqm] {
        let mut w = world(kind, soft_params());
        let shapes = [
            Shape::Sphere { radius: 0.4 },
            Shape::Cuboid {
                half_extents: Vec3::new(0.35, 0.35, 0.35),
            },
        ];
        let mut k = 0;
        for i in 0..4 {
            for j in 0..4 {
                for layer in 0..3 {
                    let pos = Vec3::new(
                        -3.0 + 2.0 * i as f64,
                        -3.0 + 2.0 * j as f64,
                        0.6 + 1.2 * layer as f64,
                    );
                    let q = Quat::from_euler_angles(0.3 * k as f64, 0.2, 0.1 * k as f64);
                    w.add_body(RigidBody::new(&shapes[k % 2], 1500.0, pos, q));
                    k += 1;
                }
            }
        }
        w.start_ledger();
        let e0 = w.state_energy(0.0).total();
        let mut pushed = false;
        for _ in 0..1800 {
            let sample = w.step().unwrap();
            pushed |= w.ledger.projection != 0.0;
            assert!(
                sample.residual.abs() < 1e-9 * e0.abs(),
                "{kind}: residual {} J of E₀ = {e0} J",
                sample.residual
            );
        }
        assert!(
            pushed,
            "{kind}: the push-out never acted (nothing was tested)"
        );
    }
}

/// `Soft` needs the warm start: refused with rest_velocity = 0, naming the field.
#[test]
fn soft_without_a_rest_velocity_is_refused() {
    let params = SolverParams {
        rest_velocity: 0.0,
        ..soft_params()
    };
    let (field, message) = params.validate().unwrap_err();
    assert_eq!(field, "resting_model", "{message}");
}
