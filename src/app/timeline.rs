//! The timeline: a history of whole states of the run, a scrub bar under the 3D view and
//! step back / forward keys.
//!
//! The physics thread (`simulation.rs`) keeps, after every step, a copy of the
//! whole state a step reads: the [`World`] (bodies, containers, the solver's and the
//! contact pass's warm-start caches, the ledger, time and step count) and the repose
//! experiment's tracker, in a ring buffer ([`History`]) whose memory cap the user sees and
//! sets. The bytes of a copy are counted by the allocator as the copy is made (the heap
//! blocks it allocates, as requested; the allocator's own bookkeeping is not counted),
//! plus the inline size of the state. When a new state does not fit, the oldest go.
//!
//! Seeking to a step pauses the run and shows the stored state (the newest one at or
//! before the step when steps are missing, e.g. those the collision microscope took).
//! The states after it stay (scrub forward again) until a step is taken from it: then the
//! later states and the energy trace after it are dropped (a branch). Since the copy is
//! the whole state, the continued run equals, bit for bit, a run that never went back.

use super::sets::SimulationSystems;
use super::sim_state::{SceneWatcher, Simulation};
use crate::energy::EnergySample;
use crate::repose::ReposeTracker;
use crate::world::World;
use bevy::prelude::*;
use bevy_egui::egui;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::VecDeque;

/// Default memory cap of the history (bytes): 128 MiB, about 440 steps of the default
/// scene (a stored state of its 240 bodies takes 0.30 MB; the contacts are not stored).
/// Every step stores a state, and until the cap is reached each lands in memory the
/// process has not touched before, which costs the physics thread page faults and cache
/// misses in proportion to the cap; past it, states reuse the memory of the oldest.
pub const DEFAULT_CAP: usize = 128 << 20;

/// The system allocator, counting on each thread the bytes it allocates (see
/// [`allocated_by`]).
struct CountingAlloc;

thread_local! {
    static ALLOCATED: Cell<usize> = const { Cell::new(0) };
}

fn count(bytes: usize) {
    let _ = ALLOCATED.try_with(|c| c.set(c.get().wrapping_add(bytes)));
}

// SAFETY: every call is forwarded to `System` unchanged; counting touches a
// thread-local `Cell` that needs no allocation.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size.saturating_sub(layout.size()));
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// Run `f` and return its value with the heap bytes allocated on this thread meanwhile.
pub fn allocated_by<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = ALLOCATED.with(Cell::get);
    let value = f();
    (value, ALLOCATED.with(Cell::get).wrapping_sub(before))
}

/// One stored state.
struct Entry {
    world: World,
    repose: Option<ReposeTracker>,
    sample: EnergySample,
    bytes: usize,
}

/// The ring buffer of states (module doc). Entries are in increasing step order.
pub struct History {
    entries: VecDeque<Entry>,
    bytes: usize,
    cap: usize,
}

impl Default for History {
    fn default() -> Self {
        History {
            entries: VecDeque::new(),
            bytes: 0,
            cap: DEFAULT_CAP,
        }
    }
}

impl History {
    /// Store the state of `sim` (after the last entry's step), dropping the oldest
    /// states until it fits the cap. A state larger than the cap is not kept.
    ///
    /// The copy leaves out the step's contacts (the largest part of a world, and the
    /// next step detects them afresh from the bodies): [`Self::restore`] detects them
    /// again for the view. `sim` is lent only to take them out while it is copied.
    pub fn push(&mut self, sim: &mut Simulation) {
        if self.cap == 0 {
            // History off: no copies.
            self.clear();
            return;
        }
        let contacts = std::mem::take(&mut sim.world.contacts);
        let ((world, repose), heap) = allocated_by(|| (sim.world.clone(), sim.repose.clone()));
        sim.world.contacts = contacts;
        let bytes = heap + size_of::<Entry>();
        self.remove_from(sim.world.step_index);
        self.entries.push_back(Entry {
            world,
            repose,
            sample: sim.last_sample,
            bytes,
        });
        self.bytes += bytes;
        self.fit();
    }

    fn fit(&mut self) {
        while self.bytes > self.cap {
            match self.entries.pop_front() {
                Some(e) => self.bytes -= e.bytes,
                None => break,
            }
        }
    }

    /// Drop the states after `step`; whether any were dropped.
    pub fn truncate_after(&mut self, step: u64) -> bool {
        let mut dropped = false;
        while self
            .entries
            .back()
            .is_some_and(|e| e.world.step_index > step)
        {
            let e = self.entries.pop_back().expect("checked");
            self.bytes -= e.bytes;
            dropped = true;
        }
        dropped
    }

