//! The angle-of-repose experiment (paper 000, §7.5): the 8 × 16 measurement on synthetic
//! piles of known slope, the scripted experiment on a small pile, and the `repose` /
//! `merge` commands (determinism across `--jobs`, shards, bad input).

use impulse_lab::body::RigidBody;
use impulse_lab::math::{Quat, Vec3};
use impulse_lab::repose::measure::{self, highest_point_in_cell};
use impulse_lab::repose::{COLUMNS, Phase, ROWS, ReposeConfig, ReposeExperiment, ReposeGrid};
use impulse_lab::shapes::Shape;
use rand::{Rng, SeedableRng};
use std::process::{Command, Output};

/// The paper's floor here: the 60 m × 30 m box of `scenes/repose_*.ron`, cells 3.75 m.
fn floor(downhill_positive: bool) -> ReposeGrid {
    ReposeGrid::new(Vec3::zeros(), [30.0, 15.0], downhill_positive).unwrap()
}

fn sphere(c: Vec3, r: f64) -> RigidBody {
    RigidBody::new(&Shape::Sphere { radius: r }, 2500.0, c, Quat::identity())
}

/// A monolayer of spheres (r = 1.5 m, the paper's a = 3 m) whose centres lie on the
/// plane z = z₀ − s·x tan θ (s = +1: falling towards +x), on a square lattice of
/// horizontal pitch `pitch`, covering the floor and beyond.
fn sphere_plane(theta_deg: f64, sign: f64, pitch: f64) -> Vec<RigidBody> {
    let t = theta_deg.to_radians().tan();
    let mut out = Vec::new();
    let n = (70.0 / pitch) as i32;
    for i in -n / 2..=n / 2 {
        for j in -(40.0 / pitch) as i32 / 2..=(40.0 / pitch) as i32 / 2 {
            let (x, y) = (i as f64 * pitch + 0.37, j as f64 * pitch + 0.21);
            out.push(sphere(Vec3::new(x, y, 30.0 - sign * x * t), 1.5));
        }
    }
    out
}

#[test]
fn tilted_plane_of_spheres_gives_its_angle() {
    // The pitch 3.1 m is incommensurate with the 3.75 m cells, so the highest point of a
    // cell is sometimes a sphere's top and sometimes its flank at the cell's uphill side:
    // the per-cell points scatter about the plane by up to about a radius, and the
    // least-squares lines average that out.
    for theta in [0.0, 10.0, 25.0, 35.0] {
        for (sign, downhill) in [(1.0, true), (-1.0, false)] {
            let bodies = sphere_plane(theta, sign, 3.1);
            let m = measure::measure(&floor(downhill), &bodies, |_| false).unwrap();
            assert_eq!(
                m.empty_cells, 0,
                "θ = {theta}: a full layer covers every cell"
            );
            assert_eq!(m.rows_fitted, ROWS);
            assert!(
                (m.angle_deg - theta).abs() < 0.5,
                "θ = {theta}°, downhill {downhill}: measured {}° (rows {:?})",
                m.angle_deg,
                m.row_angles_deg
            );
            for a in m.row_angles_deg {
                assert!((a - theta).abs() < 0.5, "θ = {theta}: row angle {a}");
            }
        }
    }
}

#[test]
fn flat_layer_of_spheres_gives_zero() {
    // Pitch 3 m < 3.75 m: every cell holds a sphere's centre, so every cell's highest
    // point is a top at z = r exactly and every line is flat.
    let mut bodies = Vec::new();
    for i in 0..20 {
        for j in 0..10 {
            let (x, y) = (-28.5 + 3.0 * i as f64, -13.5 + 3.0 * j as f64);
            bodies.push(sphere(Vec3::new(x, y, 1.5), 1.5));
        }
    }
    let m = measure::measure(&floor(true), &bodies, |_| false).unwrap();
    assert_eq!(m.empty_cells, 0);
    for row in &m.highest {
        for p in row {
            assert_eq!(
                p.unwrap().z,
                3.0,
                "every cell's highest point is a sphere top"
            );
        }
    }
    assert_eq!(m.angle_deg, 0.0);
    assert_eq!(m.error_deg, 0.0);
}

/// Cubes of edge b = 2.4 m (the paper's) turned by θ about y, touching along the slope,
/// so their top faces tile the plane through their top faces exactly.
fn cube_plane(theta_deg: f64, z0: f64) -> Vec<RigidBody> {
    let th = theta_deg.to_radians();
    let b = 2.4;
    let q = Quat::from_axis_angle(&Vec3::y_axis(), th);
    let along = Vec3::new(th.cos(), 0.0, -th.sin());
    let mut out = Vec::new();
    for i in -16..=16 {
        for j in -7..=7 {
            let c = Vec3::new(0.0, 2.5 * j as f64, z0) + b * i as f64 * along;
            out.push(RigidBody::new(
                &Shape::Cuboid {
                    half_extents: Vec3::repeat(b / 2.0),
                },
                2500.0,
                c,
                q,
            ));
        }
    }
    out
}

