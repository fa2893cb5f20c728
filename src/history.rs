//! A run's history: keyframes plus deterministic re-simulation, in branches.
//!
//! A step of the physics core is a pure function of the state it reads, so a run need
//! not be stored step by step: [`History`] keeps a whole copy of the state (a
//! *keyframe*) every `interval` steps and the per-step energy samples, and recovers any
//! other step `t` by copying the newest keyframe `k ≤ t` and taking `t − k` plain steps
//! from it ([`Replay::replay`]). The state so recovered is, bit for bit, the one the run
//! had at `t`, provided every step between `k` and `t` was a plain step of the state
//! alone. Anything else that changes the state (a parameter edit, a method switch, a
//! spawned body, the mouse spring, steps the app takes itself) is recorded with
//! [`History::edit`], which stores the edited state as a keyframe at its step: a
//! re-simulation starts at the newest keyframe at or before its target, so it never
//! crosses an edit. A keyframe recorded by `edit` past the recorded end (steps the
//! history did not see) closes the segment before it: steps in such a gap show the
//! newest state before them.
//!
//! **Interval.** Each keyframe sets the interval to the next from its measured size
//! `b` (bytes, [`Capture::capture`]): with `B` the keyframe budget (the cap less the scrub
//! cache's share and the energy samples of [`TARGET_SPAN`]) and `S = TARGET_SPAN / dt`
//! the steps to hold, `interval = ⌈S·b / B⌉` (at least 1, at most `S / MIN_KEYFRAMES`): then `S / interval` keyframes
//! of size `b` fit in `B`, and the cap spans `TARGET_SPAN` of simulated time however
//! large the state. The worst scrub re-simulates `interval − 1` steps.
//!
//! **Scrub cache.** The states re-simulated on the way to a target are kept (the last
//! ones, up to a `1/CACHE_SHARE` of the cap), so the next seek one step back or forward
//! is a copy or one step, not a re-simulation from the keyframe.
//!
//! **Branches.** Stepping from a past step `t` does not drop the future after it: the
//! branch that owns `t` is split, its steps after `t` going to a new branch whose first
//! keyframe is the state at `t` (so each branch re-simulates from its own keyframes)
//! and whose parent is the split one (steps up to `t` are shown from the parent). The
//! run continues in the split branch; [`History::switch`] returns to any other.
//!
//! **Memory.** Keyframes are counted at the bytes [`Capture::capture`] reports, samples at
//! their size. Past the cap, the oldest keyframe of all branches goes with its samples
//! (a branch left with none goes); the current branch's newest keyframe stays.

use std::collections::VecDeque;

/// Simulated time the default policy makes the cap hold (s).
pub const TARGET_SPAN: f64 = 180.0;

/// The scrub cache may use this fraction (1/n) of the cap.
pub const CACHE_SHARE: usize = 8;

/// Fewest keyframes per [`TARGET_SPAN`]: the interval is at most the span's steps over
/// this (a cap too small for the span then holds less of it, the oldest keyframes
/// going, rather than one keyframe and an ever longer re-simulation).
pub const MIN_KEYFRAMES: u64 = 4;

/// Most states the scrub cache keeps.
pub const CACHE_STATES: usize = 64;

/// A state the history can hold ([`Capture`]) and step.
pub trait Replay: Sized {
    /// What a step reports (kept per step).
    type Sample: Copy;
    /// The time step (s).
    fn dt(&self) -> f64;
    /// One plain step (the same function the run steps with).
    fn replay(&mut self) -> Result<Self::Sample, String>;
}

/// A live state the history records: its step, time and sample, and a stored copy.
pub trait Capture<S: Replay> {
    /// The step count of the state.
    fn step_index(&self) -> u64;
    /// The simulated time of the state (s).
    fn time(&self) -> f64;
    /// The sample of the state's last step (or of its start).
    fn sample(&self) -> S::Sample;
    /// A copy holding everything a step reads, and the heap bytes it took.
    fn capture(&self) -> (S, usize);
}

struct Keyframe<S> {
    state: S,
    /// The state's step.
    step: u64,
    /// The last step reached from this keyframe by plain steps.
    plain_until: u64,
    bytes: usize,
}

struct Branch<S: Replay> {
    id: u64,
    /// The branch this one was split from; its own steps are after `fork`, those up to
    /// `fork` are the parent's.
    parent: Option<u64>,
    fork: u64,
    keyframes: VecDeque<Keyframe<S>>,
    /// Samples of steps `samples_from ..= end`.
    samples: VecDeque<S::Sample>,
    samples_from: u64,
    /// The last recorded step.
    end: u64,
    /// The time of the last recorded step (s).
    end_time: f64,
}

