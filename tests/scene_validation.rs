//! Scene files: the valid fixture loads, generators are deterministic, and every kind of
//! invalid input is rejected with an error naming the file, the line and the field.
//!
//! The invalid cases are the valid fixture `tests/fixtures/valid_full.ron` with one
//! piece of text replaced; the expected line is the line of that piece in the fixture,
//! so the tests follow edits of the fixture.

use impulse_lab::scene::{
    BodyOrigin, ContainerSpec, GeneratorSpec, PlacedBody, Scene, SceneErrorKind, ShapeSpec,
    load_scene, parse_scene,
};
use impulse_lab::{Container, SolverKind};
use proptest::prelude::*;
use std::path::Path;

const FILE: &str = "tests/fixtures/valid_full.ron";

fn fixture() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(FILE))
        .expect("fixture readable")
}

/// The fixture with the single occurrence of `from` replaced by `to`, and the 1-based
/// line of that occurrence.
fn mutate(from: &str, to: &str) -> (String, usize) {
    let text = fixture();
    let matches: Vec<_> = text.match_indices(from).collect();
    assert_eq!(
        matches.len(),
        1,
        "`{from}` must occur exactly once in the fixture"
    );
    let at = matches[0].0;
    let line = text[..at].matches('\n').count() + 1;
    (text.replacen(from, to, 1), line)
}

/// Replace `from` by `to`, expect an error at that line naming `field`, and return the
/// message for further checks.
fn expect_error(from: &str, to: &str, field: &str) -> String {
    let (text, line) = mutate(from, to);
    let err = match parse_scene(&text, FILE) {
        Ok(_) => panic!("replacing `{from}` by `{to}` should be rejected"),
        Err(e) => e,
    };
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!("{FILE}:{line}:")),
        "`{from}` → `{to}`: expected line {line}, got: {msg}"
    );
    assert!(
        msg.contains(field),
        "`{from}` → `{to}`: expected field `{field}` in: {msg}"
    );
    assert!(
        err.is_invalid_input() && err.exit_code() == 2,
        "invalid input exits with EX_DATAERR: {err:?}"
    );
    msg
}

#[test]
fn valid_fixture_parses_with_every_feature() {
    let scene =
        load_scene(&Path::new(env!("CARGO_MANIFEST_DIR")).join(FILE)).expect("fixture is valid");
    assert_eq!(scene.name, "Fixture: everything");
    assert_eq!(scene.solver, SolverKind::Jolt);
    assert_eq!(scene.seed, 42);
    assert_eq!(scene.pack_friction, Some(0.25));
    let reference = scene.reference_angle.as_ref().expect("reference_angle");
    assert_eq!(reference.angle_deg, 19.7);
    assert_eq!(reference.source, "Zhou et al. 2002");
    let region = scene
        .region_of_interest
        .as_ref()
        .expect("region_of_interest");
    assert_eq!(region.max.0, [12.0, 6.0, 9.0]);
    assert_eq!(scene.region_of_interest().unwrap(), *region);
    assert_eq!(scene.params.restitution, 0.3);
    // Not given in the file: SolverParams' default.
    assert_eq!(scene.params.max_iterations, 100);
    assert_eq!(scene.containers.len(), 5);
    assert_eq!(scene.bodies.len(), 11);
    assert!(scene.bodies[0].is_static);
    assert_eq!(scene.generators.len(), 2);
    let bodies = scene.expand_bodies().unwrap();
    assert_eq!(bodies.len(), 11 + 40 + 8);
}

#[test]
fn defaults_apply_to_a_minimal_scene() {
    let scene = parse_scene("(name: \"empty\")", "min.ron").unwrap();
    assert_eq!(scene.dt, 1.0 / 600.0);
    assert_eq!(scene.gravity.0, [0.0, 0.0, -9.81]);
    assert_eq!(scene.solver, SolverKind::Jolt);
    assert_eq!(
        scene.rotation,
        impulse_lab::dynamics::rotation::RotationIntegrator::Theta { theta: 0.5 }
    );
    assert!(scene.bodies.is_empty() && scene.containers.is_empty());
    assert_eq!(scene.pack_friction, None);
    assert_eq!(scene.reference_angle, None);
    assert_eq!(scene.region_of_interest, None);
}