#[test]
fn tilted_plane_of_cubes_gives_its_angle() {
    // The top surface is exactly planar, so each cell's highest point lies on that plane
    // (on the cell's uphill side) and every line has the plane's slope to rounding.
    for theta in [0.0, 12.0, 30.0, 40.0] {
        let m = measure::measure(&floor(true), &cube_plane(theta, 30.0), |_| false).unwrap();
        assert_eq!(m.empty_cells, 0, "θ = {theta}");
        assert!(
            (m.angle_deg - theta).abs() < 1e-9,
            "θ = {theta}°: measured {}°",
            m.angle_deg
        );
        assert!(m.error_deg < 1e-9, "θ = {theta}: error {}", m.error_deg);
        // The fitted lines, drawn in the world, lie on the cubes' top plane
        // z = 30 + 1.2 / cos θ − x tan θ, at the floor's two ends.
        let th = theta.to_radians();
        for (j, line) in m.lines.iter().enumerate() {
            let ends = floor(true).line_world(j, *line).unwrap();
            assert_eq!([ends[0].x, ends[1].x], [-30.0, 30.0]);
            for e in ends {
                let plane = 30.0 + 1.2 / th.cos() - e.x * th.tan();
                assert!(
                    (e.z - plane).abs() < 1e-9,
                    "row {j}: {e:?} vs plane {plane}"
                );
            }
        }
    }
}

/// The height of the box of half-extents h at (x, y): the top of the vertical line's
/// interval inside it (slab method), or −∞.
fn box_height_at(body: &RigidBody, h: &Vec3, x: f64, y: f64) -> f64 {
    let iso = body.isometry();
    let o = iso
        .inverse_transform_point(&Vec3::new(x, y, 0.0).into())
        .coords;
    let d = iso.inverse_transform_vector(&Vec3::z());
    let (mut lo, mut hi) = (f64::NEG_INFINITY, f64::INFINITY);
    for k in 0..3 {
        if d[k].abs() < 1e-15 {
            if o[k].abs() > h[k] {
                return f64::NEG_INFINITY;
            }
        } else {
            let (a, b) = ((-h[k] - o[k]) / d[k], (h[k] - o[k]) / d[k]);
            lo = lo.max(a.min(b));
            hi = hi.min(a.max(b));
        }
    }
    if lo <= hi { hi } else { f64::NEG_INFINITY }
}

#[test]
fn highest_point_of_rotated_cubes_and_crosses_matches_brute_force() {
    // Against a dense sampling of the cell (401² vertical lines): the exact maximum is
    // never below the sampled one, and exceeds it by at most the sampling step times the
    // steepest face slope (bounded here by rejecting faces steeper than 80°).
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(6);
    let rect = [0.0, 3.75, 0.0, 3.75];
    let n = 400;
    let step = 3.75 / n as f64;
    let mut checked = 0;
    while checked < 12 {
        let q = Quat::from_euler_angles(
            rng.random_range(-3.1..3.1),
            rng.random_range(-1.5..1.5),
            rng.random_range(-3.1..3.1),
        );
        let cross = checked % 2 == 1;
        let shape = if cross {
            Shape::Cross { c: 1.26 }
        } else {
            Shape::Cuboid {
                half_extents: Vec3::repeat(1.2),
            }
        };
        let c = Vec3::new(
            rng.random_range(-1.0..4.75),
            rng.random_range(-1.0..4.75),
            5.0,
        );
        let body = RigidBody::new(&shape, 2500.0, c, q);
        let r = body.orientation.to_rotation_matrix();
        if (0..3).any(|k| r[(2, k)].abs() < 10f64.to_radians().sin()) {
            continue; // a near-vertical face: the sampling bound below would be loose
        }
        let pieces: Vec<Vec3> = match &body.shape {
            Shape::Cross { c } => Shape::cross_bars(*c).to_vec(),
            Shape::Cuboid { half_extents } => vec![*half_extents],
            _ => unreachable!(),
        };
        let mut sampled = f64::NEG_INFINITY;
        for i in 0..=n {
            for j in 0..=n {
                let (x, y) = (i as f64 * step, j as f64 * step);
                for h in &pieces {
                    sampled = sampled.max(box_height_at(&body, h, x, y));
                }
            }
        }
        let exact = highest_point_in_cell(&body, &rect).unwrap();
        match exact {
            None => assert_eq!(sampled, f64::NEG_INFINITY, "missed a body over the cell"),
            Some(p) => {
                assert!(p.x >= -1e-9 && p.x <= 3.75 + 1e-9 && p.y >= -1e-9 && p.y <= 3.75 + 1e-9);
                let slope = 80f64.to_radians().tan();
                assert!(
                    p.z >= sampled - 1e-9 && p.z <= sampled + 2.0 * step * slope,
                    "cross {cross}: exact {} vs sampled {sampled}",
                    p.z
                );
            }
        }
        checked += 1;
    }
}

