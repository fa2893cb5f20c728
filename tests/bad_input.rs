//! Bad input, as a new user gives it: broken and hostile scene files, bad flags, bad
//! lessons, unwritable outputs, and a run that fails part way. Every case drives the
//! built binary in its own temporary directory and asserts
//! - the exit status (2 invalid input, 1 run-time failure; the CLI's contract),
//! - a message on stderr naming the problem (a fragment of it, case-insensitive),
//! - no panic ("panicked" never appears on stderr),
//! - no partial output: afterwards the directory holds exactly the files the case wrote
//!   (plus, for a run that fails part way, the documented `TRACE.partial`);
//! - bounded cost: each case runs under `prlimit` with 1 GiB of address space and 10 s
//!   of CPU time (a case over either is killed and fails), and within 10 s of wall time.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Address space (bytes) and CPU time (s) each case's process may use.
const MEMORY_LIMIT: u64 = 1 << 30;
const CPU_LIMIT_S: u64 = 10;
/// Wall time each case may take.
const WALL_LIMIT: Duration = Duration::from_secs(10);

/// The binary run under `prlimit` with [`MEMORY_LIMIT`] and [`CPU_LIMIT_S`] (util-linux;
/// the test needs it, so that a case that runs away fails instead of taking the machine).
fn limited() -> Command {
    let mut c = Command::new("prlimit");
    c.arg(format!("--as={MEMORY_LIMIT}"))
        .arg(format!("--cpu={CPU_LIMIT_S}"))
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_impulse-lab"));
    c
}

/// A small valid scene: one sphere above the ground, five steps of 10 ms. The cases
/// replace one piece of its text.
const BASE: &str = r#"Scene(
    name: "bad input base",
    dt: 0.01,
    duration: 0.05,
    solver: "jolt",
    params: (restitution: 0.5, friction: 0.3, lambda: 30.0, kp: 0.2),
    rotation: Theta(theta: 0.5),
    gravity: (0.0, 0.0, -9.81),
    containers: [Plane()],
    bodies: [
        Body(shape: Sphere(radius: 0.5), density: 1000.0, position: (0.0, 0.0, 1.0), velocity: (0.0, 0.0, 0.0)),
    ],
    generators: [],
)"#;

/// `BASE` with `from` replaced by `to` (which must occur).
fn edit(from: &str, to: &str) -> String {
    assert!(BASE.contains(from), "base scene lacks {from:?}");
    BASE.replacen(from, to, 1)
}

fn generator(body: &str) -> String {
    edit("generators: []", &format!("generators: [Lattice({body})]"))
}

/// A small valid lesson on the scene `scene.ron` of the case's directory.
fn lesson(check: &str) -> String {
    format!(
        r#"Lesson(
    title: "t",
    scene: "scene.ron",
    summary: "s",
    look_at: "l",
    expected: (figure: "f", source: "s"),
    check: {check},
)"#
    )
}