#[test]
fn shapes_convert_with_the_documented_sizes() {
    let scene = parse_scene(&fixture(), FILE).unwrap();
    // Cross: size is the bar length 3c (paper 000, Fig. 10c: 3c = 3.78 m → c = 1.26 m).
    match scene.bodies[5].shape.to_shape().unwrap() {
        impulse_lab::Shape::Cross { c } => assert!((c - 1.26).abs() < 1e-12, "c = {c}"),
        other => panic!("expected a cross, got {other:?}"),
    }
    // Cube of edge 1 → half-extents 0.5; cuboid size (2, 1, 0.5) → half (1, 0.5, 0.25).
    let half = |i: usize| match scene.bodies[i].shape.to_shape().unwrap() {
        impulse_lab::Shape::Cuboid { half_extents } => half_extents,
        other => panic!("expected a cuboid, got {other:?}"),
    };
    assert_eq!(half(2), impulse_lab::math::Vec3::repeat(0.5));
    assert_eq!(half(3), impulse_lab::math::Vec3::new(1.0, 0.5, 0.25));
    assert_eq!(half(4), impulse_lab::math::Vec3::new(0.5, 0.5, 0.25));
    // Regular tetrahedron of edge a: circumradius a√6/4, inradius a√6/12.
    let t = &scene.bodies[7].shape;
    assert!((t.bounding_radius() - 6f64.sqrt() / 4.0).abs() < 1e-12);
    assert!((t.inscribed_radius() - 6f64.sqrt() / 12.0).abs() < 1e-12);
    // Octahedron |x|+|y|+|z| ≤ 0.5: inradius 0.5/√3 (distance to a face), computed from
    // the hull, and the tetrahedron with a vertex at the origin has inradius 0.
    assert!((scene.bodies[9].shape.inscribed_radius() - 0.5 / 3f64.sqrt()).abs() < 1e-12);
    assert_eq!(scene.bodies[8].shape.inscribed_radius(), 0.0);
}

#[test]
fn orientations_follow_their_conventions() {
    let bodies = parse_scene(&fixture(), FILE)
        .unwrap()
        .expand_bodies()
        .unwrap();
    let ex = impulse_lab::math::Vec3::x();
    // AxisAngle((0,0,1), 45°) turns x to (1, 1, 0)/√2.
    let r = bodies[2].orientation * ex;
    assert!(
        (r - impulse_lab::math::Vec3::new(1.0, 1.0, 0.0) / 2f64.sqrt()).norm() < 1e-12,
        "{r:?}"
    );
    // Euler(yaw 30°) turns x to (cos 30°, sin 30°, 0).
    let r = bodies[3].orientation * ex;
    let c = 30f64.to_radians();
    assert!(
        (r - impulse_lab::math::Vec3::new(c.cos(), c.sin(), 0.0)).norm() < 1e-12,
        "{r:?}"
    );
    // Euler(pitch 90°) about y turns the rod axis z to +x.
    let r = bodies[10].orientation * impulse_lab::math::Vec3::z();
    assert!((r - ex).norm() < 1e-12, "{r:?}");
}

#[test]
fn slope_becomes_a_tilted_plane() {
    let scene = parse_scene(&fixture(), FILE).unwrap();
    // Slope of 30° falling towards +y: normal cos 30° ẑ + sin 30° ŷ = (0, 0.5, √3/2).
    match scene.containers[1].to_container() {
        Container::Plane { normal, .. } => {
            assert!(
                (normal - impulse_lab::math::Vec3::new(0.0, 0.5, 3f64.sqrt() / 2.0)).norm() < 1e-12,
                "{normal:?}"
            )
        }
        other => panic!("expected a plane, got {other:?}"),
    }
    match scene.containers[2].to_container() {
        Container::Box {
            walls, dividers, ..
        } => {
            assert_eq!(walls, [true, false, true, true], "only pos_x was removed");
            assert_eq!(dividers.len(), 1);
        }
        other => panic!("expected a box, got {other:?}"),
    }
}

#[test]
fn world_builds_containers_and_settings() {
    // No bodies: build_world then needs no mass properties.
    let mut scene = parse_scene(&fixture(), FILE).unwrap();
    scene.bodies.clear();
    scene.generators.clear();
    let world = scene.build_world().unwrap();
    assert_eq!(world.containers.len(), 5);
    assert_eq!(world.dt, 0.0016666666666666668);
    assert_eq!(world.gravity, impulse_lab::math::Vec3::new(0.0, 0.0, -9.81));
    assert_eq!(world.params.rest_velocity, 0.01);
    assert_eq!(world.solver_kind(), SolverKind::Jolt);
}