    /// Drop the states at `step` and after.
    pub fn remove_from(&mut self, step: u64) {
        while self
            .entries
            .back()
            .is_some_and(|e| e.world.step_index >= step)
        {
            let e = self.entries.pop_back().expect("checked");
            self.bytes -= e.bytes;
        }
    }

    pub fn clear(&mut self) {
        self.entries.clear();
        self.bytes = 0;
    }

    /// Set the memory cap (bytes); the oldest states go until the rest fit.
    pub fn set_cap(&mut self, cap: usize) {
        self.cap = cap;
        self.fit();
    }

    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Bytes held by the stored states.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// First and last stored step.
    pub fn range(&self) -> Option<(u64, u64)> {
        Some((
            self.entries.front()?.world.step_index,
            self.entries.back()?.world.step_index,
        ))
    }

    /// Put the newest stored state at or before `step` into `sim` (the spring released,
    /// an error cleared); whether there was one. The renderer rebuilds its meshes when
    /// the bodies or containers differ.
    pub fn restore(&self, step: u64, sim: &mut Simulation) -> bool {
        let i = self.entries.partition_point(|e| e.world.step_index <= step);
        let Some(e) = i.checked_sub(1).and_then(|i| self.entries.get(i)) else {
            return false;
        };
        let rebuild = e.world.bodies.len() != sim.world.bodies.len()
            || e.world.containers != sim.world.containers
            || e.world
                .bodies
                .iter()
                .zip(&sim.world.bodies)
                .any(|(a, b)| a.shape != b.shape);
        sim.world = e.world.clone();
        // The stored copy has no contacts (see `push`): the view's come from the bodies.
        sim.world.detect();
        sim.repose = e.repose.clone();
        sim.last_sample = e.sample;
        sim.grab = None;
        sim.error = None;
        if rebuild {
            sim.generation += 1;
        }
        true
    }
}

/// What the app sees of the history, and its requests (applied at the next frame).
#[derive(Resource, Debug, Clone)]
pub struct TimelineView {
    /// First and last stored step.
    pub range: Option<(u64, u64)>,
    /// The step shown.
    pub step: u64,
    pub states: usize,
    pub bytes: usize,
    pub cap: usize,
    /// Show the stored state of this step (pauses the run).
    pub seek: Option<u64>,
    /// Set the memory cap (bytes).
    pub cap_request: Option<usize>,
    /// The scrub bar's "save state" file name.
    pub save_path: String,
    /// Save the shown state as a scene file at the next frame ([`save_state`]).
    pub save_request: Option<std::path::PathBuf>,
    /// The last save's outcome (message, success).
    pub message: Option<(String, bool)>,
}

impl Default for TimelineView {
    fn default() -> Self {
        TimelineView {
            range: None,
            step: 0,
            states: 0,
            bytes: 0,
            cap: DEFAULT_CAP,
            seek: None,
            cap_request: None,
            save_path: "out/state.ron".into(),
            save_request: None,
            message: None,
        }
    }
}

impl TimelineView {
    pub(crate) fn update(&mut self, h: &History, step: u64) {
        self.range = h.range();
        self.step = step;
        self.states = h.len();
        self.bytes = h.bytes();
        self.cap = h.cap();
    }

    /// Whether a past state is shown (stored states after it).
    pub fn in_past(&self) -> bool {
        self.range.is_some_and(|(_, last)| self.step < last)
    }

    /// Seek one stored step back or forward from the one shown.
    pub fn step_by(&mut self, delta: i64) {
        let Some((first, last)) = self.range else {
            return;
        };
        let from = self.seek.unwrap_or(self.step);
        let target = from.saturating_add_signed(delta).clamp(first, last);
        // At either end nothing changes (and a running run is not paused).
        if target != from {
            self.seek = Some(target);
        }
    }
}

/// Save the state of `sim` as a scene file at `path` ([`crate::scene::save`]: the bodies
/// exactly, and in its `resume` section the step, sleep and warm-start state and the
/// ledger, so `impulse-lab run` continues it as the app does). The file is written
/// whole or not at all, then loaded back as the app's scene: "reset" returns to it and
/// the file is watched for edits.
pub fn save_state(sim: &mut Simulation, path: &std::path::Path) -> Result<(), String> {
    let name = path
        .file_stem()
        .map_or("state".into(), |s| s.to_string_lossy().into_owned());
    let scene = crate::scene::save::state_scene(&sim.scene, &sim.world, &sim.scene_forces, &name)?;
    let text = scene.to_ron().map_err(|e| e.to_string())?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    crate::output::write_file(path, text.as_bytes()).map_err(|e| e.to_string())?;
    sim.scene = crate::scene::load_scene(path).map_err(|e| e.to_string())?;
    sim.scene_path = Some(path.to_path_buf());
    Ok(())
}