#[test]
fn error_is_half_the_spread_and_empty_cells_are_left_out() {
    // Rows j with slopes θ_j = 20° + j°, occupying only the 10 uphill columns; row 7 empty.
    let grid = floor(true);
    let mut highest = [[None; COLUMNS]; ROWS];
    for (j, row) in highest.iter_mut().enumerate().take(ROWS - 1) {
        let t = (20.0 + j as f64).to_radians().tan();
        for (i, cell) in row.iter_mut().enumerate().take(10) {
            let x = -30.0 + 3.75 * (i as f64 + 0.3);
            *cell = Some(Vec3::new(x, 0.0, 40.0 - x * t));
        }
    }
    let m = measure::from_highest(&grid, highest);
    assert_eq!(m.empty_cells, 6 * 7 + 16);
    assert_eq!(m.rows_fitted, 7);
    assert!(m.row_angles_deg[7].is_nan());
    // θ̄ = mean of 20°..26° = 23°, ε = ½ (26° − 20°) = 3°   (paper 000, §7.5)
    assert!((m.angle_deg - 23.0).abs() < 1e-9, "{}", m.angle_deg);
    assert!((m.error_deg - 3.0).abs() < 1e-9, "{}", m.error_deg);
    // The height profile: per column the mean of the 7 rows' heights, 0 where bare.
    let profile = m.column_profile();
    for (i, z) in profile.iter().enumerate() {
        let x = -30.0 + 3.75 * (i as f64 + 0.3);
        let want = if i < 10 {
            (0..7)
                .map(|j| 40.0 - x * (20.0 + j as f64).to_radians().tan())
                .sum::<f64>()
                / 7.0
        } else {
            0.0
        };
        assert!((z - want).abs() < 1e-9, "column {i}: {z} against {want}");
    }
}

/// A run is flagged when its angle is doubtful: a phase ended at the time cap, the pile
/// kept a standing face (more than a quarter of the cells bare), or bodies were lost; a
/// settled slope across the whole floor has no caveat.
#[test]
fn caveats_flag_capped_phases_standing_faces_and_lost_bodies() {
    use impulse_lab::repose::{PhaseReport, ReposeResult};
    let grid = floor(true);
    // A 30° slope over the first `cols` columns of every row.
    let pile = |cols: usize| {
        let mut highest = [[None; COLUMNS]; ROWS];
        let t = 30f64.to_radians().tan();
        for row in highest.iter_mut() {
            for (i, cell) in row.iter_mut().enumerate().take(cols) {
                let x = -30.0 + 3.75 * (i as f64 + 0.5);
                *cell = Some(Vec3::new(x, 0.0, 40.0 - x * t));
            }
        }
        measure::from_highest(&grid, highest)
    };
    let settled = PhaseReport {
        duration: 12.0,
        settled: true,
        ke_ratio: 5e-7,
    };
    let good = ReposeResult {
        measurement: pile(COLUMNS),
        packing: settled,
        slumping: settled,
        bodies_lost: 0,
        pack_friction: 0.3,
        drum: None,
    };
    assert!(good.caveats().is_empty(), "{:?}", good.caveats());
    // 12 of 16 columns: 32 bare cells, exactly a quarter: still no caveat.
    let quarter = ReposeResult {
        measurement: pile(12),
        ..good.clone()
    };
    assert_eq!(quarter.measurement.empty_cells, 32);
    assert!(quarter.caveats().is_empty(), "{:?}", quarter.caveats());
    // 11 columns: 40 bare cells.
    let standing = ReposeResult {
        measurement: pile(11),
        ..good.clone()
    };
    let c = standing.caveats();
    assert_eq!(c.len(), 1, "{c:?}");
    assert!(
        c[0].starts_with("40 of 128 cells are bare floor"),
        "{}",
        c[0]
    );
    let capped = ReposeResult {
        slumping: PhaseReport {
            duration: 30.0,
            settled: false,
            ke_ratio: 3e-5,
        },
        bodies_lost: 2,
        ..good.clone()
    };
    let c = capped.caveats();
    assert_eq!(c.len(), 2, "{c:?}");
    assert!(
        c[0].starts_with("slumping reached the time cap after 30.0 s with K/ΔU = 3.0e-5"),
        "{}",
        c[0]
    );
    assert_eq!(c[1], "2 bodies left the container");
}