fn expanded(text: &str) -> Vec<PlacedBody> {
    parse_scene(text, FILE).unwrap().expand_bodies().unwrap()
}

#[test]
fn generators_are_deterministic_and_seeded() {
    let a = expanded(&fixture());
    let b = expanded(&fixture());
    assert_eq!(a, b, "same file, same bodies (bit for bit)");

    let (other_seed, _) = mutate("seed: 42", "seed: 43");
    let c = expanded(&other_seed);
    let generated = |v: &[PlacedBody]| -> Vec<PlacedBody> {
        v.iter()
            .filter(|p| matches!(p.origin, BodyOrigin::Generated { generator: 0, .. }))
            .cloned()
            .collect()
    };
    let (ga, gc) = (generated(&a), generated(&c));
    assert_eq!(ga.len(), gc.len());
    // Lattice sites do not depend on the seed; orientations, velocities and the shape
    // order do.
    assert!(ga.iter().zip(&gc).all(|(x, y)| x.position == y.position));
    assert!(
        ga.iter()
            .zip(&gc)
            .all(|(x, y)| x.orientation != y.orientation),
        "every orientation should change"
    );
    assert!(
        ga.iter().zip(&gc).any(|(x, y)| x.shape != y.shape),
        "the shuffled mix should change"
    );

    // Each generator has its own random stream: editing generator 1 leaves generator 0.
    let (edited, _) = mutate("count: 8,", "count: 5,");
    assert_eq!(generated(&expanded(&edited)), ga);
}

#[test]
fn generators_produce_the_requested_bodies() {
    let scene = parse_scene(&fixture(), FILE).unwrap();
    let bodies = scene.expand_bodies().unwrap();
    let GeneratorSpec::Lattice {
        region,
        spacing,
        velocity_jitter,
        angular_velocity_jitter,
        ..
    } = &scene.generators[0];
    let gen0: Vec<_> = bodies
        .iter()
        .filter(|p| matches!(p.origin, BodyOrigin::Generated { generator: 0, .. }))
        .collect();
    assert_eq!(gen0.len(), 40);
    // Mix 0.5 / 0.25 / 0.25 of 40 → exactly 20 spheres, 10 cubes, 10 crosses.
    let n = |name: &str| gen0.iter().filter(|p| p.shape.kind_name() == name).count();
    assert_eq!((n("sphere"), n("cube"), n("cross")), (20, 10, 10));
    for p in &gen0 {
        for k in 0..3 {
            // Sites at min + (i + ½) spacing, inside the region.
            let i = (p.position[k] - region.min.0[k]) / spacing - 0.5;
            assert!(
                (i - i.round()).abs() < 1e-9 && i >= -1e-9,
                "off-lattice {:?}",
                p.position
            );
            assert!(p.position[k] < region.max.0[k]);
            // Velocity (0, 0, −0.5) ± 0.1 per component; ω within ±0.5 rad/s.
            let v0 = [0.0, 0.0, -0.5][k];
            assert!((p.velocity[k] - v0).abs() <= *velocity_jitter);
            assert!(p.angular_velocity[k].abs() <= *angular_velocity_jitter);
        }
    }
    // The lattice is 7 × 7 per layer (5 m / 0.7 m), so 40 bodies fill one layer partly.
    assert!(gen0.iter().all(|p| (p.position.z - 0.35).abs() < 1e-12));
    // Jitter is really random: not all velocities equal.
    assert!(gen0.windows(2).any(|w| w[0].velocity != w[1].velocity));
    // Generator 1 has a fixed orientation.
    let gen1: Vec<_> = bodies
        .iter()
        .filter(|p| matches!(p.origin, BodyOrigin::Generated { generator: 1, .. }))
        .collect();
    assert_eq!(gen1.len(), 8);
    assert!(
        gen1.iter()
            .all(|p| p.orientation == impulse_lab::math::Quat::identity()
                && p.velocity.norm() == 0.0)
    );
}

#[test]
fn scene_round_trips_through_ron() {
    let scene = parse_scene(&fixture(), FILE).unwrap();
    let text = scene.to_ron().unwrap();
    let again = parse_scene(&text, "roundtrip.ron").unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(
        again.expand_bodies().unwrap(),
        scene.expand_bodies().unwrap()
    );
    assert_eq!(again.containers, scene.containers);
    assert_eq!(again.params, scene.params);
}

