//! A partner thread that stays awake for the whole pass and takes the right halves of
//! the sweeps (`halves.rs`), rather than a `rayon::join` per band.
//!
//! **Why.** A sweep of a large pass runs a band's two halves side by side, then the rows
//! that join them, band after band: on the peer bench's `spheres_1080` about seven bands
//! a sweep and 23 sweeps a step, so some 150 joins a step over halves of about 5 µs
//! each. A `rayon::join` whose second closure waits for a pool thread that has gone to
//! sleep pays that thread's wake-up (12-37 µs measured, `docs/results/speed.md`) at
//! many of them, more than the half it would run. Box2D v3 keeps its workers spinning
//! through the solver's stages for the same reason (`solver.c`, `b2ExecuteMainStage`:
//! the stage index is published with an atomic and the workers spin on it).
//!
//! **How.** One job slot with an atomic state. [`Partner::join`] posts its second closure,
//! runs the first, then either takes the second back (if the partner has not started it)
//! and runs it itself, or spins until the partner reports it done. So the caller never
//! waits for a partner that is not running: on a pool of one thread, or while the
//! partner is descheduled, the caller runs both closures, in the same order as
//! `rayon::join` on one thread. Which thread runs a closure never changes what it
//! computes: the two closures of a join touch disjoint data (the halves share no body).
//!
//! The partner spins (with `spin_loop` hints, yielding the core after a while) only for
//! the duration of [`with_partner`]'s body, one pass.

use std::cell::UnsafeCell;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicU8, Ordering};

const IDLE: u8 = 0;
const POSTED: u8 = 1;
const TAKEN: u8 = 2;
const DONE: u8 = 3;
const EXIT: u8 = 4;

/// Spins before each `yield_now` while waiting.
const SPINS: u32 = 64;

type Job = *mut (dyn FnMut() + Send + 'static);

/// The job slot shared by the caller and the partner.
struct Slot {
    state: AtomicU8,
    /// Written by the caller before it publishes `POSTED`, read by the thread that moves
    /// the state from `POSTED` to `TAKEN`.
    job: UnsafeCell<Option<Job>>,
    /// A panic of the job on the partner, handed to the caller.
    panic: UnsafeCell<Option<Box<dyn std::any::Any + Send>>>,
}

// SAFETY: `job` and `panic` are only accessed by the thread that owns the slot's state
// (the caller while IDLE or POSTED before publishing, the taker while TAKEN, the caller
// again after it observes DONE with Acquire), so the accesses never overlap.
unsafe impl Sync for Slot {}

/// Runs the two closures of a join, the second possibly on the partner thread.
pub struct Partner<'s> {
    slot: Option<&'s Slot>,
}

/// Calls `body` with a [`Partner`] whose joins use a second thread of the current rayon
/// pool when it has one (the partner is spawned in a `rayon::scope` and leaves when
/// `body` returns); on a pool of one thread every join runs its closures in turn.
pub fn with_partner<R: Send>(body: impl FnOnce(&Partner<'_>) -> R + Send) -> R {
    if rayon::current_num_threads() < 2 {
        return body(&Partner::alone());
    }
    let slot = Slot {
        state: AtomicU8::new(IDLE),
        job: UnsafeCell::new(None),
        panic: UnsafeCell::new(None),
    };
    rayon::scope(|s| {
        s.spawn(|_| partner_loop(&slot));
        // The partner must leave whatever `body` does, or the scope would wait for it.
        struct Leave<'a>(&'a Slot);
        impl Drop for Leave<'_> {
            fn drop(&mut self) {
                self.0.state.store(EXIT, Ordering::Release);
            }
        }
        let _leave = Leave(&slot);
        body(&Partner { slot: Some(&slot) })
    })
}

fn partner_loop(slot: &Slot) {
    let mut spins = 0;
    loop {
        match slot.state.load(Ordering::Acquire) {
            EXIT => return,
            POSTED => {
                if slot
                    .state
                    .compare_exchange(POSTED, TAKEN, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    // SAFETY: the state is TAKEN, so this thread owns `job` and `panic`;
                    // the caller keeps the closure alive until it observes DONE.
                    unsafe {
                        let job = (*slot.job.get()).take().expect("a posted job");
                        if let Err(p) = catch_unwind(AssertUnwindSafe(|| (*job)())) {
                            *slot.panic.get() = Some(p);
                        }
                    }
                    slot.state.store(DONE, Ordering::Release);
                }
                spins = 0;
            }
            _ => wait(&mut spins),
        }
    }
}