struct Case {
    name: &'static str,
    /// Files to create in the case's directory: (name, contents).
    files: Vec<(&'static str, Vec<u8>)>,
    /// Directories to create in the case's directory.
    dirs: Vec<&'static str>,
    /// Arguments; `{d}` is replaced by the case's directory.
    args: Vec<String>,
    code: i32,
    /// A fragment of the expected message (case-insensitive).
    needle: &'static str,
    /// A file allowed (and required) to appear: the documented partial output.
    partial: Option<&'static str>,
}

fn case(name: &'static str, args: &[&str], code: i32, needle: &'static str) -> Case {
    Case {
        name,
        files: Vec::new(),
        dirs: Vec::new(),
        args: args.iter().map(|s| s.to_string()).collect(),
        code,
        needle,
        partial: None,
    }
}

/// `validate {d}/scene.ron` on the given scene text.
fn scene_case(name: &'static str, text: impl Into<Vec<u8>>, needle: &'static str) -> Case {
    Case {
        files: vec![("scene.ron", text.into())],
        ..case(name, &["validate", "{d}/scene.ron"], 2, needle)
    }
}

/// `run {d}/scene.ron` (the valid base scene) with extra flags.
fn run_case(name: &'static str, flags: &[&str], code: i32, needle: &'static str) -> Case {
    let mut args = vec!["run", "{d}/scene.ron", "--out", "{d}/trace.csv"];
    args.extend_from_slice(flags);
    Case {
        files: vec![("scene.ron", BASE.into())],
        ..case(name, &args, code, needle)
    }
}

/// `lesson {d}/lesson.ron` with the base scene next to it.
fn lesson_case(name: &'static str, text: impl Into<Vec<u8>>, needle: &'static str) -> Case {
    Case {
        files: vec![("lesson.ron", text.into()), ("scene.ron", BASE.into())],
        ..case(name, &["lesson", "{d}/lesson.ron"], 2, needle)
    }
}

/// A scene with a removable wall, for `repose`.
const REPOSE: &str = "tests/fixtures/repose_tiny.ron";

fn cases() -> Vec<Case> {
    let sphere = "shape: Sphere(radius: 0.5)";
    let radius = "Sphere(radius: 0.5)";
    let mut v = vec![
        // Files that are not scenes.
        scene_case("empty file", "", "the file is empty"),
        scene_case("blank file", " \n\t\n", "the file is empty"),
        scene_case("binary file", (0u8..=255).collect::<Vec<u8>>(), "not UTF-8"),
        scene_case("truncated RON", &BASE[..BASE.len() / 2], "scene.ron:"),
        scene_case(
            "only a comment",
            "// nothing here\n",
            "expected opening `(`",
        ),
        scene_case("a list, not a scene", "[1, 2, 3]", "scene.ron:"),
        scene_case(
            "unbalanced brackets",
            "Scene(name: \"x\", bodies: [)",
            "scene.ron:",
        ),
        scene_case(
            "deep nesting",
            format!("Scene(name: \"x\", bodies: {})", "[".repeat(10_000)),
            "scene.ron:",
        ),
        // Unknown names and wrong types.
        scene_case("unknown shape", edit(radius, "Blob(radius: 0.5)"), "Blob"),
        scene_case(
            "unknown container",
            edit("Plane()", "Trampoline()"),
            "Trampoline",
        ),
        scene_case(
            "unknown field",
            edit("density: 1000.0", "densty: 1000.0"),
            "densty",
        ),
        scene_case("unknown solver", edit("\"jolt\"", "\"jelly\""), "jelly"),
        scene_case(
            "string for a number",
            edit(radius, "Sphere(radius: \"big\")"),
            "radius",
        ),
        scene_case(
            "missing name",
            edit("name: \"bad input base\",", ""),
            "name",
        ),
        scene_case(
            "empty name",
            edit("\"bad input base\"", "\"  \""),
            "name: must not be empty",
        ),
        // Sizes.
        scene_case(
            "negative radius",
            edit(radius, "Sphere(radius: -1.0)"),
            "radius",
        ),
        scene_case("zero radius", edit(radius, "Sphere(radius: 0.0)"), "radius"),
        scene_case("NaN radius", edit(radius, "Sphere(radius: NaN)"), "radius"),
        scene_case(
            "infinite radius",
            edit(radius, "Sphere(radius: inf)"),
            "radius",
        ),
        scene_case(
            "overflowing radius",
            edit(radius, "Sphere(radius: 1e999)"),
            "radius",
        ),
        scene_case(
            "negative cube edge",
            edit(radius, "Cube(edge: -1.0)"),
            "edge",
        ),
        scene_case(
            "zero cuboid extent",
            edit(radius, "Cuboid(half_extents: (0.5, 0.0, 0.5))"),
            "half_extents",
        ),
        scene_case(
            "flat polyhedron",
            edit(
                radius,
                "ConvexPolyhedron(vertices: [(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0)])",
            ),
            "shape",
        ),
        scene_case(
            "negative density",
            edit("density: 1000.0", "density: -5.0"),
            "density",
        ),
        scene_case(
            "zero density",
            edit("density: 1000.0", "density: 0.0"),
            "density",
        ),
        // Parameters out of range.
        scene_case(
            "e above 1",
            edit("restitution: 0.5", "restitution: 1.5"),
            "restitution",
        ),
        scene_case(
            "e below 0",
            edit("restitution: 0.5", "restitution: -0.1"),
            "restitution",
        ),
        scene_case(
            "e NaN",
            edit("restitution: 0.5", "restitution: NaN"),
            "restitution",
        ),
        scene_case(
            "μ negative",
            edit("friction: 0.3", "friction: -1.0"),
            "friction",
        ),
        scene_case(
            "μ infinite",
            edit("friction: 0.3", "friction: inf"),
            "friction",
        ),
        scene_case("λ zero", edit("lambda: 30.0", "lambda: 0.0"), "lambda"),
        scene_case("λ below 1", edit("lambda: 30.0", "lambda: 0.5"), "lambda"),
        scene_case("k_p above 1", edit("kp: 0.2", "kp: 2.0"), "kp"),
        scene_case("θ above 1", edit("theta: 0.5", "theta: 2.0"), "theta"),
        scene_case("dt zero", edit("dt: 0.01", "dt: 0.0"), "dt"),
        scene_case("dt negative", edit("dt: 0.01", "dt: -0.01"), "dt"),
        scene_case("dt NaN", edit("dt: 0.01", "dt: NaN"), "dt"),
        scene_case(
            "duration below dt",
            edit("duration: 0.05", "duration: 0.001"),
            "duration",
        ),
        scene_case(
            "gravity NaN",
            edit("(0.0, 0.0, -9.81)", "(0.0, NaN, -9.81)"),
            "gravity",
        ),
        scene_case(
            "position infinite",
            edit("(0.0, 0.0, 1.0)", "(inf, 0.0, 1.0)"),
            "position",
        ),
        scene_case(
            "velocity NaN",
            edit("velocity: (0.0, 0.0, 0.0)", "velocity: (NaN, 0.0, 0.0)"),
            "velocity",
        ),
        // Geometry.
        scene_case(
            "overlapping bodies",
            edit(
                "    ],\n    generators",
                &format!(
                    "        Body({sphere}, position: (0.2, 0.0, 1.0)),\n    ],\n    generators"
                ),
            ),
            "overlaps",
        ),
        scene_case(
            "body through the ground",
            edit("(0.0, 0.0, 1.0)", "(0.0, 0.0, 0.2)"),
            "reaches through",
        ),
        scene_case(
            "static body with a velocity",
            edit(
                "velocity: (0.0, 0.0, 0.0)",
                "velocity: (1.0, 0.0, 0.0), static: true",
            ),
            "static",
        ),
        // Generators.
        scene_case(
            "generator of 10^8 bodies",
            generator(&format!(
                "count: 100000000, {sphere}, region: (min: (-1e3, -1e3, 1), max: (1e3, 1e3, 1e3)), spacing: 1.0"
            )),
            "count",
        ),
        scene_case(
            "generator of no bodies",
            generator(&format!(
                "count: 0, {sphere}, region: (min: (-1, -1, 1), max: (1, 1, 3)), spacing: 1.0"
            )),
            "count",
        ),
        scene_case(
            "generator region inside out",
            generator(&format!(
                "count: 2, {sphere}, region: (min: (1, 1, 3), max: (-1, -1, 1)), spacing: 1.0"
            )),
            "region",
        ),
        scene_case(
            "generator spacing zero",
            generator(&format!(
                "count: 2, {sphere}, region: (min: (-1, -1, 1), max: (1, 1, 3)), spacing: 0.0"
            )),
            "spacing",
        ),
        scene_case(
            "generator region too small",
            generator(&format!(
                "count: 1000, {sphere}, region: (min: (5, 5, 1), max: (7, 7, 3)), spacing: 1.0"
            )),
            "lattice sites",
        ),
        scene_case(
            "generator spacing below the size",
            generator(&format!(
                "count: 8, {sphere}, region: (min: (5, 5, 1), max: (6, 6, 2)), spacing: 0.5"
            )),
            "overlaps",
        ),
        scene_case(
            "generator mix of zero fractions",
            generator(
                "count: 2, mix: [(shape: Sphere(radius: 0.1), fraction: 0.0)], region: (min: (5, 5, 1), max: (7, 7, 3)), spacing: 1.0",
            ),
            "fractions",
        ),
        scene_case(
            "generator with shape and mix",
            generator(&format!(
                "count: 2, {sphere}, mix: [(shape: Sphere(radius: 0.1), fraction: 1.0)], region: (min: (5, 5, 1), max: (7, 7, 3)), spacing: 1.0"
            )),
            "exactly one",
        ),
        // Paths.
        case(
            "missing scene file",
            &["validate", "{d}/nowhere.ron"],
            2,
            "no such scene",
        ),
        Case {
            dirs: vec!["adir.ron"],
            ..case(
                "directory as a scene",
                &["validate", "{d}/adir.ron"],
                2,
                "adir.ron",
            )
        },
        case(
            "missing bundled scene",
            &["run", "no_such_scene_name"],
            2,
            "no such scene",
        ),
        // The body limit.
        Case {
            files: vec![("scene.ron", BASE.into())],
            ..case(
                "more bodies than --max-bodies",
                &["--max-bodies", "0", "validate", "{d}/scene.ron"],
                2,
                "limit",
            )
        },
        case(
            "--max-bodies not a number",
            &["--max-bodies", "lots", "scenes"],
            2,
            "max-bodies",
        ),
        // Flags of `run`.
        run_case("--dt zero", &["--dt", "0"], 2, "--dt"),
        run_case("--dt negative", &["--dt=-1"], 2, "--dt"),
        run_case("--dt NaN", &["--dt", "NaN"], 2, "--dt"),
        run_case(
            "--restitution above 1",
            &["--restitution", "2"],
            2,
            "restitution",
        ),
        run_case("--friction negative", &["--friction=-1"], 2, "friction"),
        run_case("--lambda zero", &["--lambda", "0"], 2, "lambda"),
        run_case("--kp above 1", &["--kp", "1.5"], 2, "kp"),
        run_case("--duration negative", &["--duration=-1"], 2, "duration"),
        run_case("--duration infinite", &["--duration", "inf"], 2, "duration"),
        run_case("--solver unknown", &["--solver", "bogus"], 2, "bogus"),
        run_case("--rotation θ above 1", &["--rotation", "theta:2"], 2, "θ"),
        run_case("--steps not a number", &["--steps", "abc"], 2, "steps"),
        run_case(
            "--steps and --duration",
            &["--steps", "3", "--duration", "1"],
            2,
            "cannot be used",
        ),
        run_case("unknown flag", &["--frobnicate"], 2, "frobnicate"),
        run_case(
            "--trace-collision without --trace-out",
            &["--trace-collision", "1"],
            2,
            "trace-out",
        ),
        case("no command argument", &["validate"], 2, "<SCENE>"),
        case("unknown command", &["frobnicate"], 2, "frobnicate"),
        // Unwritable outputs: nothing is written, not even the outputs that could be.
        run_case(
            "--out is a directory",
            &["--final-state", "{d}"],
            2,
            "is a directory",
        ),
        run_case(
            "--out in a missing directory",
            &["--final-state", "{d}/no/such/dir/state.json"],
            2,
            "no directory",
        ),
        run_case(
            "--out under a file",
            &["--final-state", "{d}/scene.ron/state.json"],
            2,
            "not a directory",
        ),
        // The issue's case: an unwritable --final-state after a valid --out.
        run_case(
            "--final-state in /proc",
            &["--final-state", "/proc/state.json"],
            2,
            "cannot write output",
        ),
        run_case(
            "--out twice",
            &["--final-state", "{d}/trace.csv"],
            2,
            "two outputs",
        ),
        run_case(
            "--vtk-dir is a file",
            &["--vtk-dir", "{d}/scene.ron"],
            2,
            "--vtk-dir",
        ),
        run_case(
            "--vtk-dir in a missing directory",
            &["--vtk-dir", "{d}/no/such/vtk"],
            2,
            "no directory",
        ),
        run_case(
            "--vtk-dir unwritable",
            &["--vtk-dir", "/proc/vtk"],
            2,
            "--vtk-dir",
        ),
        run_case(
            "--vtk-dir is --out",
            &["--vtk-dir", "{d}/trace.csv"],
            2,
            "two outputs",
        ),
        run_case(
            "--vtk-every 0",
            &["--vtk-dir", "{d}/vtk", "--vtk-every", "0"],
            2,
            "--vtk-every",
        ),
        Case {
            files: vec![("f", b"mine".to_vec())],
            ..case(
                "repose --statepoints is a file",
                &[
                    "repose",
                    REPOSE,
                    "--out",
                    "{d}/r.csv",
                    "--statepoints",
                    "{d}/f",
                ],
                2,
                "--statepoints",
            )
        },
        case(
            "repose --vtk-dir unwritable",
            &[
                "repose",
                REPOSE,
                "--out",
                "{d}/r.csv",
                "--statepoints",
                "{d}/sp",
                "--vtk-dir",
                "/proc/vtk",
            ],
            2,
            "--vtk-dir",
        ),
        run_case(
            "--trace-out unwritable",
            &["--trace-collision", "1", "--trace-out", "{d}/missing/t.csv"],
            2,
            "no directory",
        ),
        Case {
            files: vec![("scene.ron", BASE.into())],
            ..case(
                "impact --out unwritable",
                &["impact", "{d}/scene.ron", "--out", "{d}/missing/i.csv"],
                2,
                "no directory",
            )
        },
        Case {
            files: vec![("scene.ron", BASE.into())],
            ..case(
                "impact --body out of range",
                &["impact", "{d}/scene.ron", "--body", "99"],
                2,
                "--body 99",
            )
        },
        Case {
            files: vec![("scene.ron", BASE.into())],
            ..case(
                "repose on a scene without a wall",
                &["repose", "{d}/scene.ron"],
                2,
                "scene.ron",
            )
        },
        case(
            "repose --out unwritable",
            &[
                "repose",
                REPOSE,
                "--out",
                "{d}/missing/r.csv",
                "--plot",
                "{d}/p.png",
            ],
            2,
            "no directory",
        ),
        case(
            "repose --plot unwritable after a valid --out",
            &[
                "repose",
                REPOSE,
                "--out",
                "{d}/r.csv",
                "--plot",
                "{d}/missing/p.png",
            ],
            2,
            "no directory",
        ),
        case(
            "repose --out and --plot the same",
            &["repose", REPOSE, "--out", "{d}/r", "--plot", "{d}/r"],
            2,
            "two outputs",
        ),
        case(
            "repose --friction negative",
            &["repose", REPOSE, "--friction=-0.5"],
            2,
            "friction",
        ),
        case(
            "repose --seeds zero",
            &["repose", REPOSE, "--seeds", "0"],
            2,
            "seeds",
        ),
        case(
            "repose --shard 3/2",
            &["repose", REPOSE, "--shard", "3/2"],
            2,
            "shard",
        ),
        case(
            "merge a scene file as a CSV",
            &[
                "merge",
                "tests/fixtures/valid_full.ron",
                "--out",
                "{d}/missing/m.csv",
            ],
            2,
            "valid_full.ron",
        ),
        case(
            "merge a missing input",
            &["merge", "{d}/a.csv", "--out", "{d}/m.csv"],
            2,
            "a.csv",
        ),
        Case {
            files: vec![("a.csv", b"not,a,repose\n1,2,3\n".to_vec())],
            ..case(
                "merge a foreign CSV",
                &["merge", "{d}/a.csv", "--out", "{d}/m.csv"],
                2,
                "header differs",
            )
        },
        // Lessons.
        case(
            "missing lesson",
            &["lesson", "{d}/nowhere.ron"],
            2,
            "no such lesson",
        ),
        lesson_case("empty lesson", "", "lesson.ron"),
        lesson_case(
            "binary lesson",
            (0u8..=255).collect::<Vec<u8>>(),
            "lesson.ron",
        ),
        lesson_case("truncated lesson", &lesson("Bogus")[..40], "lesson.ron:"),
        lesson_case("unknown lesson check", lesson("Bogus(x: 1)"), "Bogus"),
        lesson_case(
            "lesson on a missing scene",
            lesson("Bogus").replace("scene.ron", "nowhere.ron"),
            "lesson.ron",
        ),
    ];
    // Three distinct errors in one file: all three are reported.
    v.push(scene_case(
        "three errors at once",
        edit(radius, "Sphere(radius: -1.0)")
            .replace("restitution: 0.5", "restitution: 1.5")
            .replace("dt: 0.01", "dt: 0.0"),
        "3 errors",
    ));
    v.extend(hostile_cases());
    v.extend(run_time_failures());
    #[cfg(feature = "app")]
    v.extend(record_cases());
    v
}

/// `record`: every option is checked before the renderer starts, and nothing is written.
#[cfg(feature = "app")]
fn record_cases() -> Vec<Case> {
    let rec = |name, extra: &[&str], needle| {
        let mut args = vec!["record", "{d}/scene.ron"];
        args.extend_from_slice(extra);
        Case {
            files: vec![("scene.ron", BASE.into())],
            ..case(name, &args, 2, needle)
        }
    };
    vec![
        rec(
            "record into a missing directory",
            &["--out", "{d}/missing/v.mp4"],
            "no directory",
        ),
        rec(
            "record onto a directory",
            &["--out", "{d}", "--format", "mp4"],
            "is a directory",
        ),
        rec("record an unknown format", &["--out", "{d}/v.avi"], "avi"),
        rec(
            "record at 0 fps",
            &["--out", "{d}/v.mp4", "--fps", "0"],
            "frame rate",
        ),
        rec(
            "record a negative duration",
            &["--out", "{d}/v.mp4", "--duration=-1"],
            "duration",
        ),
        rec(
            "record a tiny frame",
            &["--out", "{d}/v.mp4", "--size", "10x10"],
            "size",
        ),
        Case {
            files: vec![
                ("scene.ron", BASE.into()),
                ("frames/notes.txt", b"mine".to_vec()),
            ],
            dirs: vec!["frames"],
            ..rec(
                "record PNG frames into a directory of other files",
                &["--out", "{d}/frames", "--format", "png"],
                "notes.txt",
            )
        },
    ]
}

/// The cases of issue 44 ("Reliability under hostile input"): input that asks for
/// unbounded memory or time, overflows, or work that cannot happen.
fn hostile_cases() -> Vec<Case> {
    let copies =
        "        Body(shape: Sphere(radius: 0.5), position: (0.0, 0.0, 1.0)),\n".repeat(99_999);
    vec![
        // The overlap check listed every overlapping pair before the first report: n²
        // memory (1.5 GiB at 10⁴ bodies). Now the first 20 errors and the count.
        scene_case(
            "10^5 bodies at one point",
            edit(
                "    ],\n    generators",
                &format!("{copies}    ],\n    generators"),
            ),
            "99999 errors",
        ),
        scene_case(
            "generator of 10^6 - 1 bodies at one point",
            generator(
                "count: 999999, shape: Sphere(radius: 0.5), region: (min: (0, 0, 2), max: (0.1, 0.1, 2.1)), spacing: 0.001",
            ),
            "generators[0].spacing: generators[0] body #1",
        ),
        // Mass properties that overflow: the sphere never fell and left the energy sums.
        scene_case(
            "sphere of radius 1e200",
            edit("Sphere(radius: 0.5)", "Sphere(radius: 1e200)"),
            "bodies[0]: its mass inf kg",
        ),
        scene_case(
            "sphere of radius 1e-200",
            edit("Sphere(radius: 0.5)", "Sphere(radius: 1e-200)"),
            "bodies[0]: its mass 0 kg",
        ),
        // A resume step that wrapped the trace back to step 0.
        scene_case(
            "resume step 2^64 - 1",
            edit(
                "generators: [],",
                "generators: [],\n    resume: Resume(step: 18446744073709551615, time: 0.0),",
            ),
            "resume.step: must be at most 9007199254740992",
        ),
        Case {
            files: vec![(
                "scene.ron",
                edit(
                    "generators: [],",
                    "generators: [],\n    resume: Resume(step: 9007199254740990, time: 0.0),",
                )
                .into(),
            )],
            ..case(
                "run past step 2^53 from a resume section",
                &["run", "{d}/scene.ron", "--steps", "5", "--out", "{d}/t.csv"],
                2,
                "--steps: the run would end at step 9007199254740995 (from step 9007199254740990)",
            )
        },
        // A byte-order mark is skipped: the file's error is found where it is.
        scene_case(
            "byte-order mark and dt zero",
            format!("\u{feff}{}", edit("dt: 0.01", "dt: 0.0")),
            "scene.ron:3:5: dt:",
        ),
        // Work without bound: duration, λ, iteration caps, steps.
        scene_case(
            "duration 1e300",
            edit("duration: 0.05", "duration: 1e300"),
            "duration: 1e300 s is 1e302 steps",
        ),
        scene_case(
            "λ 1e9",
            edit("lambda: 30.0", "lambda: 1e9"),
            "params.lambda: λ must be in [1, 1e4]",
        ),
        scene_case(
            "iteration cap 10^9",
            edit("kp: 0.2", "kp: 0.2, max_iterations: 1000000000"),
            "params.max_iterations: max_iterations must be an integer in [1, 1e5]",
        ),
        scene_case(
            "contact sweeps 10^9",
            edit("kp: 0.2", "kp: 0.2, contact_sweeps: 1000000000"),
            "params.contact_sweeps: contact_sweeps must be an integer in [1, 1e4]",
        ),
        run_case(
            "--duration 1e300",
            &["--duration", "1e300"],
            2,
            "--duration 1e300: the run would end at step 1e302",
        ),
        run_case(
            "--lambda 1e9",
            &["--lambda", "1e9"],
            2,
            "--lambda: λ must be in",
        ),
        run_case(
            "--steps above the work limit",
            &["--steps", "4000000000"],
            2,
            "--max-body-steps N allows more",
        ),
        run_case(
            "--steps above the lowered work limit",
            &["--steps", "101", "--max-body-steps", "100"],
            2,
            "more than the limit of 100 body-steps",
        ),
        run_case(
            "--out of a trace above the row limit",
            &["--steps", "20000000"],
            2,
            "the trace would have 20000001 rows",
        ),
        run_case(
            "--out of a trace above the lowered row limit",
            &["--steps", "10", "--max-trace-rows", "10"],
            2,
            "--max-trace-rows N allows more",
        ),
        // dt against the bodies.
        run_case(
            "--dt 1e-300",
            &["--dt", "1e-300"],
            2,
            "--dt: time step 1e-300 s is below the shortest accepted",
        ),
        Case {
            files: vec![(
                "scene.ron",
                edit("velocity: (0.0, 0.0, 0.0)", "velocity: (10.0, 0.0, 0.0)").into(),
            )],
            ..case(
                "--dt longer than the fastest body allows",
                &["run", "{d}/scene.ron", "--dt", "0.2", "--out", "{d}/t.csv"],
                2,
                "--dt: time step 0.2 s is too long: bodies[0] starts at 10 m/s and moves 2 m per step",
            )
        },
        scene_case(
            "dt longer than the fastest body allows",
            edit("velocity: (0.0, 0.0, 0.0)", "velocity: (100.0, 0.0, 0.0)"),
            "dt: time step 0.01 s is too long: bodies[0] starts at 100 m/s",
        ),
        // Work that cannot happen.
        run_case(
            "--trace-collision 0",
            &["--trace-collision", "0", "--trace-out", "{d}/t.csv"],
            2,
            "--trace-collision 0: the run takes steps 1 to 5",
        ),
        run_case(
            "--trace-collision after the last step",
            &["--trace-collision", "6", "--trace-out", "{d}/t.csv"],
            2,
            "--trace-collision 6: the run takes steps 1 to 5",
        ),
        run_case(
            "--trace-collision in a run of no steps",
            &[
                "--steps",
                "0",
                "--trace-collision",
                "1",
                "--trace-out",
                "{d}/t.csv",
            ],
            2,
            "--trace-collision 1: the run takes no steps",
        ),
        // Containers: the check covered planes, slopes and floors only.
        scene_case(
            "sphere inside a box wall",
            edit(
                "Plane()",
                "Box(center: (-0.9, 0.0, 0.0), half_size: (1.2, 3.0), height: 2.0)",
            ),
            "reaches through the +x wall of containers[0] (box)",
        ),
        scene_case(
            "sphere wholly outside the box",
            edit(
                "Plane()",
                "Box(center: (5.0, 0.0, 0.0), half_size: (1.0, 1.0), height: 2.0)",
            ),
            "bodies[0].position: bodies[0] at (0, 0, 1) lies outside every container",
        ),
        scene_case(
            "sphere inside a cylinder wall",
            edit("Plane()", "Cylinder(radius: 0.3, height: 2.0)"),
            "reaches through the wall of containers[0] (cylinder)",
        ),
        scene_case(
            "sphere outside the cylinder",
            edit(
                "Plane()",
                "Cylinder(base: (4.0, 0.0, 0.0), radius: 1.0, height: 2.0)",
            ),
            "lies outside every container",
        ),
        scene_case(
            "sphere through a hopper's cone",
            edit(
                "Plane()",
                "Hopper(base: (0.0, 0.0, 0.5), bottom_radius: 0.1, top_radius: 2.0, height: 2.0)",
            ),
            "reaches through the wall of containers[0] (hopper)",
        ),
        scene_case(
            "sphere outside the hopper",
            edit(
                "Plane()",
                "Hopper(base: (5.0, 0.0, 0.0), bottom_radius: 1.0, top_radius: 2.0, height: 2.0)",
            ),
            "bodies[0].position: bodies[0] at (0, 0, 1) lies outside every container",
        ),
        scene_case(
            "sphere through a slope",
            edit("Plane()", "Slope(angle_deg: 30.0, point: (0.0, 0.0, 0.8))"),
            "bodies[0].position: bodies[0] at (0, 0, 1) reaches through containers[0] (slope)",
        ),
        // A mass that stays finite with moments of inertia that overflow (a needle of
        // length 2 · 10²⁰⁰ m and width 2 · 10⁻²⁰⁰ m): named, in exponent form.
        scene_case(
            "cuboid whose inertia overflows",
            edit(
                "Sphere(radius: 0.5)",
                "Cuboid(half_extents: (1e200, 1e-200, 1e-200))",
            ),
            "bodies[0]: its mass 8e-197 kg or a moment of inertia (0, inf, inf) kg m² is not finite",
        ),
        // An empty sweep.
        case(
            "repose --friction empty",
            &["repose", REPOSE, "--friction", ""],
            2,
            "--friction: '' is not a number",
        ),
        scene_case(
            "sphere through a box divider",
            edit(
                "Plane()",
                "Box(half_size: (3.0, 3.0), height: 2.0, dividers: [(x: 0.2)])",
            ),
            "reaches through the divider at x = 0.2",
        ),
    ]
}

/// A run that fails at run time (velocities that overflow): exit 1, the step and body
/// named, no trace or state under the requested names; the energy trace up to the
/// failure is kept as `trace.csv.partial` (named in the message).
fn run_time_failures() -> Vec<Case> {
    // g = 1e300 m/s²: after the first kick v = 1e300 · 0.01 = 1e298 m/s, whose kinetic
    // energy ½ m v² overflows.
    let scene = edit("(0.0, 0.0, -9.81)", "(0.0, 0.0, -1e300)").replace("Plane()", "");
    vec![Case {
        files: vec![("scene.ron", scene.into())],
        partial: Some("trace.csv.partial"),
        ..case(
            "run whose state becomes non-finite",
            &[
                "run",
                "{d}/scene.ron",
                "--out",
                "{d}/trace.csv",
                "--final-state",
                "{d}/state.json",
            ],
            1,
            "step 1: body 0's kinetic energy became non-finite",
        )
    }]
}

/// Every file and directory under `dir`, relative to it.
fn listing(dir: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            out.insert(p.strip_prefix(dir).unwrap().to_path_buf());
            if p.is_dir() {
                stack.push(p);
            }
        }
    }
    out
}