// ---- invalid input: syntax, unknown names -------------------------------------------

#[test]
fn syntax_error_names_line() {
    expect_error("seed: 42,", "seed: 42 43,", "seed");
    let msg = expect_error("kp: 0.2,", "kp: 0.2,,", "params");
    assert!(msg.contains(&format!("{FILE}:")), "{msg}");
}

#[test]
fn unknown_field_is_named() {
    expect_error("seed: 42,", "seeed: 42,", "seeed");
    expect_error("density: 2500.0,", "densty: 2500.0,", "bodies[1].densty");
    expect_error("kp: 0.2,", "k_p: 0.2,", "params.k_p");
}

#[test]
fn unknown_shape_and_container_are_named() {
    let msg = expect_error("Cube(edge: 1.0)", "Cubee(edge: 1.0)", "bodies[2].shape");
    assert!(
        msg.contains("Cubee") && msg.contains("Sphere"),
        "lists the valid shapes: {msg}"
    );
    let msg = expect_error("Cylinder(", "Cilinder(", "containers[3]");
    assert!(msg.contains("Cilinder"), "{msg}");
    expect_error(
        "Sphere(radius: 1.5)",
        "Sphere(radius: 1.5, colour: 3)",
        "bodies[0].shape.colour",
    );
}

#[test]
fn wrong_type_is_named() {
    expect_error("height: 4.0,", "height: \"tall\",", "containers[2].height");
    expect_error(
        "position: (10.0, 0.0, 4.0),",
        "position: (10.0, 4.0),",
        "bodies[1].position",
    );
}

#[test]
fn unknown_solver_is_named() {
    let msg = expect_error("solver: \"jolt\"", "solver: \"jelly\"", "solver");
    assert!(
        msg.contains("jelly") && msg.contains("etm"),
        "lists the valid names: {msg}"
    );
}

// ---- invalid values -------------------------------------------------------------------

#[test]
fn non_positive_sizes_are_rejected() {
    let msg = expect_error(
        "Sphere(radius: 0.5)",
        "Sphere(radius: -1)",
        "bodies[1].shape.radius",
    );
    assert!(msg.contains("> 0") && msg.contains("-1"), "{msg}");
    expect_error("Cube(edge: 1.0)", "Cube(edge: 0)", "bodies[2].shape.edge");
    expect_error(
        "size: (2.0, 1.0, 0.5)",
        "size: (2.0, 0.0, 0.5)",
        "bodies[3].shape.size",
    );
    expect_error(
        "Cross(size: 3.78)",
        "Cross(size: -3.78)",
        "bodies[5].shape.size",
    );
    expect_error(
        "semi_axes: (1.0, 0.5, 0.25)",
        "semi_axes: (1.0, -0.5, 0.25)",
        "bodies[6].shape.semi_axes",
    );
    expect_error(
        "Rod(length: 2.0",
        "Rod(length: 0.0",
        "bodies[10].shape.length",
    );
    expect_error(
        "radius: 2.0, height: 3.0",
        "radius: 0.0, height: 3.0",
        "containers[3].radius",
    );
    expect_error(
        "half_size: (6.0, 3.0)",
        "half_size: (6.0, -3.0)",
        "containers[2].half_size",
    );
    expect_error("density: 2500.0,", "density: 0.0,", "bodies[1].density");
    expect_error("spacing: 0.7,", "spacing: 0.0,", "generators[0].spacing");
}

#[test]
fn ambiguous_or_degenerate_shapes_are_rejected() {
    expect_error(
        "Cuboid(size: (2.0, 1.0, 0.5))",
        "Cuboid(size: (2.0, 1.0, 0.5), half_extents: (1.0, 0.5, 0.25))",
        "bodies[3].shape",
    );
    let msg = expect_error(
        "(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)",
        "(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0)",
        "bodies[8].shape.vertices",
    );
    assert!(msg.contains("plane"), "{msg}");
    // A vertex on its own line is reported on that line.
    expect_error(
        "(0.0, 0.0, 0.5), (0.0, 0.0, -0.5),",
        "(0.0, 0.0, 0.5), (0.0, 0.0, NaN),",
        "bodies[9].shape.vertices[5]",
    );
}

