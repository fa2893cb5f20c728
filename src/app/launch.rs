//! How the app was launched: the automation flags of scripts and tests, and where its
//! assets are. Read by the capture and recording plugins and the app's builders.

use crate::dynamics::solver::SolverKind;
use bevy::prelude::*;
use std::path::PathBuf;

/// Scripted capture and exit.
#[derive(Resource, Debug, Clone, Default)]
pub struct Automation {
    /// Write a screenshot here once `after_frames` frames have been rendered.
    pub screenshot: Option<PathBuf>,
    pub after_frames: u32,
    /// Quit after this many frames (and after the scripted screenshot is written).
    pub exit_after_frames: Option<u32>,
    /// What to do at which frame (`gui --script`, for tests and scripted runs), in frame
    /// order.
    pub script: Script,
}

/// The actions of a `gui --script`, in frame order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Script(pub Vec<(u32, ScriptAction)>);

/// One action of a `gui --script` (see [`parse_script`]).
#[derive(Debug, Clone, PartialEq)]
pub enum ScriptAction {
    /// Switch the render quality (as F8 does).
    ToggleQuality,
    /// Open a scene (a bundled scene's name or a file).
    Scene(String),
    /// Switch the collision method.
    Solver(SolverKind),
    /// Reset the run (as `r` does).
    Reset,
    /// Write a screenshot of the window here.
    Screenshot(PathBuf),
    /// Panic in a system: tests the crash save ([`crate::app::crash`]).
    Panic,
    /// A left-button drag as a mouse gives it: the cursor rests over the middle of a
    /// named screen region ([`crate::app::view::region`]), the button goes down, the cursor
    /// moves 60 px right and 20 px down over six frames, the button comes up.
    Drag(String),
    /// Three wheel clicks (lines) toward the user over the middle of a named region.
    Wheel(String),
    /// Write the orbit camera's state to the log (`script camera: ...`).
    Camera,
    /// Open a lesson (a bundled lesson's name or a file), as the lesson menu does.
    Lesson(String),
    /// Run the open lesson's check, as its Check button does.
    Check,
    /// Hold the script (and the scripted exit) until the lesson's check has finished.
    Wait,
    /// Write every text egui draws this frame, with its rectangle and clip rectangle, to
    /// this file (see `capture::TextDump`).
    Texts(PathBuf),
    /// Write every line egui draws this frame (colour, points) to this file (see
    /// `capture::TextDump`).
    Lines(PathBuf),
    /// Set a method parameter as `run --set FIELD=VALUE` does: (field, value).
    Set(String, String),
    /// Pin the current run, as the plot's "Pin run" button does.
    Pin,
    /// Show a quantity (`app::quantity::QUANTITIES`' id) in a stacked plot (0 = top; one
    /// past the last adds a plot).
    Plot(usize, String),
    /// Select a body by index, as a click on it does.
    Select(usize),
    /// Take this many steps before the next frame is shown (as `--steps` does), paused
    /// or not.
    Steps(u64),
    /// Start comparing these methods, as the teaching panel's "Start compare" does.
    Compare(Vec<SolverKind>),
    /// Back to the sandbox: leave compare mode or close the lesson.
    Sandbox,
    /// Catch the next impact in the collision microscope.
    Microscope,
    /// Show this step from the timeline, as the scrub bar does (pauses).
    Seek(u64),
    /// Play, or pause, the run.
    Play,
    Pause,
}

