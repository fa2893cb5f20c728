//! The plot's quantity picker and pinned runs, in the real app under Xvfb with Mesa's
//! software Vulkan driver, read off the lines egui draws (`gui --script lines=PATH`:
//! each line's colour and its points in screen coordinates).
//!
//! The scene is `bounce`: a ball dropped from rest, its bottom 1 m above the floor. Each
//! rebound leaves at e times the impact speed, so each apex is e² times the height of
//! the one before, and each impact's kinetic energy e² times the last impact's (free
//! flight keeps the energy). The test reads those ratios off the drawn curves: 0.64 for
//! the run at e = 0.8, 0.09 for the run at e = 0.3. So a curve drawn is the run it claims
//! to be, and a picked quantity is the one drawn (the height starts at its top, the
//! kinetic energy at zero).
//!
//! Tolerance of a ratio: 0.03. A ratio is of two pixel distances on a plot about 120 px
//! tall (±1 px on a first apex of ~110 px: ±0.01 each), and the discrete time (dt =
//! 1/600 s) moves an impact's sampled speed by up to g·dt against 4.4 m/s (0.4 % of
//! the speed, 0.8 % of the energy). Where xvfb-run is missing the test says so and
//! passes, except under CI (`CI` set).
#![cfg(feature = "app")]

mod common;

use common::{run_gui_in_xvfb, xvfb_run};
use std::path::Path;

/// A line egui drew: RGBA colour and points (x, y; y grows downwards).
struct Line {
    rgba: [u8; 4],
    points: Vec<(f32, f32)>,
}

fn read_lines(path: &Path) -> Vec<Line> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|l| {
            let mut f = l.split('\t');
            let rgba: Vec<u8> = f
                .next()
                .unwrap()
                .split(' ')
                .map(|v| v.parse().unwrap())
                .collect();
            let n: usize = f.next().unwrap().parse().unwrap();
            let xy: Vec<f32> = f
                .next()
                .unwrap_or("")
                .split(' ')
                .filter(|v| !v.is_empty())
                .map(|v| v.parse().unwrap())
                .collect();
            assert_eq!(xy.len(), 2 * n, "{l}");
            Line {
                rgba: [rgba[0], rgba[1], rgba[2], rgba[3]],
                points: xy.chunks(2).map(|c| (c[0], c[1])).collect(),
            }
        })
        .collect()
}

/// The curves of a dump: lines of at least 500 points (the runs' 3,001 samples; grid,
/// markers and widgets are a few points each).
fn curves(path: &Path) -> Vec<Line> {
    read_lines(path)
        .into_iter()
        .filter(|l| l.points.len() >= 500)
        .collect()
}

/// The curve drawn in `rgb`.
fn curve<'a>(curves: &'a [Line], rgb: [u8; 3], what: &str) -> &'a Line {
    let found: Vec<&Line> = curves.iter().filter(|l| l.rgba[..3] == rgb).collect();
    assert_eq!(
        found.len(),
        1,
        "{what}: expected one curve in {rgb:?}, found colours {:?}",
        curves.iter().map(|l| l.rgba).collect::<Vec<_>>()
    );
    found[0]
}

/// The first two peaks of a bouncing curve, as heights in pixels above `base` (the
/// screen y of zero): the first is the curve's largest value, the second the largest
/// after the curve has come down to within 3 % of the first peak's height of zero.
fn first_two_peaks(line: &Line, base: f32) -> (f32, f32) {
    let v: Vec<f32> = line.points.iter().map(|p| base - p.1).collect();
    let (i1, &p1) = v
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .unwrap();
    let low = 0.03 * p1;
    let down = i1
        + v[i1..]
            .iter()
            .position(|&x| x <= low)
            .expect("no return to zero");
    let up = down
        + v[down..]
            .iter()
            .position(|&x| x > low)
            .expect("no second rise");
    let end = up
        + v[up..]
            .iter()
            .position(|&x| x <= low)
            .unwrap_or(v.len() - up);
    let p2 = v[up..end].iter().copied().fold(f32::MIN, f32::max);
    (p1, p2)
}

/// Rebound ratio of a height curve: the curve starts at its first apex (the drop
/// height) and rests on the floor at its end.
fn height_ratio(line: &Line) -> f32 {
    let rest = line.points.last().unwrap().1;
    let (p1, p2) = first_two_peaks(line, rest);
    let start = rest - line.points[0].1;
    assert!(
        (start - p1).abs() <= 1.0,
        "a height curve starts at its highest point: start {start} px, highest {p1} px"
    );
    p2 / p1
}