#[test]
fn non_finite_numbers_are_rejected() {
    // RON spells NaN and infinities, and 1e999 overflows to infinity.
    expect_error(
        "gravity: (0.0, 0.0, -9.81)",
        "gravity: (0.0, NaN, -9.81)",
        "gravity",
    );
    expect_error(
        "velocity: (0.0, 0.0, -1.0)",
        "velocity: (0.0, 0.0, -inf)",
        "bodies[1].velocity",
    );
    expect_error(
        "position: (14.0, 0.0, 0.5)",
        "position: (1e999, 0.0, 0.5)",
        "bodies[2].position",
    );
    expect_error("friction: 0.3,", "friction: NaN,", "params.friction");
    expect_error("theta: 0.5", "theta: inf", "rotation.theta");
    expect_error(
        "angle_deg: 45",
        "angle_deg: NaN",
        "bodies[2].orientation.angle_deg",
    );
    expect_error(
        "velocity_jitter: 0.1,",
        "velocity_jitter: +inf,",
        "generators[0].velocity_jitter",
    );
}

#[test]
fn every_number_in_the_fixture_is_checked_for_nan_and_infinity() {
    // Replace each numeric literal in turn by NaN, inf and 1e999: each must be rejected
    // at its own line (vectors report the line of their field name, which the fixture
    // keeps on the same line as the numbers, except polyhedron vertices which report
    // the vertex).
    let text = fixture();
    let numbers = numeric_literals(&text);
    assert!(numbers.len() > 100, "found {} numbers", numbers.len());
    for &(start, end) in &numbers {
        let line = text[..start].matches('\n').count() + 1;
        for bad in ["NaN", "inf", "-inf", "1e999"] {
            let mutated = format!("{}{bad}{}", &text[..start], &text[end..]);
            let err = parse_scene(&mutated, FILE).err().unwrap_or_else(|| {
                panic!(
                    "{bad} at line {line} (`{}`) was accepted",
                    &text[start..end]
                )
            });
            let msg = err.to_string();
            assert!(
                msg.starts_with(&format!("{FILE}:{line}:")),
                "{bad} at line {line}: {msg}"
            );
            assert!(
                !err.field.is_empty(),
                "{bad} at line {line}: no field in {msg}"
            );
        }
    }
}

/// Byte ranges of the numeric literals of `text`, skipping comments and strings.
fn numeric_literals(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += 1;
                }
                i += 1;
            }
            c if c.is_ascii_digit()
                || (c == b'-' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) =>
            {
                let start = i;
                i += 1;
                while i < b.len()
                    && (b[i].is_ascii_digit()
                        || b".eE".contains(&b[i])
                        || (b"+-".contains(&b[i]) && b"eE".contains(&b[i - 1])))
                {
                    i += 1;
                }
                out.push((start, i));
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    out
}

#[test]
fn solver_parameters_out_of_range_are_rejected() {
    let msg = expect_error(
        "restitution: 0.3,",
        "restitution: 1.5,",
        "params.restitution",
    );
    assert!(msg.contains("[0, 1]") && msg.contains("1.5"), "{msg}");
    expect_error(
        "restitution: 0.3,",
        "restitution: -0.1,",
        "params.restitution",
    );
    expect_error("friction: 0.3,", "friction: -0.2,", "params.friction");
    expect_error("lambda: 30.0,", "lambda: 0.5,", "params.lambda");
    expect_error("kp: 0.2,", "kp: 1.5,", "params.kp");
    expect_error("kp: 0.2,", "kp: -0.1,", "params.kp");
    expect_error(
        "pack_friction: 0.25,",
        "pack_friction: -0.1,",
        "pack_friction",
    );
    let msg = expect_error(
        "angle_deg: 19.7,",
        "angle_deg: 95.0,",
        "reference_angle.angle_deg",
    );
    assert!(msg.contains("[0, 90]"), "{msg}");
    expect_error(
        "source: \"Zhou et al. 2002\"",
        "source: \" \"",
        "reference_angle.source",
    );
    let msg = expect_error(
        "max: (12.0, 6.0, 9.0)",
        "max: (12.0, 6.0, -1.0)",
        "region_of_interest",
    );
    assert!(msg.contains("below max"), "{msg}");
    expect_error(
        "max: (12.0, 6.0, 9.0)",
        "max: (12.0, inf, 9.0)",
        "region_of_interest.max",
    );
}

#[test]
fn non_positive_time_step_is_rejected() {
    expect_error("dt: 0.0016666666666666668,", "dt: 0.0,", "dt");
    let msg = expect_error("dt: 0.0016666666666666668,", "dt: -0.01,", "dt");
    assert!(msg.contains("> 0"), "{msg}");
    expect_error("duration: 2.5,", "duration: 0.0,", "duration");
}

