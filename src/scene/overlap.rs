//! The initial-overlap check of a scene's expanded bodies: bodies that certainly overlap
//! each other, and bodies that certainly cross or lie outside a container's surfaces.
//!
//! Bodies overlap certainly when their centres are closer than the sum of their
//! inscribed radii ([`super::ShapeSpec::inscribed_radius`]); see the module doc of
//! [`super`]. One error is reported per field (the later body's position, a generator's
//! spacing or region), naming the pair that comes first in the file: the smallest later
//! body, then the smallest earlier one.
//!
//! Memory is O(n) whatever the overlaps: the bodies are visited in file order and each
//! asks the grid ([`BallGrid`]) for the first earlier body its ball overlaps, so no list
//! of pairs is ever built (10⁶ bodies at one point have 5 · 10¹¹ pairs). The time is at
//! most that of listing every close pair, and much less when bodies overlap: a query
//! stops at its first hit, and a generator stops asking once both its fields have their
//! error. [`super::expand::Errors`] keeps the first [`super::MAX_REPORTED`] errors and
//! counts the rest.

use super::expand::{CONTACT_SLACK, Errors, PlacedBody};
use super::locate::FieldPath;
use super::spec::{ContainerSpec, V3};
use super::{BodyOrigin, Scene, SceneError};
use crate::math::Vec3;
use std::cell::Cell;
use std::collections::{BTreeSet, HashMap};
use std::hash::{BuildHasher, Hasher};
use std::ops::Range;

/// Pair tests the overlap check may make: this many per body, plus [`MIN_TESTS`]. A
/// scene needing more (many bodies crowded near one place, so that most tests miss)
/// gets the errors found so far and a note that the check stopped.
const TESTS_PER_BODY: u64 = 100;
const MIN_TESTS: u64 = 100_000_000;

fn root() -> FieldPath {
    FieldPath::root()
}

impl Scene {
    /// Report bodies that certainly overlap (module doc), then bodies certainly crossing
    /// a container's surface or outside every container ([`standing`]).
    pub(super) fn check_overlaps(&self, bodies: &[PlacedBody]) -> Result<(), SceneError> {
        let mut errs = Errors::default();
        let grid = BallGrid::new(bodies);
        // Index of each generator's first body (its bodies are contiguous, after the
        // explicit ones).
        let mut starts = Vec::new();
        for (i, b) in bodies.iter().enumerate() {
            if let BodyOrigin::Generated { generator, .. } = b.origin
                && starts.len() <= generator
            {
                starts.resize(generator + 1, i);
            }
        }
        // Per generator: whether its spacing and region errors have been reported.
        let mut done = vec![[false; 2]; starts.len()];
        for (i, later) in bodies.iter().enumerate() {
            if grid.exhausted() {
                errs.push(
                    &root().field("bodies"),
                    format!(
                        "the overlap check stopped at {} after {} pair tests, its limit for {} bodies: \
                         too many bodies lie close together; the errors before this one stand, \
                         later ones are not counted (`overlap_check: false` skips the check)",
                        later.describe(),
                        grid.tests.get(),
                        bodies.len()
                    ),
                );
                break;
            }
            match later.origin {
                BodyOrigin::Body(_) => {
                    if let Some(j) = grid.first_overlap(i, 0..i) {
                        push_overlap(&mut errs, bodies, i, j);
                    }
                }
                BodyOrigin::Generated { generator: g, .. } => {
                    let start = starts[g];
                    // Earlier bodies of other origins come first in the file.
                    if !done[g][1] {
                        if start == 0 {
                            done[g][1] = true;
                        } else if let Some(j) = grid.first_overlap(i, 0..start) {
                            push_overlap(&mut errs, bodies, i, j);
                            done[g][1] = true;
                        }
                    }
                    if !done[g][0]
                        && let Some(j) = grid.first_overlap(i, start..i)
                    {
                        push_overlap(&mut errs, bodies, i, j);
                        done[g][0] = true;
                    }
                }
            }
        }
        // One error per body field or generator and container (a generator's bodies
        // share its region), and one per body field or generator outside them all.
        let mut reported = BTreeSet::new();
        for b in bodies.iter().filter(|b| !b.is_static) {
            let mut held = self.containers.is_empty();
            for (c, container) in self.containers.iter().enumerate() {
                let st = standing(container, c, b.position, b.inscribed_radius);
                held |= st.holds;
                if let Some(why) = st.crosses {
                    push_container(&mut errs, &mut reported, b, Some(c), || why);
                }
            }
            if !held {
                push_container(&mut errs, &mut reported, b, None, || {
                    "lies outside every container, and no plane or slope is there to \
                     hold it (a box holds what lies within its present walls, a cylinder \
                     and a hopper what lies within their walls, or above a hopper's rim)"
                        .into()
                });
            }
        }
        errs.into_check(self)
    }
}