fn tiny_world() -> impulse_lab::World {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/repose_tiny.ron"
    );
    impulse_lab::scene::load_scene(std::path::Path::new(path))
        .unwrap()
        .build_world()
        .unwrap()
}

#[test]
fn experiment_packs_removes_the_wall_and_the_pile_slumps() {
    let config = ReposeConfig {
        max_time: 1.5,
        ..Default::default()
    };
    let mut exp = ReposeExperiment::new(tiny_world(), config).unwrap();
    let max_x = |e: &ReposeExperiment| {
        e.world
            .bodies
            .iter()
            .map(|b| b.position.x)
            .fold(f64::NEG_INFINITY, f64::max)
    };
    while exp.phase() == Phase::Packing {
        exp.step().unwrap();
        // The divider holds: no centre crosses x = 0 − r while it stands.
        assert!(
            max_x(&exp) < 0.0,
            "t = {}: a body crossed the wall",
            exp.world.time
        );
    }
    let packing = *exp.packing().unwrap();
    assert!(packing.duration <= 1.5 + 1e-9);
    // Packed behind the wall at x = 0: only the 8 uphill columns (x < 0) are occupied.
    let before = exp.measure_now().unwrap();
    let occupied = |m: &impulse_lab::repose::ReposeMeasurement, cols: std::ops::Range<usize>| {
        m.highest
            .iter()
            .map(|row| row[cols.clone()].iter().flatten().count())
            .sum::<usize>()
    };
    // The downhill half holds at most slivers of spheres pressed into the wall: contact
    // overlaps (below 1% of the radius, the settle criterion) put material just past
    // x = 0, and the measurement rightly counts it.
    for row in &before.highest {
        for p in row[COLUMNS / 2..].iter().flatten() {
            assert!(p.x < 0.005, "material {} m past the wall", p.x);
        }
    }
    assert!(occupied(&before, 0..COLUMNS / 2) > 0);
    let result = exp.run(|_| {}).unwrap().clone();
    assert_eq!(exp.phase(), Phase::Done);
    assert_eq!(result.bodies_lost, 0);
    // Without the wall, the pile spread into the empty half: bodies beyond the wall's
    // plane, and cells there occupied.
    assert!(max_x(&exp) > 0.5, "max x after slumping: {}", max_x(&exp));
    let m = &result.measurement;
    assert!(occupied(m, COLUMNS / 2..COLUMNS) > 0);
    assert_eq!(m.rows_fitted, ROWS);
    assert!(m.angle_deg.is_finite() && m.error_deg >= 0.0);
}

#[test]
fn experiment_refuses_a_box_without_divider() {
    let mut world = tiny_world();
    if let impulse_lab::Container::Box { dividers, .. } = &mut world.containers[0] {
        dividers.clear();
    }
    let e = ReposeExperiment::new(world, ReposeConfig::default())
        .err()
        .unwrap();
    assert!(e.to_string().contains("divider"), "{e}");
}

/// Paper 000 §7.5 packs its stacks at μ = 0.3 (Fig. 11) and repositions them at each μ:
/// with `pack_friction` the packing phase runs at that μ whatever the run's, and the
/// wall's removal brings the run's μ back.
#[test]
fn pack_friction_packs_every_run_alike_and_the_wall_brings_the_runs_mu_back() {
    let run = |mu: f64, pack: Option<f64>| {
        let mut world = tiny_world();
        world.params.friction = mu;
        let config = ReposeConfig {
            max_time: 1.5,
            pack_friction: pack,
            ..Default::default()
        };
        let mut exp = ReposeExperiment::new(world, config).unwrap();
        while exp.phase() == Phase::Packing {
            assert_eq!(exp.world.params.friction, pack.unwrap_or(mu));
            exp.step().unwrap();
        }
        assert_eq!(
            exp.world.params.friction, mu,
            "the wall's removal restores μ"
        );
        let packed: Vec<Vec3> = exp.world.bodies.iter().map(|b| b.position).collect();
        let result = exp.run(|_| {}).unwrap().clone();
        assert_eq!(result.pack_friction, pack.unwrap_or(mu));
        let reach = exp
            .world
            .bodies
            .iter()
            .map(|b| b.position.x)
            .fold(f64::NEG_INFINITY, f64::max);
        (packed, result.measurement.angle_deg, reach)
    };
    let (packed_0, angle_0, reach_0) = run(0.0, Some(0.5));
    let (packed_half, angle_half, reach_half) = run(0.5, Some(0.5));
    let (packed_plain, angle_plain, _) = run(0.5, None);
    // The packing does not depend on the run's μ: bit for bit the same pile.
    assert_eq!(packed_0, packed_half);
    // Packing at the run's own μ is the run without pack_friction, to the last bit.
    assert_eq!(packed_half, packed_plain);
    assert_eq!(angle_half.to_bits(), angle_plain.to_bits());
    // The same pile let go without friction spreads further and ends lower (here 1.04
    // against 0.94 m, 0.5° against 2.0°).
    assert!(
        reach_0 > reach_half && angle_0 + 1.0 < angle_half,
        "μ = 0: reach {reach_0:.2} m, {angle_0:.1}°; μ = 0.5: reach {reach_half:.2} m, {angle_half:.1}°"
    );
}