/// Parse a script: comma-separated `FRAME:ACTION` items, ACTION one of `quality` (toggle
/// the render quality), `scene=NAME`, `solver=KIND`, `reset`, `shot=PATH` (screenshot),
/// `panic`, `drag=REGION`, `wheel=REGION`, `camera` (log the camera), `lesson=NAME`,
/// `check`, `wait`, `texts=PATH`, `lines=PATH`, `set=FIELD:VALUE`, `pin`,
/// `plot=QUANTITY` or `plot=K:QUANTITY` (stacked plot K, 0 = top), `select=BODY`,
/// `steps=N`, `compare=A+B[+C]`, `sandbox`, `microscope`, `seek=STEP`, `play` and
/// `pause`; e.g.
/// `30:quality,60:scene=pile_spheres_1080,90:solver=etm`. A drag or wheel takes the
/// 12 frames after its own and holds the script 14; `lesson` and a finished `wait` hold
/// it 10 frames (the panels lay out anew), `shot` 5, `texts` 2. The items are sorted by frame, and the app's
/// scripted exit waits for the script's end.
pub fn parse_script(s: &str) -> Result<Script, String> {
    let mut out = Vec::new();
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (frame, action) = item
            .split_once(':')
            .ok_or_else(|| format!("'{item}': expected FRAME:ACTION"))?;
        let frame: u32 = frame
            .trim()
            .parse()
            .map_err(|_| format!("'{item}': '{frame}' is not a frame number"))?;
        let (verb, arg) = match action.split_once('=') {
            Some((v, a)) => (v.trim(), Some(a.trim())),
            None => (action.trim(), None),
        };
        let action = match (verb, arg) {
            ("quality", None) => ScriptAction::ToggleQuality,
            ("reset", None) => ScriptAction::Reset,
            ("panic", None) => ScriptAction::Panic,
            ("camera", None) => ScriptAction::Camera,
            ("drag", Some(a)) if !a.is_empty() => ScriptAction::Drag(a.into()),
            ("wheel", Some(a)) if !a.is_empty() => ScriptAction::Wheel(a.into()),
            ("lesson", Some(a)) if !a.is_empty() => ScriptAction::Lesson(a.into()),
            ("check", None) => ScriptAction::Check,
            ("wait", None) => ScriptAction::Wait,
            ("texts", Some(a)) if !a.is_empty() => ScriptAction::Texts(a.into()),
            ("lines", Some(a)) if !a.is_empty() => ScriptAction::Lines(a.into()),
            ("pin", None) => ScriptAction::Pin,
            ("sandbox", None) => ScriptAction::Sandbox,
            ("microscope", None) => ScriptAction::Microscope,
            ("play", None) => ScriptAction::Play,
            ("pause", None) => ScriptAction::Pause,
            ("seek", Some(a)) => ScriptAction::Seek(
                a.parse()
                    .map_err(|_| format!("'{item}': '{a}' is not a step"))?,
            ),
            ("compare", Some(a)) => ScriptAction::Compare(
                a.split('+')
                    .map(|k| k.trim().parse())
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("'{item}': {e}"))?,
            ),
            ("set", Some(a)) => {
                let (field, value) = a
                    .split_once(':')
                    .ok_or_else(|| format!("'{item}': expected set=FIELD:VALUE"))?;
                ScriptAction::Set(field.trim().into(), value.trim().into())
            }
            ("plot", Some(a)) => {
                let (k, id) = match a.split_once(':') {
                    Some((k, id)) => (
                        k.trim()
                            .parse()
                            .map_err(|_| format!("'{item}': '{k}' is not a plot number"))?,
                        id.trim(),
                    ),
                    None => (0, a),
                };
                if id.is_empty() {
                    return Err(format!("'{item}': expected plot=QUANTITY"));
                }
                ScriptAction::Plot(k, id.into())
            }
            ("steps", Some(a)) => ScriptAction::Steps(
                a.parse()
                    .map_err(|_| format!("'{item}': '{a}' is not a step count"))?,
            ),
            ("select", Some(a)) => ScriptAction::Select(
                a.parse()
                    .map_err(|_| format!("'{item}': '{a}' is not a body index"))?,
            ),
            ("scene", Some(a)) if !a.is_empty() => ScriptAction::Scene(a.into()),
            ("shot", Some(a)) if !a.is_empty() => ScriptAction::Screenshot(a.into()),
            ("solver", Some(a)) => {
                ScriptAction::Solver(a.parse().map_err(|e| format!("'{item}': {e}"))?)
            }
            _ => {
                return Err(format!(
                    "'{item}': unknown action (expected quality, scene=NAME, solver=KIND, reset, shot=PATH, panic, drag=REGION, wheel=REGION, camera, lesson=NAME, check, wait, texts=PATH, lines=PATH, set=FIELD:VALUE, pin, plot=QUANTITY, plot=K:QUANTITY, select=BODY, steps=N, compare=A+B, sandbox, microscope, seek=STEP, play or pause)"
                ));
            }
        };
        out.push((frame, action));
    }
    out.sort_by_key(|(f, _)| *f);
    Ok(Script(out))
}

/// The folder Bevy reads its assets from: `assets/` in the working directory, else the
/// crate's own.
pub fn asset_dir() -> String {
    let local = PathBuf::from("assets");
    if local.is_dir() {
        "assets".into()
    } else {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("assets")
            .display()
            .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_parse_the_mode_and_timeline_actions() {
        let s =
            parse_script("9:sandbox,3:compare=etm+sqm+smm,5:microscope,7:seek=120,8:play,9:pause")
                .unwrap();
        assert_eq!(s.0.len(), 6);
        // Sorted by frame (stable for equal frames).
        assert!(matches!(&s.0[0], (3, ScriptAction::Compare(k))
            if *k == [SolverKind::Etm, SolverKind::Sqm, SolverKind::Smm]));
        assert!(matches!(s.0[1], (5, ScriptAction::Microscope)));
        assert!(matches!(s.0[2], (7, ScriptAction::Seek(120))));
        assert!(matches!(s.0[3], (8, ScriptAction::Play)));
        assert!(matches!(s.0[4], (9, ScriptAction::Sandbox)));
        assert!(matches!(s.0[5], (9, ScriptAction::Pause)));
        for bad in [
            "1:compare=etm+nope",
            "1:seek=-3",
            "1:seek=",
            "1:sandbox=1",
            "1:teleport",
        ] {
            assert!(parse_script(bad).is_err(), "{bad}");
        }
    }
}