/// Run one case; `Err` says what went wrong.
fn check(c: &Case) -> Result<(), String> {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    for name in &c.dirs {
        std::fs::create_dir(d.join(name)).unwrap();
    }
    for (name, bytes) in &c.files {
        std::fs::write(d.join(name), bytes).unwrap();
    }
    let before = listing(d);
    let args: Vec<String> = c
        .args
        .iter()
        .map(|a| a.replace("{d}", d.to_str().unwrap()))
        .collect();
    let start = Instant::now();
    let out = limited()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(&args)
        .output()
        .map_err(|e| format!("cannot start the binary under prlimit: {e}"))?;
    let wall = start.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut problems = Vec::new();
    if wall > WALL_LIMIT {
        problems.push(format!("took {:.1} s", wall.as_secs_f64()));
    }
    if out.status.code() != Some(c.code) {
        use std::os::unix::process::ExitStatusExt;
        problems.push(format!(
            "exit {:?} (signal {:?}), expected {}",
            out.status.code(),
            out.status.signal(),
            c.code
        ));
    }
    if stderr.contains("panicked") {
        problems.push("panicked".to_string());
    }
    if !stderr.to_lowercase().contains(&c.needle.to_lowercase()) {
        problems.push(format!("message lacks {:?}", c.needle));
    }
    let mut after = listing(d);
    if let Some(p) = c.partial {
        if !after.remove(Path::new(p)) {
            problems.push(format!("no {p}"));
        }
        if !stderr.contains(p) {
            problems.push(format!("message does not name {p}"));
        }
    }
    if after != before {
        let new: Vec<_> = after.difference(&before).collect();
        problems.push(format!("left behind {new:?}"));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{}: {} | args {args:?} | stderr: {}",
            c.name,
            problems.join("; "),
            stderr.trim()
        ))
    }
}

