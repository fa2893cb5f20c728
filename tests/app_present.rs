//! The teaching panel on a projector: every bundled lesson, opened in the real app under
//! Xvfb at 1024x768 in presentation mode with the projector profile, runs its check; the
//! test reads every figure the Check table shows (the texts egui draws, with their
//! rectangles and clip rectangles: `gui --script texts=PATH`) and compares it with the
//! same check computed here. A figure counts as shown only if its name, its measured
//! value and its expected value are each drawn whole (inside their clip rectangle and
//! the window); the panel is scrolled down with the wheel between readings, as a
//! lecturer would. The value must read the computed one to the digits it shows.
//! Where xvfb-run is missing the test says so and passes, except under CI (`CI` set).
#![cfg(feature = "app")]

mod common;

use common::{run_gui_in_xvfb, xvfb_run};
use impulse_lab::app::teach::display_text;
use impulse_lab::lesson::{self, CheckOutcome};
use std::path::{Path, PathBuf};

const SIZE: (u32, u32) = (1024, 768);
/// Readings per lesson: one at the top, then one after each wheel turn over the panel.
const READINGS: usize = 5;

/// One text egui drew: its rectangle, its clip rectangle, the text.
struct Drawn {
    rect: [f32; 4],
    clip: [f32; 4],
    text: String,
}

impl Drawn {
    /// Inside its clip rectangle and the window (half a point of rounding allowed).
    fn whole(&self) -> bool {
        let [x0, y0, x1, y1] = self.rect;
        let [c0, d0, c1, d1] = self.clip;
        let (w, h) = (SIZE.0 as f32, SIZE.1 as f32);
        let e = 0.5;
        x0 >= c0.max(0.0) - e && y0 >= d0.max(0.0) - e && x1 <= c1.min(w) + e && y1 <= d1.min(h) + e
    }
}

fn read_texts(path: &Path) -> Vec<Drawn> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let nums = |s: &str| -> [f32; 4] {
        let v: Vec<f32> = s.split(' ').map(|x| x.parse().unwrap()).collect();
        [v[0], v[1], v[2], v[3]]
    };
    text.lines()
        .map(|l| {
            let mut parts = l.splitn(3, '\t');
            let rect = nums(parts.next().unwrap());
            let clip = nums(parts.next().unwrap());
            let raw = parts.next().unwrap_or("");
            let text = raw
                .replace("\\n", "\n")
                .replace("\\t", "\t")
                .replace("\\\\", "\\");
            Drawn { rect, clip, text }
        })
        .collect()
}

/// A number as the table prints it (`1.0914e-15`) and half a unit of its last digit.
fn parse_shown(s: &str) -> Option<(f64, f64)> {
    let v: f64 = s.trim().parse().ok()?;
    let (mantissa, exp) = s.trim().split_once('e')?;
    let digits = mantissa.split_once('.').map_or(0, |(_, f)| f.len()) as i32;
    let exp: i32 = exp.parse().ok()?;
    Some((v, 0.5 * 10f64.powi(exp - digits)))
}

/// Whether figure `k` of `computed` is shown whole in `drawn`: its name, then (in drawing
/// order) its value and its expected text. Returns the value read, or why not. A name
/// drawn more than once is tried at each place.
fn find_figure(drawn: &[Drawn], computed: &CheckOutcome, k: usize) -> Result<f64, String> {
    let f = &computed.figures[k];
    let name = display_text(&f.name);
    let mut why = format!("figure '{name}' not drawn");
    for (at, label) in drawn.iter().enumerate().filter(|(_, d)| d.text == name) {
        match read_after(label, &drawn[at + 1..], f) {
            Ok(v) => return Ok(v),
            Err(e) => why = format!("figure '{name}': {e}"),
        }
    }
    Err(why)
}

/// The value and expected text drawn after a figure's name `label`, checked whole and
/// against the computed figure `f`.
fn read_after(label: &Drawn, rest: &[Drawn], f: &lesson::Figure) -> Result<f64, String> {
    let number = rest
        .iter()
        .find(|d| parse_shown(&d.text).is_some())
        .ok_or("no number drawn after it")?;
    let expected = rest
        .iter()
        .find(|d| d.text == display_text(&f.expected))
        .ok_or("its expected text is not drawn")?;
    for (what, d) in [("name", label), ("value", number), ("expected", expected)] {
        if !d.whole() {
            return Err(format!(
                "its {what} '{}' is cut (rect {:?}, clip {:?})",
                d.text, d.rect, d.clip
            ));
        }
    }
    let (v, half_unit) = parse_shown(&number.text).unwrap();
    if (v - f.measured).abs() > half_unit * (1.0 + 1e-9) {
        return Err(format!(
            "shows {} where the check computes {:e}",
            number.text, f.measured
        ));
    }
    Ok(v)
}

#[test]
fn every_lesson_check_table_reads_whole_at_1024x768_on_a_projector() {
    let Some(xvfb) = xvfb_run() else {
        return;
    };
    let names: Vec<String> = lesson::bundled_lessons()
        .unwrap()
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(names.len() >= 6, "lessons: {names:?}");
    // The same checks, computed here while the app runs its own.
    let computing = {
        let names = names.clone();
        std::thread::spawn(move || {
            names
                .iter()
                .map(|n| {
                    let l = lesson::load_lesson(&lesson::resolve_lesson(n)).unwrap();
                    l.run_check().unwrap_or_else(|e| panic!("{n}: {e}"))
                })
                .collect::<Vec<_>>()
        })
    };
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("app_present");
    let dump = |n: &str, r: usize| -> PathBuf { out_dir.join(format!("{n}.{r}.tsv")) };
    let mut script = Vec::new();
    let mut frame = 20;
    for n in &names {
        for r in 0..READINGS {
            let _ = std::fs::remove_file(dump(n, r));
        }
        script.push(format!("{frame}:lesson={n}"));
        script.push(format!("{}:check", frame + 1));
        script.push(format!("{}:wait", frame + 2));
        for r in 0..READINGS {
            if r > 0 {
                script.push(format!("{}:wheel=teach", frame + 3));
            }
            script.push(format!("{}:texts={}", frame + 3, dump(n, r).display()));
        }
        frame += 10;
    }
    let script = script.join(",");
    let end = frame.to_string();
    let (status, log) = run_gui_in_xvfb(
        &xvfb,
        &out_dir,
        SIZE,
        &[
            "--present",
            "--projector",
            "--script",
            &script,
            "--exit-after-frames",
            &end,
        ],
        &[],
    );
    assert!(status.success(), "app failed ({status}):\n{log}");
    assert!(!log.contains("panicked"), "a panic:\n{log}");
    let computed = computing.join().unwrap();
    let mut failures = Vec::new();
    for (n, outcome) in names.iter().zip(&computed) {
        assert!(!outcome.figures.is_empty(), "{n}: no figures");
        let readings: Vec<Vec<Drawn>> = (0..READINGS).map(|r| read_texts(&dump(n, r))).collect();
        for k in 0..outcome.figures.len() {
            let found: Vec<Result<f64, String>> = readings
                .iter()
                .map(|d| find_figure(d, outcome, k))
                .collect();
            match found.iter().find_map(|r| r.as_ref().ok()) {
                Some(v) => eprintln!(
                    "{n}: '{}' reads {v:e} (computed {:e})",
                    outcome.figures[k].name, outcome.figures[k].measured
                ),
                None => {
                    let mut why: Vec<&String> =
                        found.iter().filter_map(|r| r.as_ref().err()).collect();
                    why.dedup();
                    failures.push(format!("{n}, figure {k}: {why:?}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