/// Carry out a save request (before this frame's physics sync).
pub fn save_requested_state(
    mut view: ResMut<TimelineView>,
    mut sim: ResMut<Simulation>,
    mut watcher: ResMut<SceneWatcher>,
) {
    let Some(path) = view.save_request.take() else {
        return;
    };
    view.message = Some(match save_state(&mut sim, &path) {
        Ok(()) => {
            watcher.track(Some(&path));
            (
                format!(
                    "saved step {} as {} (reset returns to it)",
                    sim.world.step_index,
                    path.display()
                ),
                true,
            )
        }
        Err(e) => (format!("not saved: {e}"), false),
    });
}

/// The time of the state shown when it is a past one (the energy plot draws its cursor
/// there).
pub fn plot_cursor(view: &TimelineView, sim: &Simulation) -> Option<f64> {
    view.in_past().then_some(sim.world.time)
}

/// The scrub bar (a panel under the 3D view): the stored steps, step back / forward,
/// back to the newest state, and the memory cap.
pub fn scrub_bar(ui: &mut egui::Ui, view: &mut TimelineView, sim: &Simulation) {
    let _ = sim;
    ui.horizontal(|ui| {
        ui.label("Timeline");
        let Some((first, last)) = view.range else {
            ui.label("no states stored");
            return;
        };
        if ui
            .button("⏮")
            .on_hover_text("Step back through the stored states (←)")
            .clicked()
        {
            view.step_by(-1);
        }
        if ui
            .button("⏭")
            .on_hover_text("Step forward through the stored states (→)")
            .clicked()
        {
            view.step_by(1);
        }
        let mut step = view.seek.unwrap_or(view.step);
        let width = (ui.available_width() - 380.0).max(120.0);
        ui.spacing_mut().slider_width = width;
        // Room for a step count of 7 digits in the slider's number box.
        ui.spacing_mut().interact_size.x = 64.0;
        let r = ui
            .add(egui::Slider::new(&mut step, first..=last.max(first)).text("step"))
            .on_hover_text(
                "Scrub through the stored states (pauses). Playing or stepping from a past \
                 state drops the states after it.",
            );
        if r.changed() {
            view.seek = Some(step);
        }
        if ui
            .add_enabled(view.in_past(), egui::Button::new("⏩ newest"))
            .on_hover_text("Back to the newest stored state")
            .clicked()
        {
            view.seek = Some(last);
        }
        let mut cap_mb = view.cap as f64 / (1u64 << 20) as f64;
        ui.label(format!(
            "{} states, {:.1} MB of",
            view.states,
            view.bytes as f64 / (1u64 << 20) as f64
        ));
        if ui
            .add(
                egui::DragValue::new(&mut cap_mb)
                    .range(0.0..=65536.0)
                    .speed(8.0)
                    .suffix(" MB"),
            )
            .on_hover_text(
                "Memory cap of the stored states: when a new state does not fit, the oldest go",
            )
            .changed()
        {
            view.cap_request = Some((cap_mb * (1u64 << 20) as f64) as usize);
        }
    });
    ui.horizontal(|ui| {
        ui.add(egui::TextEdit::singleline(&mut view.save_path).desired_width(160.0));
        if ui
            .button("Save state as scene")
            .on_hover_text(
                "Write the bodies as they are now (positions, orientations, velocities), \
                 the containers, method and parameters as a scene file that `impulse-lab run` \
                 and the app load; reset then returns to it. Warm-start state and the ledger \
                 are not saved: a run from the file starts them cold.",
            )
            .clicked()
        {
            view.save_request = Some(std::path::PathBuf::from(view.save_path.trim()));
        }
        if let Some((msg, ok)) = &view.message {
            let color = if *ok {
                egui::Color32::from_rgb(30, 120, 40)
            } else {
                egui::Color32::from_rgb(200, 30, 30)
            };
            ui.colored_label(color, msg);
        }
    });
}

/// The step back / forward keys (windowed app; the scrub bar is drawn by the panels).
pub struct TimelinePlugin;

impl Plugin for TimelinePlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(Update, timeline_keys.before(SimulationSystems));
    }
}

/// Step back / forward keys (← →) when egui does not want the keyboard.
pub fn timeline_keys(
    keys: Res<ButtonInput<KeyCode>>,
    wants: Res<bevy_egui::input::EguiWantsInput>,
    mut view: ResMut<TimelineView>,
) {
    if wants.wants_keyboard_input() {
        return;
    }
    if keys.just_pressed(KeyCode::ArrowLeft) {
        view.step_by(-1);
    }
    if keys.just_pressed(KeyCode::ArrowRight) {
        view.step_by(1);
    }
}
