//! Input routing, in the real app under Xvfb with Mesa's software Vulkan driver: a drag
//! that starts on a panel's widget (the timeline slider, the energy plot, the teaching
//! panel) and the wheel over each panel leave the 3D camera exactly as it was; the same
//! drag and wheel over the 3D view do move it (so the input does reach the app).
//!
//! The input is the window system's: `gui --script drag=REGION` and `wheel=REGION`
//! write the cursor, button and wheel messages winit would write, at the middle of a
//! panel's rectangle as the panel drew it (`app::view::mark_region`); `camera` logs the
//! orbit camera's state, which the test compares bit for bit (shortest round-trip text).
//! Where xvfb-run is missing the tests say so and pass, except under CI (`CI` set).
#![cfg(feature = "app")]

mod common;

use common::{run_gui_in_xvfb, xvfb_run};
use std::path::Path;

/// One scripted input and the camera logged before and after it.
struct Probe {
    action: String,
    before: String,
    after: String,
}

/// Run the app with `inputs` (script actions such as `drag=plot`) spaced 20 frames apart,
/// the camera logged before and after each; returns each input's camera states and the
/// whole log. Every input must have found its region.
fn probe(size: (u32, u32), extra: &[&str], inputs: &[&str], name: &str) -> (Vec<Probe>, String) {
    let xvfb = xvfb_run().expect("checked by the caller");
    // The first frames: the window opens and the scene is framed.
    let mut frame = 60;
    let mut script = Vec::new();
    for input in inputs {
        script.push(format!("{frame}:camera"));
        script.push(format!("{}:{input}", frame + 1));
        frame += 20;
    }
    script.push(format!("{frame}:camera"));
    let end = (frame + 5).to_string();
    let script = script.join(",");
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let mut args = extra.to_vec();
    args.extend(["--script", &script, "--exit-after-frames", &end]);
    let (status, log) = run_gui_in_xvfb(&xvfb, &out_dir, size, &args, &[]);
    assert!(status.success(), "app failed ({status}):\n{log}");
    assert!(!log.contains("panicked"), "a panic:\n{log}");
    let cameras: Vec<String> = log
        .lines()
        .filter_map(|l| l.split_once("script camera: ").map(|(_, c)| c.to_string()))
        .collect();
    assert_eq!(cameras.len(), inputs.len() + 1, "camera lines:\n{log}");
    let aimed = log.matches(") at [").count();
    assert_eq!(aimed, inputs.len(), "an input found no region:\n{log}");
    let probes = inputs
        .iter()
        .enumerate()
        .map(|(k, a)| Probe {
            action: a.to_string(),
            before: cameras[k].clone(),
            after: cameras[k + 1].clone(),
        })
        .collect();
    (probes, log)
}

/// The camera part of a `script camera:` line (without the run's paused state).
fn camera(line: &str) -> &str {
    line.split(" (run paused").next().unwrap()
}

fn assert_routing(probes: &[Probe], log: &str) {
    for p in probes {
        let over_view = p.action.ends_with("=view");
        if over_view {
            assert_ne!(
                camera(&p.before),
                camera(&p.after),
                "{} over the 3D view did not move the camera:\n{log}",
                p.action
            );
        } else {
            assert_eq!(
                camera(&p.before),
                camera(&p.after),
                "{} moved the camera:\n{log}",
                p.action
            );
        }
    }
}

/// The default scene, running: drags from the timeline slider and the plot, the wheel
/// over every panel of the main window.
#[test]
fn drags_and_wheels_over_the_panels_leave_the_camera() {
    if xvfb_run().is_none() {
        return;
    }
    let inputs = [
        "drag=timeline",
        "drag=plot",
        "wheel=run_control",
        "wheel=controls",
        "wheel=energy",
        "wheel=plot",
        "wheel=timeline_bar",
        "wheel=teach",
        "drag=view",
        "wheel=view",
    ];
    let (probes, log) = probe((960, 600), &[], &inputs, "app_input_main");
    assert_routing(&probes, &log);
    // The slider took the drag: scrubbing pauses the running scene.
    assert!(
        probes[0].before.ends_with("(run paused: false)")
            && probes[0].after.ends_with("(run paused: true)"),
        "the timeline drag did not reach the slider:\n{log}"
    );
}

/// A lesson at a projector's 1024x768, the teaching panel open beside the 3D view: the
/// wheel over it and a drag on it leave the camera.
#[test]
fn the_teaching_panel_keeps_its_input() {
    if xvfb_run().is_none() {
        return;
    }
    let inputs = [
        "wheel=teach",
        "drag=teach",
        "drag=timeline",
        "wheel=energy",
        "wheel=view",
    ];
    let (probes, log) = probe(
        (1024, 768),
        &["--lesson", "box_on_box"],
        &inputs,
        "app_input_lesson",
    );
    assert_routing(&probes, &log);
}
