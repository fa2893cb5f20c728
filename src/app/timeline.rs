//! The timeline: the run's history, a scrub bar under the 3D view and step back /
//! forward keys.
//!
//! The physics thread (`simulation.rs`) records every step in a [`History`]
//! ([`crate::history`]: keyframes every N steps, exact re-simulation between them,
//! branches) of [`Frame`]s, the whole state a step reads: the [`World`] (bodies,
//! containers, the solver's and the contact pass's warm-start caches, the kept
//! manifolds, the ledger, time and step count), the repose experiment's tracker, the
//! mouse spring and the scene's forces. The bytes of a keyframe are counted by the
//! allocator as the copy is made (the heap blocks it allocates, as requested; the
//! allocator's own bookkeeping is not counted), plus the inline size of the frame.
//!
//! Seeking to a step pauses the run and shows the state re-simulated from the keyframe
//! before it (within a gap of steps the history did not see, e.g. the collision
//! microscope's, the newest state before the gap). Stepping from a past step keeps the
//! old future as a branch, which the scrub bar's branch menu returns to.

use super::messages::SimCommand;
use super::sets::SimulationSystems;
use super::sim_state::Simulation;
use crate::energy::EnergySample;
use crate::history::{BranchInfo, Capture, Replay};
use crate::repose::ReposeTracker;
use crate::world::World;
use bevy::prelude::*;
use bevy_egui::egui;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Default memory cap of the history (bytes): 512 MiB. The keyframe interval is chosen
/// so that the cap holds [`crate::history::TARGET_SPAN`] (3 min) of the run; the larger
/// the cap, the denser the keyframes and the shorter the worst scrub. Measured
/// (docs/results/timeline-history.md): a keyframe of pile_spheres_1080 under ETM takes
/// 0.8 MB, so 512 MiB spaces keyframes about 210 steps apart.
pub const DEFAULT_CAP: usize = 512 << 20;

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

/// What a keyframe of the timeline holds: everything [`Simulation::step`] reads and
/// changes besides the scene it was built from. The world's contacts are left out (a
/// step's narrow phase overwrites them; the kept manifolds a step recycles are in the
/// collision pipeline, which the copy holds).
pub struct Frame {
    pub world: World,
    pub repose: Option<ReposeTracker>,
    pub repose_measurement: Option<crate::repose::ReposeMeasurement>,
    pub grab: Option<super::sim_state::GrabSpring>,
    pub scene_forces: Vec<crate::world::AppliedForce>,
    pub last_sample: EnergySample,
}

/// A copy of `world` without its contacts, and the heap bytes it holds.
fn copy_world(world: &World) -> (World, usize) {
    let contacts = world.contacts.len() * size_of::<crate::collision::Contact>();
    let (mut copy, heap) = allocated_by(|| world.clone());
    copy.contacts = Vec::new();
    (copy, heap.saturating_sub(contacts))
}

impl Replay for Frame {
    type Sample = EnergySample;

    fn dt(&self) -> f64 {
        self.world.dt
    }

    fn replay(&mut self) -> Result<EnergySample, String> {
        let (sample, _) = super::sim_state::step_parts(
            &mut self.world,
            &self.scene_forces,
            &mut self.grab,
            &mut self.repose,
            &mut self.repose_measurement,
        )?;
        self.last_sample = sample;
        Ok(sample)
    }
}

/// A frame of these parts (copied) and the heap bytes the copy took.
fn frame_of(
    world: &World,
    repose: &Option<ReposeTracker>,
    repose_measurement: &Option<crate::repose::ReposeMeasurement>,
    grab: &Option<super::sim_state::GrabSpring>,
    scene_forces: &[crate::world::AppliedForce],
    last_sample: EnergySample,
) -> (Frame, usize) {
    let (world, heap) = copy_world(world);
    let (frame, more) = allocated_by(|| Frame {
        world,
        repose: repose.clone(),
        repose_measurement: repose_measurement.clone(),
        grab: *grab,
        scene_forces: scene_forces.to_vec(),
        last_sample,
    });
    (frame, heap + more)
}

impl Capture<Frame> for Frame {
    fn step_index(&self) -> u64 {
        self.world.step_index
    }
    fn time(&self) -> f64 {
        self.world.time
    }
    fn sample(&self) -> EnergySample {
        self.last_sample
    }
    fn capture(&self) -> (Frame, usize) {
        frame_of(
            &self.world,
            &self.repose,
            &self.repose_measurement,
            &self.grab,
            &self.scene_forces,
            self.last_sample,
        )
    }
}