#[test]
fn other_semantic_errors_are_located() {
    expect_error(
        "angle_deg: 30.0",
        "angle_deg: 90.0",
        "containers[1].angle_deg",
    );
    expect_error(
        "downhill: (0.0, 1.0, 0.0)",
        "downhill: (0.0, 1.0, 1.0)",
        "containers[1].downhill",
    );
    expect_error(
        "[(x: 0.0, present: true)]",
        "[(x: 7.0, present: true)]",
        "containers[2].dividers",
    );
    expect_error(
        "Quaternion(w: 1.0,",
        "Quaternion(w: 2.0,",
        "bodies[4].orientation",
    );
    expect_error(
        "axis: (0, 0, 1)",
        "axis: (0, 0, 0)",
        "bodies[2].orientation.axis",
    );
    expect_error(
        "static: true,",
        "static: true, velocity: (1, 0, 0),",
        "bodies[0].static",
    );
    expect_error("count: 40,", "count: 4000,", "generators[0].count");
    expect_error("count: 40,", "count: 0,", "generators[0].count");
    expect_error(
        "fraction: 0.5",
        "fraction: -0.5",
        "generators[0].mix[0].fraction",
    );
    expect_error(
        "max: (2.5, 1.0, 1.0)",
        "max: (0.5, 1.0, 1.0)",
        "generators[1].region",
    );
    expect_error(
        "Lattice(\n            count: 8,",
        "Lattice(\n            count: 8, mix: [(shape: Cube(edge: 0.1))],",
        "generators[1]",
    );
    expect_error(
        "description: \"A slope",
        "description: \"Two\\nlines; a slope",
        "description",
    );
}

// ---- overlaps -------------------------------------------------------------------------

#[test]
fn overlapping_spheres_are_rejected() {
    // Ball of radius 0.5 moved to 1.0 m above the static sphere (radius 1.5): centres
    // 1.0 m apart < 0.5 + 1.5 m.
    let msg = expect_error(
        "position: (10.0, 0.0, 4.0)",
        "position: (10.0, 0.0, 2.5)",
        "bodies[1].position",
    );
    assert!(msg.contains("overlaps bodies[0]"), "{msg}");
    // Exactly touching (distance 2.0 = 0.5 + 1.5) is allowed.
    let (text, _) = mutate("position: (10.0, 0.0, 4.0)", "position: (10.0, 0.0, 3.5)");
    parse_scene(&text, FILE).expect("touching spheres are valid");
}

#[test]
fn overlap_needs_certainty_for_other_shapes() {
    // Cube (edge 1, inscribed radius 0.5) next to the ball (radius 0.5): centres 0.9 m
    // apart is a certain overlap; 1.2 m apart is not certain (a rotated cube's corner
    // reaches 0.87 m) and is accepted.
    let (text, line) = mutate("position: (14.0, 0.0, 0.5)", "position: (10.0, 0.9, 4.0)");
    let msg = parse_scene(&text, FILE).unwrap_err().to_string();
    assert!(
        msg.starts_with(&format!("{FILE}:{line}:")) && msg.contains("bodies[2].position"),
        "{msg}"
    );
    let (text, _) = mutate("position: (14.0, 0.0, 0.5)", "position: (10.0, 1.2, 4.0)");
    parse_scene(&text, FILE).expect("possible but uncertain overlap is not reported");
}

#[test]
fn generator_spacing_too_small_is_rejected() {
    // Spheres of radius 0.2 at spacing 0.3 overlap their neighbours (0.3 < 0.4).
    expect_error("spacing: 0.5,", "spacing: 0.3,", "generators[1].spacing");
    // Generated bodies overlapping an explicit body: move generator 1's region onto the
    // ball at (10, 0, 4).
    expect_error(
        "region: (min: (0.5, -1.0, 0.0), max: (2.5, 1.0, 1.0))",
        "region: (min: (9.0, -1.0, 3.5), max: (11.0, 1.0, 4.5))",
        "generators[1].region",
    );
}

#[test]
fn bodies_through_the_ground_are_rejected() {
    let msg = expect_error(
        "position: (22.0, 8.0, 0.25)",
        "position: (22.0, 8.0, 0.1)",
        "bodies[6].position",
    );
    assert!(msg.contains("containers[0]"), "{msg}");
    // Generated bodies below a box floor (z < inscribed radius).
    expect_error(
        "region: (min: (-5.5, -2.5, 0.0)",
        "region: (min: (-5.5, -2.5, -0.5)",
        "generators[0].region",
    );
}