/// The error of body `b` with container `c` (`None`: with all of them), once per body
/// field or generator and container.
fn push_container(
    errs: &mut Errors,
    reported: &mut BTreeSet<(usize, Option<usize>)>,
    b: &PlacedBody,
    c: Option<usize>,
    why: impl FnOnce() -> String,
) {
    let path = match b.origin {
        BodyOrigin::Body(i) => root().field("bodies").index(i).field("position"),
        BodyOrigin::Generated { generator, .. } => {
            if !reported.insert((generator, c)) {
                return;
            }
            root().field("generators").index(generator).field("region")
        }
    };
    if !errs.has_room() {
        errs.count_one();
        return;
    }
    errs.push(
        &path,
        format!("{} at {} {}", b.describe(), V3::from(b.position), why()),
    );
}

/// The error of the overlapping pair (`later`, `earlier`).
fn push_overlap(errs: &mut Errors, bodies: &[PlacedBody], later: usize, earlier: usize) {
    let (pb, pa) = (&bodies[later], &bodies[earlier]);
    if !errs.has_room() {
        errs.count_one();
        return;
    }
    let d = (pb.position - pa.position).norm();
    errs.push(
        &OverlapField::of(pb, pa).path(),
        format!(
            "{} at {} overlaps {} at {}: centres {d} m apart, closer than their inscribed radii {} + {} m",
            pb.describe(),
            V3::from(pb.position),
            pa.describe(),
            V3::from(pa.position),
            pb.inscribed_radius,
            pa.inscribed_radius
        ),
    );
}

/// The field an overlap is reported at: the later body's position, or the spacing of a
/// generator whose bodies overlap each other, or the region of a generator whose bodies
/// overlap an earlier body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OverlapField {
    Body(usize),
    Spacing(usize),
    Region(usize),
}

impl OverlapField {
    /// For the pair (`later`, `earlier`).
    fn of(later: &PlacedBody, earlier: &PlacedBody) -> Self {
        match (later.origin, earlier.origin) {
            (BodyOrigin::Body(i), _) => OverlapField::Body(i),
            (
                BodyOrigin::Generated { generator, .. },
                BodyOrigin::Generated { generator: e, .. },
            ) if e == generator => OverlapField::Spacing(generator),
            (BodyOrigin::Generated { generator, .. }, _) => OverlapField::Region(generator),
        }
    }

    fn path(self) -> FieldPath {
        match self {
            OverlapField::Body(i) => root().field("bodies").index(i).field("position"),
            OverlapField::Spacing(g) => root().field("generators").index(g).field("spacing"),
            OverlapField::Region(g) => root().field("generators").index(g).field("region"),
        }
    }
}