#[test]
fn bad_input_corpus() {
    let cases = cases();
    assert!(cases.len() >= 133, "only {} cases", cases.len());
    println!("{} bad-input cases", cases.len());
    let failures: Vec<String> = cases.iter().filter_map(|c| check(c).err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn three_errors_are_each_reported_with_file_line_column_and_field() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("scene.ron");
    let text = edit("Sphere(radius: 0.5)", "Sphere(radius: -1.0)")
        .replace("restitution: 0.5", "restitution: 1.5")
        .replace("dt: 0.01", "dt: 0.0");
    std::fs::write(&path, &text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_impulse-lab"))
        .arg("validate")
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Line and column of each field in the text (1-based).
    let at = |needle: &str| {
        let offset = text.find(needle).unwrap();
        let line = text[..offset].matches('\n').count() + 1;
        let column = offset - text[..offset].rfind('\n').map_or(0, |i| i + 1) + 1;
        (line, column)
    };
    let file = path.display().to_string();
    for (field, needle) in [
        ("dt", "dt: 0.0"),
        ("params.restitution", "restitution: 1.5"),
        ("bodies[0].shape.radius", "radius: -1.0"),
    ] {
        let (line, column) = at(needle);
        let expected = format!("{file}:{line}:{column}: {field}: ");
        assert!(stderr.contains(&expected), "no {expected:?} in:\n{stderr}");
    }
    assert!(stderr.contains("3 errors"), "{stderr}");
}

/// `World::step` names the step and the body whose state became non-finite, whichever
/// body it is, and whether the state itself or only its energy overflowed.
#[test]
fn world_step_names_the_step_and_the_non_finite_body() {
    use impulse_lab::dynamics::solver::SolverError;
    let text = r#"Scene(
        name: "three spheres",
        dt: 0.01,
        bodies: [
            Body(shape: Sphere(radius: 0.5), position: (0.0, 0.0, 1.0)),
            Body(shape: Sphere(radius: 0.5), position: (3.0, 0.0, 1.0)),
            Body(shape: Sphere(radius: 0.5), position: (6.0, 0.0, 1.0)),
        ],
    )"#;
    let scene = impulse_lab::scene::parse_scene(text, "three.ron").unwrap();
    // A NaN velocity on body 2 after three good steps: the drift makes its position NaN.
    let mut world = scene.build_world().unwrap();
    world.start_ledger();
    for _ in 0..3 {
        world.step().unwrap();
    }
    world.bodies[2].velocity.x = f64::NAN;
    match world.step() {
        Err(SolverError::NonFinite {
            step: 4,
            body: Some(2),
            quantity: "position",
            ..
        }) => {}
        other => panic!("expected step 4, body 2, position; got {other:?}"),
    }
    // A finite velocity whose kinetic energy overflows (½ m v² with v = 1e200 m/s).
    let mut world = scene.build_world().unwrap();
    world.start_ledger();
    world.bodies[1].velocity.y = 1e200;
    let e = world.step().unwrap_err();
    assert_eq!(
        e.at_step(1).split(" (").next().unwrap(),
        "step 1: body 1's kinetic energy became non-finite",
        "{e}"
    );
}

/// The directory's files whose names start with `prefix` and end with `.partial`
/// (the temporary file an output is written into, `NAME.XXXXXX.partial`).
fn temporaries(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with(prefix) && name.ends_with(".partial")
        })
        .collect()
}