// ---------------------------------------------------------------- the command line

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_impulse-lab"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("binary runs")
}

const TINY: &str = "tests/fixtures/repose_tiny.ron";

/// The CSV without its last column (wall-clock).
fn without_wall_clock(path: &std::path::Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .map(|l| l.rsplit_once(',').unwrap().0.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

fn sweep(out: &std::path::Path, extra: &[&str]) {
    let mut args = vec![
        "repose",
        TINY,
        "--friction",
        "0.5,0",
        "--seeds",
        "2",
        "--max-time",
        "0.4",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = run(&args);
    assert!(
        o.status.success(),
        "repose {extra:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The `--plot` PNG decodes at the figure's size and has the spheres' series drawn in
/// their colour (line, markers and error bars: hundreds of pixels).
fn assert_plot(path: &std::path::Path) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (1000, 640));
    assert_eq!(info.color_type, png::ColorType::Rgb);
    let sphere_blue = buf[..info.buffer_size()]
        .chunks(3)
        .filter(|p| p == &[31, 119, 180])
        .count();
    assert!(
        sphere_blue > 300,
        "{sphere_blue} pixels of the spheres' colour"
    );
}

#[test]
fn repose_is_the_same_whatever_jobs_and_shards() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let png = p("j1.png");
    sweep(
        &p("j1.csv"),
        &["--jobs", "1", "--plot", png.to_str().unwrap()],
    );
    assert_plot(&png);
    sweep(&p("j2.csv"), &["--jobs", "2"]);
    let j1 = without_wall_clock(&p("j1.csv"));
    assert_eq!(
        j1,
        without_wall_clock(&p("j2.csv")),
        "--jobs 1 and --jobs 2 differ"
    );
    let lines: Vec<&str> = j1.lines().collect();
    assert_eq!(lines.len(), 5, "header + 2 μ × 2 seeds:\n{j1}");
    // Canonical order: μ ascending, then seed.
    assert!(
        lines[1].starts_with("repose_tiny,sphere,sqm,0,0.3,7,30,"),
        "{}",
        lines[1]
    );
    assert!(
        lines[4].starts_with("repose_tiny,sphere,sqm,0.5,0.3,8,30,"),
        "{}",
        lines[4]
    );
    // Different seeds give different piles (the seed reaches the scene).
    let angle = |l: &str| l.split(',').nth(7).unwrap().to_string();
    assert_ne!(angle(lines[1]), angle(lines[2]));

    // `--first-seed 8 --seeds 1` runs the second seed alone: the rows equal the
    // seed-8 rows of the two-seed sweep, so a sweep can be extended and merged.
    let extra = p("extra.csv");
    let o = run(&[
        "repose",
        TINY,
        "--friction",
        "0.5,0",
        "--seeds",
        "1",
        "--first-seed",
        "8",
        "--max-time",
        "0.4",
        "--jobs",
        "1",
        "--out",
        extra.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Capped at 0.4 s, the tiny pile is still moving: each run says so on stderr.
    let stderr = String::from_utf8_lossy(&o.stderr);
    for mu in ["0", "0.5"] {
        let w = format!("warning: repose_tiny, μ = {mu}, seed 8: packing reached the time cap");
        assert!(stderr.contains(&w), "no '{w}' in:\n{stderr}");
    }
    // Each run prints its result as it ends: the CSV row's angle and error, the
    // protocol, and each phase's time with how it ended.
    let rows = std::fs::read_to_string(&extra).unwrap();
    for row in rows.lines().skip(1) {
        let f: Vec<&str> = row.split(',').collect();
        let (mu, angle, error): (&str, f64, f64) =
            (f[3], f[7].parse().unwrap(), f[8].parse().unwrap());
        let line = format!(
            "repose_tiny, μ = {mu}, seed 8: {angle:.2}° ± {error:.2}° (wall_removal); \
             packing 0.4 s time cap, slumping 0.4 s time cap; "
        );
        assert!(stderr.contains(&line), "no '{line}' in:\n{stderr}");
    }
    let extra = without_wall_clock(&extra);
    let extra: Vec<&str> = extra.lines().collect();
    assert_eq!(extra, [lines[0], lines[2], lines[4]]);

    sweep(&p("s2.csv"), &["--jobs", "1", "--shard", "2/2"]);
    sweep(&p("s1.csv"), &["--jobs", "1", "--shard", "1/2"]);
    let o = run(&[
        "merge",
        p("s2.csv").to_str().unwrap(),
        p("s1.csv").to_str().unwrap(),
        "--out",
        p("all.csv").to_str().unwrap(),
    ]);
    assert!(
        o.status.success(),
        "merge: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        without_wall_clock(&p("all.csv")),
        j1,
        "merged shards differ from one run"
    );
    // merge --plot draws the merged runs.
    let o = run(&[
        "merge",
        p("s1.csv").to_str().unwrap(),
        p("s2.csv").to_str().unwrap(),
        "--out",
        p("all2.csv").to_str().unwrap(),
        "--plot",
        p("all.png").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_plot(&p("all.png"));

    // A run listed twice is refused.
    let o = run(&[
        "merge",
        p("s1.csv").to_str().unwrap(),
        p("j1.csv").to_str().unwrap(),
        "--out",
        p("dup.csv").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn repose_bad_input_exits_2_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.csv");
    let out = out.to_str().unwrap();
    let cases: [(&[&str], &str); 12] = [
        (&["--seeds", "1000000000000"], "seeds"),
        (&["--friction", "NaN"], "friction"),
        (&["--friction", "0.1,-0.2"], "friction"),
        (&["--friction", "0.1,x"], "friction"),
        (&["--shard", "3/2"], "shard"),
        (&["--shard", "1-2"], "shard"),
        (&["--restitution", "1.5"], "restitution"),
        (&["--max-time", "0"], "max-time"),
        (&["--seeds", "0"], "seeds"),
        (&["--pack-friction=-0.1"], "pack-friction"),
        (&["--pack-friction", "x"], "pack-friction"),
        // A directory that cannot be created (its "parent" is a device file).
        (&["--video-dir", "/dev/null/videos"], "video-dir"),
    ];
    for (extra, word) in cases {
        let mut args = vec!["repose", TINY, "--out", out];
        args.extend_from_slice(extra);
        let o = run(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {err}");
        assert!(
            err.contains(word),
            "{extra:?}: message should name {word}: {err}"
        );
        assert!(
            !std::path::Path::new(out).exists(),
            "{extra:?}: output written"
        );
    }
    let o = run(&["repose", TINY, "--out", "/nonexistent-dir/r.csv"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot write"));
    // An unwritable plot path fails before any run and leaves no CSV behind.
    let o = run(&[
        "repose",
        TINY,
        "--out",
        out,
        "--plot",
        "/nonexistent-dir/p.png",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("/nonexistent-dir/p.png") && err.contains("cannot write"),
        "{err}"
    );
    assert!(!std::path::Path::new(out).exists(), "CSV left behind");
    // A scene without a divider is not a repose scene.
    let o = run(&["repose", "etm_box_flat", "--out", out]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn settle_criterion_ends_phases_early_once_the_pile_rests() {
    // Four cubes dropped 2.5 m onto the floor, away from the divider: they come to rest
    // well before the 5 s cap, and removing the wall does not move them, so the slumping
    // phase ends after exactly the hold time of rest. (Dropped 0.5 m, the same cubes
    // stay at K/ΔU ≈ 1.3e-6 at 5 s: the resting jitter of this build, about 4 mm/s, is
    // measured against a 5× smaller ΔU, so the criterion is not met.)
    use impulse_lab::container::Divider;
    use impulse_lab::{Container, SolverKind, SolverParams, World};
    let params = SolverParams {
        restitution: 0.3,
        friction: 0.5,
        rest_velocity: 0.1,
        ..Default::default()
    };
    let mut world = World::new(
        Vec3::new(0.0, 0.0, -9.81),
        1.0 / 600.0,
        SolverKind::Sqm,
        params,
    )
    .unwrap();
    world.add_container(Container::Box {
        center: Vec3::zeros(),
        half_size: [8.0, 4.0],
        height: 5.0,
        walls: [true; 4],
        dividers: vec![Divider {
            x: 0.0,
            present: true,
        }],
    });
    for (x, y) in [(-6.0, -2.0), (-6.0, 2.0), (-3.0, -2.0), (-3.0, 2.0)] {
        let cube = Shape::Cuboid {
            half_extents: Vec3::repeat(0.5),
        };
        world.add_body(RigidBody::new(
            &cube,
            2500.0,
            Vec3::new(x, y, 3.0),
            Quat::identity(),
        ));
    }
    world.start_ledger();
    let config = ReposeConfig {
        max_time: 5.0,
        ..Default::default()
    };
    let hold = config.hold;
    let mut exp = ReposeExperiment::new(world, config).unwrap();
    let r = exp.run(|_| {}).unwrap().clone();
    assert!(r.packing.settled, "packing: {:?}", r.packing);
    assert!(r.packing.duration < 2.0, "packing: {:?}", r.packing);
    assert!(r.packing.ke_ratio < 1e-6);
    assert!(r.slumping.settled, "slumping: {:?}", r.slumping);
    assert!(
        (r.slumping.duration - hold).abs() < 1e-9,
        "slumping took {} s, the hold is {hold} s",
        r.slumping.duration
    );
    // Cube tops at z = 1 over their cells; too few cells per row for more than a flat
    // line where two cubes share a row.
    let m = &r.measurement;
    for p in m.highest.iter().flatten().flatten() {
        assert!((p.z - 1.0).abs() < 0.01, "cube top at {}", p.z);
    }
}

/// The bundled repose scenes set the paper's experiment up as §7.5 describes it: the
/// bodies start "in an array" (540 = 6 × 6 × 15 spheres, 325 = 5 × 5 × 13 cubes and
/// crosses) filling the −x half of a box twice as long as it is wide (so the 8 × 16
/// grid's cells are square), behind a divider at x = 0, with e = 0.3 and dt = 1/600.
#[test]
fn bundled_repose_scenes_start_as_the_papers_arrays() {
    use impulse_lab::container::Container;
    for (name, count, dims) in [
        ("repose_spheres", 540, [6, 6, 15]),
        ("repose_cubes", 325, [5, 5, 13]),
        ("repose_crosses", 325, [5, 5, 13]),
    ] {
        let scene = impulse_lab::scene::load_scene(&impulse_lab::scene::resolve_scene(name))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(scene.params.restitution, 0.3, "{name}");
        // Fig. 11: the stacks are packed at μ = 0.3.
        assert_eq!(scene.pack_friction, Some(0.3), "{name}");
        let world = scene.build_world().unwrap();
        assert!(
            (world.dt - 1.0 / 600.0).abs() < 1e-15,
            "{name}: dt {}",
            world.dt
        );
        assert_eq!(world.bodies.len(), count, "{name}");
        // Distinct lattice coordinates along x, y and z (centres of mass of randomly
        // oriented bodies sit at their lattice sites up to rounding).
        let distinct = |k: usize| {
            let mut v: Vec<i64> = world
                .bodies
                .iter()
                .map(|b| (b.position[k] * 10.0).round() as i64)
                .collect();
            v.sort_unstable();
            v.dedup();
            v.len()
        };
        assert_eq!([distinct(0), distinct(1), distinct(2)], dims, "{name}");
        let Some(Container::Box {
            half_size,
            dividers,
            ..
        }) = world.containers.first()
        else {
            panic!("{name}: no box");
        };
        assert_eq!(half_size[0], 2.0 * half_size[1], "{name}: box not 2:1");
        assert_eq!(dividers.len(), 1, "{name}");
        assert!(dividers[0].present && dividers[0].x == 0.0, "{name}");
        let r = world.bodies[0].shape.bounding_radius();
        for b in &world.bodies {
            assert!(
                b.position.x < -r
                    && b.position.x > -half_size[0] + r
                    && b.position.y.abs() < half_size[1] - r,
                "{name}: a body starts outside the -x half: {:?}",
                b.position
            );
        }
    }
}

/// Paper 000's Fig. 10 sizes (a = 3 m, b = 2.4 m, 3c = 3.78 m) give the three units the
/// same volume: πa³/6 = 14.14 m³, b³ = 13.82 m³ and, for a cross of seven c-cubes (three
/// 3c × c × c bars through one centre), 7c³ = 14.00 m³, all within 2.3 %. So the
/// paper's sphere size a is its diameter and its cross is that seven-cube cross: a
/// cross of thinner or longer arms on the same 3c would have a different volume. The
/// bundled scenes use exactly these bodies.
#[test]
fn bundled_repose_bodies_have_the_papers_sizes_and_equal_volumes() {
    let mut volumes = Vec::new();
    for (name, want) in [
        (
            "repose_spheres",
            Shape::Sphere { radius: 1.5 }, // a = 3 m across
        ),
        (
            "repose_cubes",
            Shape::Cuboid {
                half_extents: Vec3::new(1.2, 1.2, 1.2), // b = 2.4 m
            },
        ),
        ("repose_crosses", Shape::Cross { c: 1.26 }), // 3c = 3.78 m
    ] {
        let scene = impulse_lab::scene::load_scene(&impulse_lab::scene::resolve_scene(name))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let world = scene.build_world().unwrap();
        for b in &world.bodies {
            assert_eq!(b.shape, want, "{name}");
        }
        volumes.push((name, want.mass_properties(1.0).mass));
    }
    let c: f64 = 1.26;
    assert!((volumes[2].1 - 7.0 * c.powi(3)).abs() < 1e-9 * volumes[2].1);
    let (lo, hi) = volumes
        .iter()
        .fold((f64::MAX, 0.0_f64), |(lo, hi), &(_, v)| {
            (lo.min(v), hi.max(v))
        });
    assert!(
        hi / lo < 1.025,
        "the three units' volumes should agree within 2.5 %: {volumes:?}"
    );
}

#[test]
fn every_run_writes_a_statepoint_and_merge_rebuilds_the_csv_from_them() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("sweep.csv");
    let o = run(&[
        "repose",
        TINY,
        "--friction",
        "0.5,0",
        "--max-time",
        "0.2",
        "--jobs",
        "2",
        "--out",
        csv.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Default directory: the CSV's name with .statepoints; one file per run.
    let sp = dir.path().join("sweep.statepoints");
    let mut names: Vec<String> = std::fs::read_dir(&sp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "repose_tiny_sqm_mu0.5_e0.3_seed7.json",
            "repose_tiny_sqm_mu0_e0.3_seed7.json"
        ]
    );
    let original = std::fs::read(&csv).unwrap();
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sp.join(&names[0])).unwrap()).unwrap();
    assert_eq!(v["format"], "impulse-lab repose statepoint 1");
    assert_eq!(v["scene"], "repose_tiny");
    assert_eq!(v["solver"], "sqm");
    assert_eq!(v["protocol"], "wall_removal");
    assert_eq!(v["seed"], 7);
    assert_eq!(v["friction"], 0.5);
    assert_eq!(v["params"]["friction"], 0.5, "the run's own parameters");
    assert_eq!(v["settle"]["max_time_s"], 0.2);
    let commit = v["commit"].as_str().unwrap();
    assert!(
        commit == "unknown"
            || (commit.len() == 40 && commit.chars().all(|c| c.is_ascii_hexdigit())),
        "{commit}"
    );
    // The result equals the CSV's row for that run.
    let text = String::from_utf8(original.clone()).unwrap();
    let row = text.lines().nth(2).unwrap();
    let angle: f64 = row.split(',').nth(7).unwrap().parse().unwrap();
    assert_eq!(v["result"]["angle_deg"].as_f64().unwrap(), angle);
    assert_eq!(v["result"]["packing"]["settled"], false, "capped at 0.2 s");

    // The CSV deleted, merge rebuilds it byte for byte from the statepoints alone:
    // from the directory, and from the files given in the other order.
    std::fs::remove_file(&csv).unwrap();
    let o = run(&[
        "merge",
        sp.to_str().unwrap(),
        "--out",
        csv.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read(&csv).unwrap(), original);
    let again = dir.path().join("again.csv");
    let o = run(&[
        "merge",
        sp.join(&names[0]).to_str().unwrap(),
        sp.join(&names[1]).to_str().unwrap(),
        "--out",
        again.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read(&again).unwrap(), original);

    // A statepoint given twice (file and directory) is one run twice: refused.
    let o = run(&[
        "merge",
        sp.to_str().unwrap(),
        sp.join(&names[0]).to_str().unwrap(),
        "--out",
        dir.path().join("dup.csv").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    // A JSON that is not a statepoint, and a statepoint with a column missing, are
    // refused naming the file; nothing is written.
    let bad = dir.path().join("bad");
    std::fs::create_dir(&bad).unwrap();
    std::fs::write(bad.join("x.json"), "{\"format\": \"other\"}").unwrap();
    let mut cut = v.clone();
    cut["csv"].as_object_mut().unwrap().remove("angle_deg");
    let cut_path = dir.path().join("cut.json");
    std::fs::write(&cut_path, cut.to_string()).unwrap();
    for (input, why) in [
        (&bad, "not a repose statepoint"),
        (&cut_path, "csv.angle_deg is missing"),
    ] {
        let out = dir.path().join("never.csv");
        let o = run(&[
            "merge",
            input.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(why), "{err}");
        assert!(!out.exists());
    }
    // --statepoints names the directory; a file there is refused before any run.
    let o = run(&[
        "repose",
        TINY,
        "--max-time",
        "0.2",
        "--out",
        dir.path().join("r.csv").to_str().unwrap(),
        "--statepoints",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--statepoints"));
    assert!(!dir.path().join("r.csv").exists());
}