/// The bodies' inscribed balls in a uniform grid, for [`BallGrid::first_overlap`].
///
/// The cell edge is s = 2ρ, ρ the largest inscribed radius of the balls in the grid, so
/// two overlapping balls sit in the same or adjacent cells (27 about each). A few very
/// large balls (radius above 8 × the median of the positive radii) would make every cell
/// coarse; they stay out of the grid and are tested against every ball. Cell
/// coordinates are clamped to ±2⁶⁰, which keeps neighbours neighbours (clamping is
/// monotonic) and the offsets from overflowing.
struct BallGrid<'a> {
    bodies: &'a [PlacedBody],
    /// Cell edge (m); 0 when no ball in the grid has a positive radius.
    cell: f64,
    /// Body indices sorted by (cell, index).
    order: Vec<usize>,
    /// Per entry of `order`: the next entry of its cell whose body differs in position,
    /// inscribed radius or being static (bodies pasted at one place are skipped as one).
    skip: Vec<usize>,
    /// Pair tests made so far, and the most allowed ([`BallGrid::exhausted`]).
    tests: Cell<u64>,
    budget: u64,
    /// Each occupied cell's run of `order`.
    cells: HashMap<[i64; 3], Range<usize>, CellHash>,
    /// The smallest and largest occupied cell coordinates on each axis: a neighbour
    /// outside them is empty without a lookup.
    lo: [i64; 3],
    hi: [i64; 3],
    /// The bodies outside the grid, increasing.
    large: Vec<usize>,
    /// Whether body i is in `large`.
    is_large: Vec<bool>,
}

impl<'a> BallGrid<'a> {
    fn new(bodies: &'a [PlacedBody]) -> Self {
        let reach = |i: usize| bodies[i].inscribed_radius.max(0.0);
        let mut positive: Vec<f64> = (0..bodies.len()).map(reach).filter(|&r| r > 0.0).collect();
        let large_above = if positive.is_empty() {
            f64::INFINITY
        } else {
            let mid = positive.len() / 2;
            8.0 * *positive.select_nth_unstable_by(mid, f64::total_cmp).1
        };
        drop(positive);
        let is_large: Vec<bool> = (0..bodies.len()).map(|i| reach(i) > large_above).collect();
        let large: Vec<usize> = (0..bodies.len()).filter(|&i| is_large[i]).collect();
        let rho = (0..bodies.len())
            .filter(|&i| !is_large[i])
            .map(reach)
            .fold(0.0, f64::max);
        let mut grid = BallGrid {
            bodies,
            cell: 2.0 * rho,
            order: Vec::new(),
            skip: Vec::new(),
            tests: Cell::new(0),
            budget: TESTS_PER_BODY * bodies.len() as u64 + MIN_TESTS,
            cells: HashMap::with_hasher(CellHash::new()),
            lo: [i64::MAX; 3],
            hi: [i64::MIN; 3],
            large,
            is_large,
        };
        if grid.cell > 0.0 && grid.cell.is_finite() {
            let mut keyed: Vec<([i64; 3], usize)> = (0..bodies.len())
                .filter(|&i| !grid.is_large[i])
                .map(|i| (grid.key(&bodies[i].position), i))
                .collect();
            keyed.sort_unstable();
            grid.order = keyed.iter().map(|&(_, i)| i).collect();
            let mut k = 0;
            while k < keyed.len() {
                let key = keyed[k].0;
                let end = k + keyed[k..].partition_point(|e| e.0 == key);
                grid.cells.insert(key, k..end);
                grid.lo = std::array::from_fn(|a| grid.lo[a].min(key[a]));
                grid.hi = std::array::from_fn(|a| grid.hi[a].max(key[a]));
                k = end;
            }
            drop(keyed);
            let same = |a: usize, b: usize| {
                let (a, b) = (&bodies[a], &bodies[b]);
                a.position == b.position
                    && a.inscribed_radius == b.inscribed_radius
                    && a.is_static == b.is_static
            };
            grid.skip = vec![0; grid.order.len()];
            for run in grid.cells.values() {
                for k in run.clone().rev() {
                    grid.skip[k] = if k + 1 < run.end && same(grid.order[k], grid.order[k + 1]) {
                        grid.skip[k + 1]
                    } else {
                        k + 1
                    };
                }
            }
        } else {
            grid.cell = 0.0;
        }
        grid
    }

    fn key(&self, x: &Vec3) -> [i64; 3] {
        let c = |v: f64| ((v / self.cell).floor() as i64).clamp(-(1 << 60), 1 << 60);
        [c(x.x), c(x.y), c(x.z)]
    }