/// Issue 44: a long run can be stopped with Ctrl-C (SIGINT), leaving whole outputs. The
/// run is started as a child process; once its trace's temporary file has grown past
/// the writer's buffer, it gets SIGINT (`kill -INT`). It must stop with exit status 130
/// and a message naming the last step and `trace.csv.partial`; the partial trace has
/// its header and only whole rows, one per step from 0 to the step named; no
/// `trace.csv`, no final state and no temporary file is left.
#[test]
fn ctrl_c_stops_a_run_and_keeps_the_trace_so_far_in_whole_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(d.join("scene.ron"), BASE).unwrap();
    // 10⁸ steps: minutes of work, far more than the test waits.
    let mut child = Command::new(env!("CARGO_BIN_EXE_impulse-lab"))
        .arg("run")
        .arg(d.join("scene.ron"))
        .args(["--steps", "100000000", "--max-trace-rows", "200000000"])
        .arg("--out")
        .arg(d.join("trace.csv"))
        .arg("--final-state")
        .arg(d.join("state.json"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    // Started writing: the temporary trace holds more than the writers' buffers.
    loop {
        let written = temporaries(d, "trace.csv.")
            .iter()
            .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
            .sum::<u64>();
        if written > 256 * 1024 {
            break;
        }
        if start.elapsed() > Duration::from_secs(60) || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            panic!("the run wrote no trace (or ended) within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let stopped = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if stopped.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("the run did not stop within 20 s of SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let partial = d.join("trace.csv.partial");
    assert!(
        stderr.contains(&format!("(the trace so far is in {})", partial.display())),
        "{stderr}"
    );
    let last_step: u64 = stderr
        .split("interrupted (Ctrl-C) after step ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no step in {stderr:?}"));
    assert!(stderr.contains("of steps 1 to 100000000"), "{stderr}");
    // Only the scene and the partial trace: no trace.csv, no state.json, no temporary.
    let names: BTreeSet<PathBuf> = listing(d);
    let expected: BTreeSet<PathBuf> = ["scene.ron", "trace.csv.partial"]
        .iter()
        .map(PathBuf::from)
        .collect();
    assert_eq!(names, expected);
    // Whole rows: the header, then steps 0..=last_step, each with every column.
    let text = std::fs::read_to_string(&partial).unwrap();
    assert!(text.ends_with('\n'), "the last row is cut short");
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    assert!(header.starts_with("step,time,kinetic,"), "{header}");
    let columns = header.split(',').count();
    let mut rows = 0u64;
    for (i, line) in lines.enumerate() {
        let fields: Vec<&str> = line.split(',').collect();
        assert_eq!(fields.len(), columns, "row {i}: {line:?}");
        assert_eq!(fields[0], i.to_string(), "row {i}: {line:?}");
        for f in &fields[1..] {
            assert!(f.parse::<f64>().is_ok(), "row {i}: {line:?}");
        }
        rows += 1;
    }
    assert_eq!(rows, last_step + 1, "rows 0..={last_step} expected");
    assert!(last_step > 0);
    println!(
        "stopped after step {last_step} ({rows} whole rows, {} bytes) in {:.2} s after SIGINT",
        text.len(),
        stopped.elapsed().as_secs_f64()
    );
}

/// A run shows a progress bar with the time left on a terminal (stderr a pseudo-terminal
/// under `script`, util-linux) and nothing when stderr is a pipe.
#[test]
fn a_run_shows_its_progress_on_a_terminal_only() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let scene = d.join("scene.ron");
    std::fs::write(&scene, BASE).unwrap();
    let run = format!(
        "'{}' run '{}' --steps 20000",
        env!("CARGO_BIN_EXE_impulse-lab"),
        scene.display()
    );
    let out = Command::new("script")
        .args(["-qefc", &run, "/dev/null"])
        .env("TERM", "xterm")
        .output()
        .expect("script (util-linux) runs the binary on a pseudo-terminal");
    let terminal = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{terminal}");
    assert!(
        terminal.contains("/20,000 steps [")
            && terminal.contains("ETA")
            && terminal.contains("Ctrl-C stops"),
        "no progress bar on the terminal: {terminal:?}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_impulse-lab"))
        .arg("run")
        .arg(&scene)
        .args(["--steps", "20000"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "stderr in a pipe");
}