impl Capture<Frame> for Simulation {
    fn step_index(&self) -> u64 {
        self.world.step_index
    }
    fn time(&self) -> f64 {
        self.world.time
    }
    fn sample(&self) -> EnergySample {
        self.last_sample
    }
    fn capture(&self) -> (Frame, usize) {
        frame_of(
            &self.world,
            &self.repose,
            &self.repose_measurement,
            &self.grab,
            &self.scene_forces,
            self.last_sample,
        )
    }
}

/// The timeline's history of the run: keyframes and re-simulation in branches
/// ([`crate::history`]).
pub type History = crate::history::History<Frame>;

/// Show `frame` (a state of the run from the history) in `sim`: its world, repose
/// experiment and sample; the spring released, an error cleared, the contacts detected
/// again for the view. The renderer rebuilds its meshes when the bodies or containers
/// differ.
pub fn restore(frame: Frame, sim: &mut Simulation) {
    let rebuild = frame.world.bodies.len() != sim.world.bodies.len()
        || frame.world.containers != sim.world.containers
        || frame
            .world
            .bodies
            .iter()
            .zip(&sim.world.bodies)
            .any(|(a, b)| a.shape != b.shape);
    sim.world = frame.world;
    sim.world.detect();
    sim.repose = frame.repose;
    sim.repose_measurement = frame.repose_measurement;
    sim.scene_forces = frame.scene_forces;
    sim.last_sample = frame.last_sample;
    sim.grab = None;
    sim.error = None;
    if rebuild {
        sim.generation += 1;
    }
}

/// What the app sees of the history, and its requests (applied at the next frame).
#[derive(Resource, Debug, Clone)]
pub struct TimelineView {
    /// First and last step held (the current branch with the steps before its fork).
    pub range: Option<(u64, u64)>,
    /// The step shown.
    pub step: u64,
    /// Keyframes held (all branches).
    pub keyframes: usize,
    /// Steps between keyframes now.
    pub interval: u64,
    /// Bytes of the keyframes and energy samples.
    pub bytes: usize,
    pub cap: usize,
    /// Simulated time held (current branch) and the time the cap holds (s).
    pub span_secs: f64,
    pub capacity_secs: f64,
    /// The branches of the run (playing from a past step keeps the old future as one).
    pub branches: Vec<BranchInfo>,
    /// The scrub bar's "save state" file name.
    pub save_path: String,
    /// The last save's or history operation's outcome (message, success).
    pub message: Option<(String, bool)>,
    /// Wall-clock time of the last seek's re-simulation.
    pub last_seek: Option<std::time::Duration>,
}

impl Default for TimelineView {
    fn default() -> Self {
        TimelineView {
            range: None,
            step: 0,
            keyframes: 0,
            interval: 1,
            bytes: 0,
            cap: DEFAULT_CAP,
            span_secs: 0.0,
            capacity_secs: 0.0,
            branches: Vec::new(),
            save_path: "out/state.ron".into(),
            message: None,
            last_seek: None,
        }
    }
}

impl TimelineView {
    pub(crate) fn update(&mut self, h: &History, step: u64) {
        self.range = Some(h.range());
        self.step = step;
        self.keyframes = h.keyframes();
        self.interval = h.interval();
        self.bytes = h.bytes();
        self.cap = h.cap();
        self.span_secs = h.span_secs();
        self.capacity_secs = h.capacity_secs();
        self.branches = h.branches();
    }

    /// Whether a past state is shown (stored states after it).
    pub fn in_past(&self) -> bool {
        self.range.is_some_and(|(_, last)| self.step < last)
    }