impl<S: Replay> Branch<S> {
    fn first(&self) -> u64 {
        self.keyframes.front().map_or(self.end, |k| k.step)
    }

    /// The index of the newest keyframe at or before `step`.
    fn keyframe_at(&self, step: u64) -> Option<usize> {
        self.keyframes
            .partition_point(|k| k.step <= step)
            .checked_sub(1)
    }

    fn keyframe_bytes(&self) -> usize {
        self.keyframes.iter().map(|k| k.bytes).sum()
    }
}

/// What the app shows of a branch.
#[derive(Clone, Debug, PartialEq)]
pub struct BranchInfo {
    pub id: u64,
    /// First and last step held (its own and its ancestors').
    pub range: (u64, u64),
    /// The time of the last step (s).
    pub end_time: f64,
    pub current: bool,
}

/// Keyframes, re-simulation and branches (module doc).
pub struct History<S: Replay + Capture<S>> {
    branches: Vec<Branch<S>>,
    current: u64,
    next_id: u64,
    /// The step shown (of the current branch or an ancestor).
    shown: u64,
    cap: usize,
    /// Steps between keyframes (module doc).
    interval: u64,
    dt: f64,
    /// Consecutive re-simulated states of branch `cache_branch` (the scrub cache).
    cache: VecDeque<Keyframe<S>>,
    cache_branch: u64,
}

impl<S: Replay + Capture<S>> History<S> {
    /// A history holding `start`, with memory cap `cap` (bytes; 0 keeps only the
    /// newest state).
    pub fn new(start: &impl Capture<S>, cap: usize) -> Self {
        let mut h = History {
            branches: Vec::new(),
            current: 0,
            next_id: 0,
            shown: 0,
            cap,
            interval: 1,
            dt: start.capture().0.dt(),
            cache: VecDeque::new(),
            cache_branch: u64::MAX,
        };
        h.reset(start);
        h
    }

    /// Forget everything and hold `start` (a new run).
    pub fn reset(&mut self, start: &impl Capture<S>) {
        self.branches.clear();
        self.cache.clear();
        let id = self.new_id();
        let step = start.step_index();
        self.branches.push(Branch {
            id,
            parent: None,
            fork: step,
            keyframes: VecDeque::new(),
            samples: VecDeque::from([Capture::sample(start)]),
            samples_from: step,
            end: step,
            end_time: Capture::time(start),
        });
        self.current = id;
        self.shown = step;
        self.push_keyframe(start);
        self.fit();
    }