// ---- files and robustness -------------------------------------------------------------

#[test]
fn missing_file_is_an_io_error() {
    let err = load_scene(Path::new("tests/fixtures/no_such_scene.ron")).unwrap_err();
    assert_eq!(err.kind, SceneErrorKind::Io);
    assert_eq!(err.exit_code(), 2);
    assert_eq!(err.kind, SceneErrorKind::Io);
    assert!(
        err.to_string()
            .starts_with("tests/fixtures/no_such_scene.ron: "),
        "{err}"
    );
}

#[test]
fn errors_display_file_line_column_field() {
    let (text, line) = mutate("Sphere(radius: 0.5)", "Sphere(radius: -1)");
    let err = parse_scene(&text, "scenes/foo.ron").unwrap_err();
    // `radius` is at column 27 of `            shape: Sphere(radius: -1),`.
    assert_eq!(
        err.to_string(),
        format!("scenes/foo.ron:{line}:27: bodies[1].shape.radius: must be finite and > 0, got -1")
    );
    assert_eq!((err.line, err.column), (Some(line), Some(27)));
}

#[test]
fn code_built_scene_reports_without_position() {
    let mut scene = Scene::new("built in code");
    scene.containers.push(ContainerSpec::Cylinder {
        base: Default::default(),
        radius: -1.0,
        height: 1.0,
    });
    let err = scene.validate().unwrap_err();
    assert_eq!(err.line, None);
    assert_eq!(
        err.to_string(),
        "<scene 'built in code'>: containers[0].radius: must be finite and > 0, got -1"
    );
    let _ = ShapeSpec::Sphere { radius: 1.0 };
}