    /// The seek one stored step back or forward from the one shown (none at either
    /// end, so that a running run is not paused).
    pub fn step_by(&self, delta: i64) -> Option<SimCommand> {
        let (first, last) = self.range?;
        let target = self.step.saturating_add_signed(delta).clamp(first, last);
        (target != self.step).then_some(SimCommand::Seek(target))
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

/// The time of the state shown when it is a past one (the energy plot draws its cursor
/// there).
pub fn plot_cursor(view: &TimelineView, sim: &Simulation) -> Option<f64> {
    view.in_past().then_some(sim.world.time)
}

/// The scrub bar (a panel under the 3D view): the stored steps, step back / forward,
/// back to the newest state, and the memory cap; what the user asks of the history goes
/// to `commands`. `presenting`: presentation mode, which keeps the scrubbing and leaves
/// out the history's memory and the save-state row (developer items).
pub fn scrub_bar(
    ui: &mut egui::Ui,
    view: &mut TimelineView,
    commands: &mut Vec<SimCommand>,
    presenting: bool,
) {
    // Wrapped: in a narrow window the history's figures go to a second line rather than
    // past the window's edge.
    ui.horizontal_wrapped(|ui| {
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
            commands.extend(view.step_by(-1));
        }
        if ui
            .button("⏭")
            .on_hover_text("Step forward through the stored states (→)")
            .clicked()
        {
            commands.extend(view.step_by(1));
        }
        let mut step = view.step;
        let width = (ui.available_width() - 520.0).max(120.0);
        ui.spacing_mut().slider_width = width;
        // Room for a step count of 7 digits in the slider's number box.
        ui.spacing_mut().interact_size.x = 64.0;
        let r = ui
            .add(egui::Slider::new(&mut step, first..=last.max(first)).text("step"))
            .on_hover_text(
                "Scrub through the run (pauses). Playing or stepping from a past step keeps \
                 the steps after it as a branch you can return to.",
            );
        super::view::mark_region(ui.ctx(), "timeline", r.rect);
        if r.changed() {
            commands.push(SimCommand::Seek(step));
        }
        if ui
            .add_enabled(view.in_past(), egui::Button::new("⏩ newest"))
            .on_hover_text("Back to the newest stored state")
            .clicked()
        {
            commands.push(SimCommand::Seek(last));
        }
        if view.branches.len() > 1 {
            commands.extend(branch_picker(ui, view));
        }
        if presenting {
            return;
        }
        ui.label(format!(
            "history {} of {} cap",
            duration(view.span_secs),
            duration(view.capacity_secs)
        ))
        .on_hover_text(format!(
            "{} keyframes, one every {} steps, {:.1} MB. A step between keyframes is \
             re-simulated from the one before it, bit for bit.",
            view.keyframes,
            view.interval,
            view.bytes as f64 / (1u64 << 20) as f64,
        ));
        let mut cap_mb = view.cap as f64 / (1u64 << 20) as f64;
        if ui
            .add(
                egui::DragValue::new(&mut cap_mb)
                    .range(0.0..=65536.0)
                    .speed(8.0)
                    .suffix(" MB"),
            )
            .on_hover_text(
                "Memory cap of the history: keyframes are spaced so that it holds 3 min \
                 of the run; when a keyframe does not fit, the oldest go",
            )
            .changed()
        {
            commands.push(SimCommand::HistoryCap(
                (cap_mb * (1u64 << 20) as f64) as usize,
            ));
        }
    });
    if presenting {
        return;
    }
    ui.horizontal(|ui| {
        ui.add(egui::TextEdit::singleline(&mut view.save_path).desired_width(160.0));
        if ui
            .button("Save state as scene")
            .on_hover_text(
                "Write the state as it is now as a scene file that `impulse-lab run` and \
                 the app load: the bodies (positions, orientations, velocities), the \
                 containers, method and parameters, and in its `resume` section the step, \
                 sleep and warm-start state and the energy ledger, so that a run from the \
                 file continues this one step for step. Reset then returns to it.",
            )
            .clicked()
        {
            commands.push(SimCommand::SaveState(std::path::PathBuf::from(
                view.save_path.trim(),
            )));
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

/// A simulated duration as the timeline shows it: "45.2 s", "2 min 14 s".
pub fn duration(secs: f64) -> String {
    if !secs.is_finite() {
        return "∞".into();
    }
    if secs < 60.0 {
        return format!("{secs:.1} s");
    }
    let whole = secs.round() as u64;
    match whole % 60 {
        0 => format!("{} min", whole / 60),
        s => format!("{} min {s} s", whole / 60),
    }
}

/// The branch picker: return to another branch of the run (its newest step).
fn branch_picker(ui: &mut egui::Ui, view: &TimelineView) -> Option<SimCommand> {
    let label =
        |i: usize, b: &BranchInfo| format!("branch {} (to {})", i + 1, duration(b.end_time));
    let current = view.branches.iter().position(|b| b.current);
    let text = current.map_or("branch".into(), |i| label(i, &view.branches[i]));
    let mut pick = None;
    egui::ComboBox::from_id_salt("timeline-branch")
        .selected_text(text)
        .show_ui(ui, |ui| {
            for (i, b) in view.branches.iter().enumerate() {
                if ui.selectable_label(b.current, label(i, b)).clicked() && !b.current {
                    pick = Some(b.id);
                }
            }
        })
        .response
        .on_hover_text(
            "Playing from a past step keeps the old future as a branch: pick one to return \
             to its newest step",
        );
    pick.map(SimCommand::Branch)
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
    view: Res<TimelineView>,
    mut commands: MessageWriter<SimCommand>,
) {
    if wants.wants_keyboard_input() {
        return;
    }
    if keys.just_pressed(KeyCode::ArrowLeft) {
        commands.write_batch(view.step_by(-1));
    }
    if keys.just_pressed(KeyCode::ArrowRight) {
        commands.write_batch(view.step_by(1));
    }
}