    fn new_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id - 1
    }

    fn index(&self, id: u64) -> Option<usize> {
        self.branches.iter().position(|b| b.id == id)
    }

    fn branch(&self, id: u64) -> &Branch<S> {
        &self.branches[self.index(id).expect("a live branch")]
    }

    fn branch_mut(&mut self, id: u64) -> &mut Branch<S> {
        let i = self.index(id).expect("a live branch");
        &mut self.branches[i]
    }

    /// Bytes of the keyframes and samples (the scrub cache is counted apart).
    pub fn bytes(&self) -> usize {
        self.branches
            .iter()
            .map(|b| b.keyframe_bytes() + b.samples.len() * size_of::<S::Sample>())
            .sum()
    }

    /// Bytes of the scrub cache.
    pub fn cache_bytes(&self) -> usize {
        self.cache.iter().map(|k| k.bytes).sum()
    }

    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Set the memory cap (bytes); the oldest keyframes go until the rest fit.
    pub fn set_cap(&mut self, cap: usize) {
        self.cap = cap;
        self.fit();
    }

    /// Steps between keyframes now.
    pub fn interval(&self) -> u64 {
        self.interval
    }

    /// Number of keyframes held.
    pub fn keyframes(&self) -> usize {
        self.branches.iter().map(|b| b.keyframes.len()).sum()
    }

    /// The bytes keyframes may use: the cap less the scrub cache's share and the
    /// samples of [`TARGET_SPAN`].
    fn keyframe_budget(&self) -> usize {
        let samples = (TARGET_SPAN / self.dt).ceil() as usize * size_of::<S::Sample>();
        (self.cap - self.cap / CACHE_SHARE).saturating_sub(samples)
    }

    /// The interval that makes the cap hold [`TARGET_SPAN`] with keyframes of `bytes`.
    pub fn interval_for(&self, bytes: usize) -> u64 {
        let steps = (TARGET_SPAN / self.dt).ceil();
        let budget = self.keyframe_budget().max(1) as f64;
        let most = (steps as u64 / MIN_KEYFRAMES).max(1);
        ((steps * bytes as f64 / budget).ceil() as u64).clamp(1, most)
    }

    /// Simulated time the cap holds with the current interval and the mean size of the
    /// keyframes held (s).
    pub fn capacity_secs(&self) -> f64 {
        let n = self.keyframes().max(1);
        let mean = self
            .branches
            .iter()
            .map(Branch::keyframe_bytes)
            .sum::<usize>()
            / n;
        let per_step = mean as f64 / self.interval as f64 + size_of::<S::Sample>() as f64;
        let budget = (self.cap - self.cap / CACHE_SHARE) as f64;
        budget / per_step.max(1.0) * self.dt
    }

    /// Simulated time held on the current branch with its ancestors (s).
    pub fn span_secs(&self) -> f64 {
        let (first, last) = self.range();
        (last - first) as f64 * self.dt
    }

    /// The current branch's id.
    pub fn current(&self) -> u64 {
        self.current
    }

    /// The step shown.
    pub fn shown(&self) -> u64 {
        self.shown
    }

    /// First and last step of the current branch with its ancestors.
    pub fn range(&self) -> (u64, u64) {
        self.range_of(self.current)
    }

    fn range_of(&self, id: u64) -> (u64, u64) {
        let b = self.branch(id);
        let mut first = b.first();
        let mut fork = b.fork;
        let mut parent = b.parent;
        // Its own steps reach back to the fork: the parent's show those before.
        while first <= fork.saturating_add(1) {
            let Some(p) = parent
                .and_then(|p| self.index(p))
                .map(|i| &self.branches[i])
            else {
                break;
            };
            if p.first() > fork {
                break;
            }
            first = p.first();
            fork = p.fork;
            parent = p.parent;
        }
        (first, b.end)
    }

    /// The branches, oldest first.
    pub fn branches(&self) -> Vec<BranchInfo> {
        self.branches
            .iter()
            .map(|b| BranchInfo {
                id: b.id,
                range: self.range_of(b.id),
                end_time: b.end_time,
                current: b.id == self.current,
            })
            .collect()
    }

    /// The branch of `id`'s lineage that holds `step` as its own.
    fn owner(&self, id: u64, step: u64) -> Option<u64> {
        let mut id = id;
        loop {
            let b = self.branch(id);
            if step > b.fork || b.parent.is_none() || step >= b.first() {
                return (step >= b.first() && step <= b.end).then_some(id);
            }
            let p = b.parent?;
            self.index(p)?;
            id = p;
        }
    }

    /// The energy samples of the current branch with its ancestors, oldest first.
    pub fn trace(&self) -> Vec<S::Sample> {
        let mut parts = Vec::new();
        let mut id = Some(self.current);
        let mut upto = u64::MAX;
        while let Some(b) = id.and_then(|i| self.index(i)).map(|i| &self.branches[i]) {
            let n = (upto.min(b.end + 1)).saturating_sub(b.samples_from) as usize;
            parts.push(b.samples.iter().take(n).copied().collect::<Vec<_>>());
            if b.samples_from <= b.fork.saturating_add(1) && b.parent.is_some() {
                upto = b.samples_from;
                id = b.parent;
            } else {
                break;
            }
        }
        parts.into_iter().rev().flatten().collect()
    }

    fn push_keyframe(&mut self, state: &impl Capture<S>) {
        let (copy, heap) = state.capture();
        self.dt = copy.dt();
        let bytes = heap + size_of::<Keyframe<S>>();
        let step = state.step_index();
        self.interval = self.interval_for(bytes);
        let b = self.branch_mut(self.current);
        while b.keyframes.back().is_some_and(|k| k.step >= step) {
            b.keyframes.pop_back();
        }
        b.keyframes.push_back(Keyframe {
            state: copy,
            step,
            plain_until: step,
            bytes,
        });
        if self.cache_branch == self.current {
            self.cache.retain(|k| k.step < step);
        }
    }

    /// Before a plain step from `state`: if it is a past step, the branch holding it is
    /// split there (module doc) and the run continues in it. Returns whether it was a
    /// past step (the trace after it is no longer the run's).
    pub fn before_step(&mut self, state: &impl Capture<S>) -> bool {
        let step = state.step_index();
        let past = step < self.range().1;
        let Some(owner) = self.owner(self.current, step) else {
            return false;
        };
        if step < self.branch(owner).end {
            self.split(owner, step, state.capture());
        }
        self.current = owner;
        self.shown = step;
        past
    }

    /// Split branch `id` after `step`, `at` being its state at `step`: its later steps
    /// go to a new branch.
    fn split(&mut self, id: u64, step: u64, (copy, heap): (S, usize)) {
        let new = self.new_id();
        let at_time = Capture::time(&copy);
        let i = self.index(id).expect("a live branch");
        let b = &mut self.branches[i];
        let keep = b.keyframes.partition_point(|k| k.step <= step);
        let mut later: VecDeque<_> = b.keyframes.drain(keep..).collect();
        let s = (step - b.samples_from) as usize;
        let samples: VecDeque<_> = b.samples.drain(s..).collect();
        b.samples.push_back(samples[0]);
        let reach = b.keyframes.back().map_or(step, |k| k.plain_until);
        if let Some(k) = b.keyframes.back_mut() {
            k.plain_until = k.plain_until.min(step);
        }
        let (end, end_time) = (b.end, b.end_time);
        b.end = step;
        b.end_time = at_time;
        later.push_front(Keyframe {
            state: copy,
            step,
            plain_until: reach.max(step).min(end),
            bytes: heap + size_of::<Keyframe<S>>(),
        });
        for c in &mut self.branches {
            if c.parent == Some(id) && c.fork > step {
                c.parent = Some(new);
            }
        }
        self.branches.push(Branch {
            id: new,
            parent: Some(id),
            fork: step,
            keyframes: later,
            samples,
            samples_from: step,
            end,
            end_time,
        });
        if self.cache_branch == id {
            self.cache.clear();
        }
    }

    /// After a plain step: record its sample, and a keyframe when the interval is
    /// reached.
    pub fn after_step(&mut self, state: &impl Capture<S>, sample: S::Sample) -> Result<(), String> {
        let step = state.step_index();
        let interval = self.interval;
        if step != self.branch(self.current).end + 1 {
            // Not a step from the recorded end: recorded as an edit.
            return self.edit(state);
        }
        let b = self.branch_mut(self.current);
        b.samples.push_back(sample);
        b.end = step;
        b.end_time = Capture::time(state);
        let due = b.keyframes.back().is_none_or(|k| step - k.step >= interval);
        if let Some(k) = b.keyframes.back_mut() {
            k.plain_until = step;
        }
        self.shown = step;
        if due || self.cap == 0 {
            self.push_keyframe(state);
        }
        self.fit();
        Ok(())
    }

    /// The state at its step was changed outside a plain step (module doc): stored as a
    /// keyframe, the run continuing from it. At a past step the later steps become a
    /// branch (their state at this step re-simulated first; if that fails they are
    /// dropped and the error returned).
    pub fn edit(&mut self, state: &impl Capture<S>) -> Result<(), String> {
        let step = state.step_index();
        let mut result = Ok(());
        match self.owner(self.current, step) {
            Some(owner) => {
                if step < self.branch(owner).end {
                    match self.state_at(owner, step) {
                        Ok(old) => {
                            let bytes = old.capture().1;
                            self.split(owner, step, (old, bytes));
                        }
                        Err(e) => {
                            self.truncate(owner, step);
                            result = Err(e);
                        }
                    }
                }
                self.current = owner;
            }
            None => {
                if step <= self.branch(self.current).end {
                    // Before the steps held: a new start.
                    self.reset(state);
                    return Ok(());
                }
            }
        }
        let b = self.branch_mut(self.current);
        let last = *b.samples.back().expect("a sample per step");
        // Steps the history did not see (e.g. the app's own) repeat the last sample.
        while b.end + 1 < step {
            b.samples.push_back(last);
            b.end += 1;
        }
        if b.end < step {
            b.samples.push_back(Capture::sample(state));
            b.end = step;
        } else if let Some(s) = b.samples.back_mut() {
            *s = Capture::sample(state);
        }
        b.end_time = Capture::time(state);
        self.shown = step;
        self.push_keyframe(state);
        self.fit();
        result
    }

    /// Drop the steps of branch `id` after `step`.
    fn truncate(&mut self, id: u64, step: u64) {
        let b = self.branch_mut(id);
        while b.keyframes.back().is_some_and(|k| k.step > step) {
            b.keyframes.pop_back();
        }
        b.samples.truncate((step + 1 - b.samples_from) as usize);
        b.end = step;
        self.cache.clear();
    }

    /// The state of the current branch (or an ancestor) at `step`, re-simulated from
    /// the newest keyframe or cached state at or before it, and shown. A step outside
    /// the range is clamped to it; one in a gap (module doc) gives the newest state
    /// before the gap.
    pub fn seek(&mut self, step: u64) -> Result<S, String> {
        let (first, last) = self.range();
        let step = step.clamp(first, last);
        let owner = self
            .owner(self.current, step)
            .ok_or_else(|| format!("step {step} is not held"))?;
        let state = self.state_at(owner, step)?;
        self.shown = state.step_index();
        Ok(state)
    }

    /// Return to branch `id`: its newest state.
    pub fn switch(&mut self, id: u64) -> Result<S, String> {
        let end = self
            .index(id)
            .map(|i| self.branches[i].end)
            .ok_or_else(|| format!("no branch {id}"))?;
        let state = self.state_at(id, end)?;
        self.current = id;
        self.shown = end;
        Ok(state)
    }

    /// The state of branch `id` at one of its own steps (see [`Self::seek`]).
    fn state_at(&mut self, id: u64, step: u64) -> Result<S, String> {
        let b = self.branch(id);
        let k = b
            .keyframe_at(step)
            .map(|i| &b.keyframes[i])
            .ok_or_else(|| format!("no stored state at or before step {step}"))?;
        let target = step.min(k.plain_until);
        if self.cache_branch == id
            && let Some(c) = self.cache.iter().rev().find(|c| c.step <= target)
            && c.step >= k.step
        {
            let (mut state, _) = c.state.capture();
            if c.step == target {
                return Ok(state);
            }
            // Forward from the cached state.
            let mut kept = Vec::new();
            while state.step_index() < target {
                state.replay()?;
                kept.push(state.capture());
            }
            for (s, bytes) in kept {
                self.cache_push(s, bytes);
            }
            return Ok(state);
        }
        let (mut state, _) = k.state.capture();
        let (from, kbytes) = (k.step, k.bytes);
        self.cache.clear();
        self.cache_branch = id;
        let keep = self.cache_len(kbytes);
        while state.step_index() < target {
            state.replay()?;
            if target - state.step_index() < keep as u64 {
                let (c, bytes) = state.capture();
                self.cache_push(c, bytes);
            }
        }
        if state.step_index() != target {
            return Err(format!(
                "re-simulation from step {from} reached step {} for {target}",
                state.step_index()
            ));
        }
        Ok(state)
    }

    /// How many states of `bytes` the scrub cache holds.
    fn cache_len(&self, bytes: usize) -> usize {
        (self.cap / CACHE_SHARE / bytes.max(1)).clamp(1, CACHE_STATES)
    }

    fn cache_push(&mut self, state: S, bytes: usize) {
        let step = state.step_index();
        self.cache.retain(|c| c.step < step);
        self.cache.push_back(Keyframe {
            state,
            step,
            plain_until: step,
            bytes,
        });
        while self.cache.len() > self.cache_len(bytes) {
            self.cache.pop_front();
        }
    }

    /// Drop the oldest keyframes (module doc) until the held bytes fit the cap less the
    /// scrub cache's share.
    fn fit(&mut self) {
        let limit = self.cap - self.cap / CACHE_SHARE;
        while self.bytes() > limit {
            // The branch with the oldest keyframe that may go.
            let victim = self
                .branches
                .iter()
                .filter(|b| b.id != self.current || b.keyframes.len() > 1)
                .min_by_key(|b| (b.first(), b.id))
                .map(|b| b.id);
            let Some(id) = victim else {
                break;
            };
            let i = self.index(id).expect("a live branch");
            let b = &mut self.branches[i];
            b.keyframes.pop_front();
            match b.keyframes.front().map(|k| k.step) {
                Some(first) => {
                    let n = (first - b.samples_from) as usize;
                    b.samples.drain(..n.min(b.samples.len()));
                    b.samples_from = first;
                }
                None => {
                    self.branches.remove(i);
                    for c in &mut self.branches {
                        if c.parent == Some(id) {
                            c.parent = None;
                        }
                    }
                }
            }
            if self.cache_branch == id {
                self.cache.clear();
            }
        }
        let (first, last) = self.range();
        self.shown = self.shown.clamp(first, last);
    }
}
