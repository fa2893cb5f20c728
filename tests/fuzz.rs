//! Fuzzing (issue 44) with proptest: the RON scene loader on mutated copies of every
//! bundled scene and fixture (load, and build the world of what loads), and the command
//! line on random argument lists drawn from the CLI's own vocabulary, run as a process
//! under `prlimit` (1 GiB, 10 s of CPU). Neither may panic; the binary exits 0 or 2.
//!
//! The case counts are small by default (a short run in every `cargo test`, CI's run); a
//! long run repeats fresh batches for `FUZZ_SECONDS`: `FUZZ_SECONDS=600 cargo test
//! --no-default-features --test fuzz -- --nocapture` (docs/results/hostile-input.md).

use impulse_lab::scene::parse_scene;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::path::{Path, PathBuf};
use std::process::Command;

fn cases(var: &str, default: u32) -> u32 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Run `batch` over and over with fresh random cases until `FUZZ_SECONDS` (default 0:
/// once) have passed; the number of cases run.
fn for_a_while(n: u32, mut batch: impl FnMut(&mut TestRunner)) -> u64 {
    let seconds: f64 = std::env::var("FUZZ_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    let start = std::time::Instant::now();
    let mut total = 0;
    loop {
        let mut runner = TestRunner::new(Config {
            cases: n,
            failure_persistence: None,
            ..Config::default()
        });
        batch(&mut runner);
        total += u64::from(n);
        if start.elapsed().as_secs_f64() >= seconds {
            return total;
        }
    }
}

/// The seed corpus: every bundled scene, every scene fixture.
fn corpus() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["scenes", "tests/fixtures"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "ron") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
        .into_iter()
        .filter_map(|p| std::fs::read_to_string(&p).ok().map(|t| (p, t)))
        .collect()
}

/// Pieces a mutation inserts: RON syntax, hostile numbers, names of the format.
const PIECES: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    ",",
    ":",
    "\"",
    "/*",
    "//",
    "NaN",
    "-1",
    "1e999",
    "1e300",
    "1e-300",
    "0",
    "-0.0",
    "inf",
    "-inf",
    "18446744073709551615",
    "9007199254740993",
    "r#\"",
    "\u{feff}",
    "Some(",
    "Sphere(radius: 1e200)",
    "Box(half_size: (1, 1), height: 1)",
    "Hopper(bottom_radius: 0.1, top_radius: 1, height: 1)",
    "Cylinder(radius: 0.1, height: 1)",
    "Lattice(count: 1000000, shape: Sphere(radius: 1), region: (min: (0,0,1), max: (1,1,2)), spacing: 0.001)",
    "resume: Resume(step: 18446744073709551615, time: 0)",
    "lambda: 1e9",
    "dt: 1e-300",
    "duration: 1e300",
    "max_iterations: 4294967295",
];

/// `text` with the edits applied (insert, delete, insert a piece, replace, truncate).
fn mutate(mut text: String, edits: &[(usize, usize, String)]) -> String {
    for (at, op, s) in edits {
        let mut at = at % (text.len() + 1);
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        let end = {
            let mut e = (at + s.len()).min(text.len());
            while !text.is_char_boundary(e) {
                e += 1;
            }
            e
        };
        match op % 5 {
            0 => text.insert_str(at, s),
            1 => text.replace_range(at..end, ""),
            2 => text.insert_str(at, PIECES[s.len() * 7 % PIECES.len()]),
            3 => text.replace_range(at..end, s),
            _ => text.truncate(at),
        }
    }
    text
}

#[test]
fn scene_loader_never_panics_on_mutated_scenes() {
    let corpus = corpus();
    let n = cases("FUZZ_SCENE_CASES", 300);
    let edits = prop::collection::vec((0usize..1_000_000, 0usize..5, "[ -~\n]{0,8}"), 1..6);
    let strategy = (0..corpus.len(), edits);
    let loaded = std::cell::Cell::new(0u64);
    let total = for_a_while(n, |runner| {
        runner
            .run(&strategy, |(k, edits)| {
                let (path, text) = &corpus[k];
                let text = mutate(text.clone(), &edits);
                let name = path.display().to_string();
                // Limit the body count as the CLI does by default; a mutation can ask for
                // 10⁶ bodies, which is valid and takes seconds to build.
                if let Ok(scene) = parse_scene(&text, &name) {
                    loaded.set(loaded.get() + 1);
                    let bodies = scene.expand_bodies().map_or(0, |b| b.len());
                    if bodies <= 20_000 {
                        let _ = scene.build_world();
                    }
                }
                Ok(())
            })
            .unwrap()
    });
    println!(
        "scene fuzz: {total} mutated scenes from a corpus of {} files, {} loaded",
        corpus.len(),
        loaded.get()
    );
}