#[test]
fn mutated_fixtures_never_panic() {
    // Deterministic sweep: delete each character in turn (every syntax position).
    let text = fixture();
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (k, &(i, c)) in chars.iter().enumerate() {
        let mutated = format!("{}{}", &text[..i], &text[i + c.len_utf8()..]);
        let _ = parse_scene(&mutated, FILE);
        if k % 7 == 0 {
            let _ = parse_scene(&text[..i], FILE);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn parse_scene_never_panics_on_edits(
        edits in prop::collection::vec((0usize..10_000, 0usize..6, "[ -~\n]{0,8}"), 1..6)
    ) {
        let mut text = fixture();
        for (at, op, s) in edits {
            let mut at = at % (text.len() + 1);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            match op {
                0 => text.insert_str(at, &s),
                1 => { let end = (at + s.len()).min(text.len()); if text.is_char_boundary(end) { text.replace_range(at..end, ""); } }
                2 => text.insert_str(at, ["(", ")", "[", "]", ",", ":", "\"", "/*", "NaN", "-1", "1e999", "r#\""][s.len() % 12]),
                3 => { let end = (at + s.len()).min(text.len()); if text.is_char_boundary(end) { text.replace_range(at..end, &s); } }
                4 => { let num = ["0", "-0.0", "1e308", "18446744073709551616", "-inf", "0x1"][s.len() % 6]; text.insert_str(at, num); }
                _ => text.truncate(at),
            }
        }
        let _ = parse_scene(&text, FILE);
    }

    #[test]
    fn parse_scene_never_panics_on_noise(text in "\\PC{0,200}") {
        let _ = parse_scene(&text, FILE);
    }
}

#[test]
fn scene_format_examples_are_valid_scenes() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/scene-format.md"))
            .unwrap();
    let blocks: Vec<&str> = readme
        .split("```ron\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .collect();
    assert_eq!(blocks.len(), 2, "the minimal and the complete example");
    for b in blocks {
        let scene = parse_scene(b, "docs/scene-format.md").unwrap_or_else(|e| panic!("{e}"));
        assert!(!scene.expand_bodies().unwrap().is_empty());
    }
}

#[test]
fn world_builds_every_body_of_the_fixture() {
    let scene = parse_scene(&fixture(), FILE).unwrap();
    let placed = scene.expand_bodies().unwrap();
    let world = scene.build_world().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(world.bodies.len(), placed.len());
    // Static sphere: infinite mass, no motion.
    assert!(world.bodies[0].is_static());
    // Ball of radius 0.5 at 2500 kg/m³: m = 2500 · 4/3 π 0.5³ = 1308.997 kg.
    let m = 2500.0 * 4.0 / 3.0 * std::f64::consts::PI * 0.125;
    assert!(
        (world.bodies[1].mass - m).abs() < 1e-9 * m,
        "{}",
        world.bodies[1].mass
    );
    assert_eq!(
        world.bodies[1].velocity,
        impulse_lab::math::Vec3::new(0.0, 0.0, -1.0)
    );
    // Cross of size 3.78 at 1000 kg/m³: volume 7c³ with c = 1.26 m.
    let v = 7.0 * 1.26f64.powi(3);
    assert!(
        (world.bodies[5].mass - 1000.0 * v).abs() < 1e-9 * v * 1000.0,
        "{}",
        world.bodies[5].mass
    );
    // Every symmetric shape keeps its position (centre of mass at the shape origin).
    for (b, p) in world.bodies.iter().zip(&placed).take(8) {
        assert!((b.position - p.position).norm() < 1e-12, "{}", p.describe());
    }
    // Generated bodies carry their jittered velocities.
    for (b, p) in world.bodies.iter().zip(&placed).skip(11) {
        assert_eq!(b.velocity, p.velocity);
        assert_eq!(b.angular_velocity, p.angular_velocity);
    }
}

#[test]
fn extreme_inputs_are_errors_not_panics() {
    let deep = format!("(name: \"deep\", bodies: [{}])", "(".repeat(50_000));
    assert!(parse_scene(&deep, FILE).is_err());
    let (huge, _) = mutate("count: 40,", "count: 18446744073709551615,");
    assert!(
        parse_scene(&huge, FILE)
            .unwrap_err()
            .to_string()
            .contains("generators[0].count")
    );
    // A tiny spacing gives an astronomically large lattice; only `count` sites are used.
    let (tiny, _) = mutate("spacing: 0.5,", "spacing: 1e-300,");
    let err = parse_scene(&tiny, FILE).unwrap_err().to_string();
    assert!(
        err.contains("generators[1].spacing") && err.contains("overlaps"),
        "{err}"
    );
    for text in [
        "",
        "Scene",
        "Scene(",
        "(name: \"a\", seed: -1)",
        "(name: \"a\", dt: 1e-320)",
        "\u{feff}(name: \"a\")",
    ] {
        let _ = parse_scene(text, FILE);
    }
}

/// Regression: a file ending in `b` (the start of a byte-string prefix) made the error
/// locator index one past the end of the text and panic (found by
/// `parse_scene_never_panics_on_noise`).
#[test]
fn text_ending_in_byte_string_prefix_is_an_error_not_a_panic() {
    for text in [
        "b",
        "Scene(name: b",
        "(bodies: [b",
        "Scene(\n    name: \"x\",\n)\nb",
    ] {
        assert!(
            impulse_lab::scene::parse_scene(text, "tail.ron").is_err(),
            "{text:?} must be rejected"
        );
    }
}

/// Issue 44: a file starting with a UTF-8 byte-order mark (as some editors write) was
/// rejected with "Expected opening `(`"; the mark is skipped and the scene is the same.
#[test]
fn a_byte_order_mark_is_skipped() {
    let plain = parse_scene(&fixture(), FILE).unwrap();
    let marked = parse_scene(&format!("\u{feff}{}", fixture()), FILE).unwrap();
    assert_eq!(marked.to_ron().unwrap(), plain.to_ron().unwrap());
}

/// Issue 44: dt is checked against the fastest body of a new scene (here 100 m/s at
/// 0.01 s moves 1 m per step past a 0.5 m sphere), but not in a saved run, which
/// continues at speeds its own run reached with that dt.
#[test]
fn dt_is_checked_against_the_speeds_of_a_new_scene_only() {
    let scene = |resume: &str| {
        format!(
            r#"Scene(
    name: "fast",
    dt: 0.01,
    bodies: [Body(shape: Sphere(radius: 0.5), position: (0.0, 0.0, 1.0), velocity: (100.0, 0.0, 0.0))],
    {resume}
)"#
        )
    };
    let e = parse_scene(&scene(""), "fast.ron").unwrap_err();
    assert_eq!(e.field, "dt", "{e}");
    assert!(
        e.message
            .contains("moves 1 m per step, more than the inscribed radius"),
        "{e}"
    );
    parse_scene(&scene("resume: Resume(step: 10, time: 0.1),"), "fast.ron").unwrap();
}