fn wait(spins: &mut u32) {
    if *spins < SPINS {
        *spins += 1;
        std::hint::spin_loop();
    } else {
        *spins = 0;
        std::thread::yield_now();
    }
}

impl Partner<'_> {
    /// A partner that is not there: every join runs its closures in turn.
    pub fn alone() -> Partner<'static> {
        Partner { slot: None }
    }

    /// `(a(), b())`: `a` on this thread, `b` on the partner if it takes it before `a`
    /// returns, else on this thread after `a`.
    pub fn join<RA, RB: Send>(
        &self,
        a: impl FnOnce() -> RA,
        b: impl FnOnce() -> RB + Send,
    ) -> (RA, RB) {
        let Some(slot) = self.slot else {
            let ra = a();
            return (ra, b());
        };
        let mut b = Some(b);
        let mut rb = None;
        let mut job = || rb = b.take().map(|b| b());
        {
            let job: &mut (dyn FnMut() + Send + '_) = &mut job;
            // SAFETY: the lifetime is erased only for the slot; this function does not
            // return before the job is done (DONE observed) or taken back (POSTED → IDLE),
            // so the closure outlives every use of the pointer.
            let job: Job = unsafe { std::mem::transmute(job as *mut (dyn FnMut() + Send + '_)) };
            // SAFETY: the state is IDLE, so the caller owns `job`.
            unsafe { *slot.job.get() = Some(job) };
            slot.state.store(POSTED, Ordering::Release);
        }
        // If `a` panics the partner may still be running `b`: wait for it before
        // unwinding past the closure it borrows.
        let ra = catch_unwind(AssertUnwindSafe(a));
        let mut spins = 0;
        if slot
            .state
            .compare_exchange(POSTED, IDLE, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            // Taken back: the partner never saw it.
            // SAFETY: the state is IDLE again, so the caller owns `job`.
            unsafe { *slot.job.get() = None };
            if ra.is_ok() {
                job();
            }
        } else {
            while slot.state.load(Ordering::Acquire) != DONE {
                wait(&mut spins);
            }
            // SAFETY: DONE was observed with Acquire, so the partner is finished with
            // `panic`.
            let panic = unsafe { (*slot.panic.get()).take() };
            slot.state.store(IDLE, Ordering::Release);
            if let Some(p) = panic {
                resume_unwind(p);
            }
        }
        let ra = ra.unwrap_or_else(|p| resume_unwind(p));
        (ra, rb.expect("the second closure ran"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Many joins over disjoint halves of a vector give what running them in turn gives,
    /// on pools of one, two and four threads.
    #[test]
    fn joins_give_the_sequential_result_on_any_pool() {
        let run = || {
            let mut v: Vec<u64> = (0..2_000).collect();
            with_partner(|p| {
                let mut total = 0u64;
                for round in 0..500u64 {
                    let (l, r) = v.split_at_mut(1_000);
                    let (sl, sr) = p.join(
                        || {
                            l.iter_mut()
                                .for_each(|x| *x = x.wrapping_mul(31).wrapping_add(round));
                            l.iter().fold(0u64, |s, x| s.wrapping_add(*x))
                        },
                        || {
                            r.iter_mut()
                                .for_each(|x| *x = x.wrapping_mul(17).wrapping_add(round));
                            r.iter().fold(0u64, |s, x| s.wrapping_add(*x))
                        },
                    );
                    total = total.wrapping_add(sl).wrapping_mul(3).wrapping_add(sr);
                }
                (total, v.clone())
            })
        };
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(run);
        for threads in [2, 4] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            assert_eq!(pool.install(run), one, "{threads} threads");
        }
    }

    /// A panic in either closure reaches the caller, and the partner leaves.
    #[test]
    fn a_panic_in_a_join_reaches_the_caller() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        for second in [false, true] {
            let r = pool.install(|| {
                catch_unwind(AssertUnwindSafe(|| {
                    with_partner(|p| {
                        for _ in 0..100 {
                            p.join(|| assert!(second, "first"), || assert!(!second, "second"));
                        }
                    })
                }))
            });
            assert!(r.is_err());
        }
    }
}