    /// Whether bodies `i` and `j` certainly overlap (not both static).
    fn overlap(&self, i: usize, j: usize) -> bool {
        let (a, b) = (&self.bodies[i], &self.bodies[j]);
        if a.is_static && b.is_static {
            return false;
        }
        let reach = (a.inscribed_radius + b.inscribed_radius) * (1.0 - CONTACT_SLACK);
        (b.position - a.position).norm_squared() < reach * reach
    }

    /// Whether the pair tests have used up the budget: the last answers may have
    /// missed an overlap, and the check stops.
    fn exhausted(&self) -> bool {
        self.tests.get() > self.budget
    }

    /// Count one pair test and make it.
    fn test(&self, i: usize, j: usize) -> bool {
        self.tests.set(self.tests.get() + 1);
        self.overlap(i, j)
    }

    /// The first body in `within` (other than `i`) whose ball certainly overlaps body
    /// `i`'s; `None` also once the budget is exhausted ([`BallGrid::exhausted`]).
    fn first_overlap(&self, i: usize, within: Range<usize>) -> Option<usize> {
        if within.is_empty() {
            return None;
        }
        if self.is_large[i] {
            return within
                .take_while(|_| !self.exhausted())
                .find(|&j| j != i && self.test(i, j));
        }
        let from = self.large.partition_point(|&j| j < within.start);
        let mut best = self.large[from..]
            .iter()
            .take_while(|&&j| j < within.end && !self.exhausted())
            .find(|&&j| j != i && self.test(i, j))
            .copied();
        if self.cell > 0.0 {
            let k = self.key(&self.bodies[i].position);
            // Its own cell first: bodies pasted at one place find each other at once,
            // and a hit bounds the search of the other cells.
            let own = std::iter::once([0, 0, 0]);
            let around = (0..27)
                .map(|o| [o / 9 - 1, o / 3 % 3 - 1, o % 3 - 1])
                .filter(|&d| d != [0, 0, 0]);
            for d in own.chain(around) {
                if best == Some(within.start) {
                    break; // nothing can come earlier
                }
                let key = [k[0] + d[0], k[1] + d[1], k[2] + d[2]];
                if (0..3).any(|a| key[a] < self.lo[a] || key[a] > self.hi[a]) {
                    continue;
                }
                let Some(run) = self.cells.get(&key) else {
                    continue;
                };
                // Only indices below the best so far can improve it.
                let end = best.map_or(within.end, |b| b.min(within.end));
                let order = &self.order[run.clone()];
                let mut m = run.start + order.partition_point(|&j| j < within.start);
                while m < run.end && self.order[m] < end && !self.exhausted() {
                    let j = self.order[m];
                    if j == i {
                        m += 1;
                    } else if self.test(i, j) {
                        best = Some(j);
                        break;
                    } else {
                        // Bodies identical to j miss i too.
                        m = self.skip[m];
                    }
                }
            }
        }
        best
    }
}

/// The hash of [`BallGrid`]'s cell keys: each 8-byte word folded into the state by a
/// 64 × 64 → 128-bit multiply with per-process random keys (as foldhash and aHash do).
/// A few nanoseconds a key where the standard SipHash took about 5 % of `validate` on
/// 10⁶ bodies (27 lookups a body); the random keys keep a scene from choosing
/// colliding cells.
#[derive(Clone, Copy)]
struct CellHash {
    keys: [u64; 2],
}

impl CellHash {
    fn new() -> Self {
        let random = std::hash::RandomState::new();
        CellHash {
            keys: [random.hash_one(1u8) | 1, random.hash_one(2u8)],
        }
    }
}

impl BuildHasher for CellHash {
    type Hasher = CellHasher;
    fn build_hasher(&self) -> CellHasher {
        CellHasher {
            state: self.keys[1],
            key: self.keys[0],
        }
    }
}

struct CellHasher {
    state: u64,
    key: u64,
}

/// The high and low halves of the 128-bit product, combined.
fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

impl Hasher for CellHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.state = fold(self.state ^ x, self.key);
    }
    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }
    fn finish(&self) -> u64 {
        fold(self.state, self.key.rotate_left(29) | 1)
    }
}