/// Ratio of the second impact's kinetic energy to the first's: the curve starts at
/// zero (the ball at rest) and ends at zero (at rest on the floor).
fn energy_ratio(line: &Line) -> f32 {
    let zero = line.points[0].1;
    let (p1, p2) = first_two_peaks(line, zero);
    p2 / p1
}

const TOLERANCE: f32 = 0.03;
const PIN: [u8; 3] = [213, 94, 0];
const NOW: [u8; 3] = [255, 255, 255];

fn assert_ratio(got: f32, e: f32, what: &str) {
    assert!(
        (got - e * e).abs() <= TOLERANCE,
        "{what}: ratio {got:.4}, expected e² = {:.4} ± {TOLERANCE}",
        e * e
    );
    eprintln!("{what}: ratio {got:.4} (e² = {:.4})", e * e);
}

/// Pick a quantity, pin a run, change e, reset: the picked quantity is what each plot
/// draws, and the pinned run's curve is drawn beside the current one, each the run its
/// legend names.
#[test]
fn the_picker_changes_the_series_and_a_pinned_run_is_drawn() {
    let Some(xvfb) = xvfb_run() else {
        return;
    };
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("app_plot");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let f = |name: &str| out.join(name).display().to_string();
    let script = [
        "10:steps=3000".to_string(),
        "20:plot=kinetic".into(),
        format!("22:lines={}", f("a.txt")),
        "30:plot=body_height".into(),
        format!("32:lines={}", f("b.txt")),
        "40:pin".into(),
        "41:set=restitution:0.3".into(),
        "42:reset".into(),
        "50:steps=3000".into(),
        format!("60:lines={}", f("c.txt")),
        format!("61:texts={}", f("c_texts.txt")),
        "70:plot=kinetic".into(),
        format!("72:lines={}", f("d.txt")),
    ]
    .join(",");
    let args = [
        "bounce",
        "--paused",
        "--script",
        &script,
        "--exit-after-frames",
        "80",
    ];
    let (status, log) = run_gui_in_xvfb(&xvfb, &out, (1280, 800), &args, &[]);
    assert!(status.success(), "app failed ({status}):\n{log}");
    assert!(!log.contains("panicked"), "a panic:\n{log}");

    // One run at e = 0.8: its kinetic energy, then its height.
    let a = curves(&out.join("a.txt"));
    assert_eq!(a.len(), 1, "one run, one curve");
    let ke = curve(&a, NOW, "kinetic energy");
    assert_ratio(energy_ratio(ke), 0.8, "kinetic energy, e = 0.8");
    let b = curves(&out.join("b.txt"));
    let height = curve(&b, NOW, "height");
    assert_ratio(height_ratio(height), 0.8, "height, e = 0.8");
    // Not the same series redrawn: the kinetic energy starts at zero, the height at
    // its top.
    assert!(ke.points[0].1 > height.points[0].1 + 50.0);

    // Pinned at e = 0.8, then a run at e = 0.3: both drawn, each the run it is.
    let c = curves(&out.join("c.txt"));
    assert_eq!(c.len(), 2, "the pinned run and the current one");
    assert_ratio(height_ratio(curve(&c, PIN, "pinned")), 0.8, "pinned height");
    assert_ratio(
        height_ratio(curve(&c, NOW, "current")),
        0.3,
        "current height",
    );
    let d = curves(&out.join("d.txt"));
    assert_ratio(
        energy_ratio(curve(&d, PIN, "pinned")),
        0.8,
        "pinned kinetic energy",
    );
    assert_ratio(
        energy_ratio(curve(&d, NOW, "current")),
        0.3,
        "current kinetic energy",
    );

    // The legend names both runs and the body.
    let texts = std::fs::read_to_string(out.join("c_texts.txt")).unwrap();
    for expected in [
        "#1: jolt, e = 0.8, μ = 0.3",
        "now: jolt, e = 0.3, μ = 0.3",
        "body height of body 0",
    ] {
        assert!(
            texts.lines().any(|l| l.ends_with(expected)),
            "no '{expected}' drawn:\n{texts}"
        );
    }
}