/// The command line's words: commands, flags, values, and paths into the case's
/// directory (`{d}`), which holds `scene.ron` (a small valid scene).
const WORDS: &[&str] = &[
    "run",
    "validate",
    "scenes",
    "impact",
    "lessons",
    "lesson",
    "merge",
    "help",
    "--help",
    "--version",
    "{d}/scene.ron",
    "{d}/missing.ron",
    "{d}",
    "{d}/out.csv",
    "{d}/state.json",
    "{d}/trace.csv",
    "--steps",
    "--duration",
    "--dt",
    "--solver",
    "--restitution",
    "--friction",
    "--lambda",
    "--kp",
    "--rotation",
    "--mdp-friction",
    "--error-reduction",
    "--out",
    "--final-state",
    "--trace-collision",
    "--trace-out",
    "--settle",
    "--no-sleep",
    "--max-body-steps",
    "--max-bodies",
    "--body",
    "--max-steps",
    "0",
    "1",
    "2",
    "5",
    "-1",
    "1e300",
    "1e-300",
    "NaN",
    "inf",
    "abc",
    "",
    "18446744073709551616",
    "0.01",
    "etm",
    "sqm",
    "smm",
    "jolt",
    "ccp",
    "mdp",
    "theta:2",
    "symplectic",
    "coulomb",
    "--",
    "=",
];

/// The words that choose a command: an argument list without one would run the
/// default scene (`pour_mixed`, 6000 steps), real work the fuzz does not want.
const COMMANDS: &[&str] = &[
    "run",
    "validate",
    "scenes",
    "impact",
    "lessons",
    "lesson",
    "merge",
    "help",
    "--help",
    "--version",
];

const SCENE: &str = r#"Scene(
    name: "fuzz",
    dt: 0.01,
    duration: 0.05,
    containers: [Plane()],
    bodies: [Body(shape: Sphere(radius: 0.5), position: (0.0, 0.0, 1.0))],
)"#;

#[test]
fn command_line_never_panics_and_exits_0_or_2() {
    let n = cases("FUZZ_CLI_CASES", 40);
    let args = prop::collection::vec((0..WORDS.len(), any::<bool>()), 1..8);
    let codes = std::cell::RefCell::new(std::collections::BTreeMap::new());
    let total = for_a_while(n, |runner| {
        runner
            .run(&args, |words| {
                let tmp = tempfile::tempdir().unwrap();
                let d = tmp.path().to_str().unwrap();
                std::fs::write(tmp.path().join("scene.ron"), SCENE).unwrap();
                // A word and its neighbour joined with `=` sometimes (`--dt=-1`).
                let mut argv: Vec<String> = Vec::new();
                for (w, join) in words {
                    let w = WORDS[w].replace("{d}", d);
                    match argv.last_mut() {
                        Some(last) if join && last.starts_with("--") && !last.contains('=') => {
                            last.push('=');
                            last.push_str(&w);
                        }
                        _ => argv.push(w),
                    }
                }
                if !argv.iter().any(|a| COMMANDS.contains(&a.as_str())) {
                    return Ok(());
                }
                let out = Command::new("prlimit")
                    .arg(format!("--as={}", 1u64 << 30))
                    .arg("--cpu=10")
                    .arg("--")
                    .arg(env!("CARGO_BIN_EXE_impulse-lab"))
                    .args(&argv)
                    .current_dir(env!("CARGO_MANIFEST_DIR"))
                    .env("DISPLAY", "")
                    .env("WAYLAND_DISPLAY", "")
                    .output()
                    .expect("prlimit (util-linux) runs the binary");
                let stderr = String::from_utf8_lossy(&out.stderr);
                *codes.borrow_mut().entry(out.status.code()).or_insert(0u32) += 1;
                prop_assert!(!stderr.contains("panicked"), "{argv:?}: {stderr}");
                prop_assert!(
                    matches!(out.status.code(), Some(0) | Some(2)),
                    "{argv:?}: exit {:?}: {stderr}",
                    out.status
                );
                Ok(())
            })
            .unwrap()
    });
    println!(
        "command-line fuzz: {total} argument lists, exit codes {:?}",
        codes.borrow()
    );
}