/// How a ball of radius `r` about `x` stands with container `c`.
struct Standing {
    /// What certainly puts it at odds with `c` ("reaches through the floor: ..."):
    /// - a plane or slope: the ball crosses it (signed distance below r);
    /// - a box: the ball crosses the floor within the footprint, or a present wall or
    ///   divider below its top (from either side, beside the wall);
    /// - a cylinder: the ball crosses the floor within it, or the wall below its top;
    /// - a hopper (open at both ends): between its rims, the ball crosses the cone.
    crosses: Option<String>,
    /// Whether `c` holds the body: a plane or slope always; a box if the centre is
    /// within every present wall (beyond a removed wall the floor goes on); a cylinder
    /// if the centre is within the wall; a hopper if the centre is within the cone or
    /// above the top rim and within it.
    holds: bool,
}

fn standing(c: &ContainerSpec, index: usize, x: Vec3, r: f64) -> Standing {
    let r = r.max(0.0) * (1.0 - CONTACT_SLACK);
    let of = format!("of containers[{index}] ({})", c.kind_name());
    let crossing = |s: f64, what: &str| {
        (s.abs() < r).then(|| {
            format!("reaches through the {what} {of}: centre {s} m from it, inscribed radius {r} m")
        })
    };
    let floor =
        |h: f64| format!("reaches through the floor {of}: height {h} m < inscribed radius {r} m");
    match c.to_container() {
        crate::Container::Plane { point, normal } => {
            let s = normal.dot(&(x - point));
            Standing {
                crosses: (s < r).then(|| {
                    format!(
                        "reaches through containers[{index}] ({}): signed distance {s} m < inscribed radius {r} m",
                        c.kind_name()
                    )
                }),
                holds: true,
            }
        }
        crate::Container::Box {
            center,
            half_size: [hx, hy],
            height,
            walls,
            dividers,
        } => {
            let d = x - center;
            // Signed distance from each wall, inward positive (crate::BOX_WALL_NAMES),
            // and the half-width along the wall.
            let s = [hx + d.x, hx - d.x, hy + d.y, hy - d.y];
            let along = [
                d.y.abs() - hy,
                d.y.abs() - hy,
                d.x.abs() - hx,
                d.x.abs() - hx,
            ];
            let inside = s.iter().all(|&s| s > 0.0);
            let holds = (0..4).all(|k| !walls[k] || s[k] >= 0.0);
            let mut crosses = None;
            if inside && d.z < r {
                crosses = Some(floor(d.z));
            }
            if d.z - r < height {
                for (k, name) in crate::container::BOX_WALL_NAMES.iter().enumerate() {
                    if crosses.is_none() && walls[k] && along[k] < r {
                        crosses = crossing(s[k], &format!("{name} wall"));
                    }
                }
                for dv in dividers.iter().filter(|dv| dv.present) {
                    if crosses.is_none() && inside {
                        crosses = crossing(x.x - dv.x, &format!("divider at x = {}", dv.x));
                    }
                }
            }
            Standing { crosses, holds }
        }
        crate::Container::Cylinder {
            base,
            radius,
            height,
        } => {
            let d = x - base;
            let s = radius - d.xy().norm();
            let mut crosses = None;
            if s > 0.0 && d.z < r {
                crosses = Some(floor(d.z));
            }
            if crosses.is_none() && d.z - r < height {
                crosses = crossing(s, "wall");
            }
            Standing {
                crosses,
                holds: s >= 0.0,
            }
        }
        crate::Container::Hopper {
            base,
            bottom_radius,
            top_radius,
            height,
        } => {
            let d = x - base;
            if d.z > height {
                return Standing {
                    crosses: None,
                    holds: d.xy().norm() <= top_radius,
                };
            }
            if d.z < 0.0 {
                return Standing {
                    crosses: None,
                    holds: false,
                };
            }
            // Distance from the cone, as in collision::containers::Surface::ConeWall.
            let l = height.hypot(top_radius - bottom_radius);
            let r_z = bottom_radius + (top_radius - bottom_radius) * d.z / height;
            let s = height / l * (r_z - d.xy().norm());
            Standing {
                crosses: crossing(s, "wall"),
                holds: s >= 0.0,
            }
        }
    }
}
