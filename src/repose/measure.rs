//! The angle-of-repose measurement of paper 000, section 7.5 (Fig. 14).
//!
//! 1. **Grid**: the container floor is subdivided into 8 × 16 cells, 16 along its long
//!    side ([`ReposeGrid`]). Along the long side runs the coordinate u, oriented
//!    *downhill*, from the side the pile was packed on towards the side it slumps to.
//! 2. **Highest point per cell**: h_ij = the highest point of body material whose
//!    horizontal position lies in cell (row j, column i), i.e. the maximum over the
//!    column above the cell of the pile's upper surface ([`highest_point_in_cell`]).
//!    The paper takes the highest mesh *node* in each cell; with a surface that is the
//!    node's limit as the mesh is refined, and it is exact for our shapes: the top of a
//!    sphere (or its highest point on the cell's boundary), a vertex of a cube or of a
//!    cross's bars, or where an edge or face crosses the cell's boundary.
//! 3. **Line per row**: through the points (u_i, z_i) of the 16 cells of row j (u_i is
//!    the horizontal position of the highest point itself, as the paper fits through the
//!    nodes), the least-squares line z = a + s u has slope
//!    s_j = Σ (u_i − ū)(z_i − z̄) / Σ (u_i − ū)²,
//!    and the row's angle is θ_j = atan(−s_j) (positive when the surface falls downhill).
//! 4. **Angle and error**: the angle of repose is the mean θ̄ = (1/8) Σ θ_j; the paper's
//!    "absolute error is the average difference of the average repose angle as compared
//!    to the maximum and minimum measured repose angles":
//!    ε = ½ [(θ_max − θ̄) + (θ̄ − θ_min)] = ½ (θ_max − θ_min).
//!
//! **Empty cells** (no body above them: bare floor beyond the toe of the pile) carry no
//! point and are left out of their row's fit: the angle of repose is the slope of the
//! pile's free surface, and the bare floor is not part of it (counting it as height 0
//! would bend every line at the toe and flatten it). A row needs at least 2 occupied
//! cells with distinct u to have a line; rows without one have no angle (NaN) and are
//! left out of θ̄ and ε, and [`ReposeMeasurement::rows_fitted`] says how many rows
//! count. The paper's piles cover the floor; a steep pile that does not reach the far
//! wall is where this rule applies.

use crate::body::RigidBody;
use crate::math::Vec3;
use crate::shapes::Shape;

/// Rows across the short side of the floor (paper 000, §7.5).
pub const ROWS: usize = 8;
/// Columns along the long side of the floor (paper 000, §7.5).
pub const COLUMNS: usize = 16;

/// The 8 × 16 grid over a rectangular floor, with the downhill direction.
#[derive(Clone, Debug, PartialEq)]
pub struct ReposeGrid {
    /// Centre of the floor (its z is the floor height).
    pub center: Vec3,
    /// Inner half-widths of the floor along x and y (m).
    pub half_size: [f64; 2],
    /// `true`: the long side (16 columns, coordinate u) is along x, else along y.
    long_along_x: bool,
    /// +1: u grows with the world coordinate of the long side, −1: against it.
    downhill_sign: f64,
}

impl ReposeGrid {
    /// The grid over the floor centred at `center` with half-widths `half_size`, whose
    /// long side runs downhill along `+long` (`downhill_positive`) or `−long`.
    /// Errors when a half-width is not finite and > 0.
    pub fn new(center: Vec3, half_size: [f64; 2], downhill_positive: bool) -> Result<Self, String> {
        if !half_size.iter().all(|h| h.is_finite() && *h > 0.0)
            || !center.iter().all(|x| x.is_finite())
        {
            return Err(format!(
                "the floor must be finite with half-widths > 0, got {half_size:?}"
            ));
        }
        Ok(ReposeGrid {
            center,
            half_size,
            long_along_x: half_size[0] >= half_size[1],
            downhill_sign: if downhill_positive { 1.0 } else { -1.0 },
        })
    }

    /// +1 if the grid's downhill direction is along +x or +y (its long side), else −1.
    pub fn downhill_sign(&self) -> f64 {
        self.downhill_sign
    }

    /// Whether the long side (the 16 columns) runs along x.
    pub fn long_along_x(&self) -> bool {
        self.long_along_x
    }

    /// (long, short) half-widths.
    fn halves(&self) -> (f64, f64) {
        if self.long_along_x {
            (self.half_size[0], self.half_size[1])
        } else {
            (self.half_size[1], self.half_size[0])
        }
    }

    /// Horizontal world point → (l, s): coordinates along the long and the short side,
    /// from the floor's centre (world orientation, not yet downhill).
    fn long_short(&self, p: &Vec3) -> (f64, f64) {
        let (dx, dy) = (p.x - self.center.x, p.y - self.center.y);
        if self.long_along_x {
            (dx, dy)
        } else {
            (dy, dx)
        }
    }

    /// The downhill coordinate u of a world point (m, from the floor's centre).
    pub fn u(&self, p: &Vec3) -> f64 {
        self.downhill_sign * self.long_short(p).0
    }

    /// The world end points, over the floor's uphill and downhill edges, of the line
    /// z = a + s u fitted through row `row` (`line` = (a, s)); `None` for a row without
    /// a line. For drawing the fitted lines over the pile (paper 000, Fig. 14).
    pub fn line_world(&self, row: usize, line: (f64, f64)) -> Option<[Vec3; 2]> {
        let (a, s) = line;
        if row >= ROWS || !(a.is_finite() && s.is_finite()) {
            return None;
        }
        let (hl, hs) = self.halves();
        let short = -hs + (row as f64 + 0.5) * 2.0 * hs / ROWS as f64;
        Some([-hl, hl].map(|u| {
            // u = sign · l, so the world offset along the long side is l = sign · u.
            let l = self.downhill_sign * u;
            let (dx, dy) = if self.long_along_x {
                (l, short)
            } else {
                (short, l)
            };
            Vec3::new(self.center.x + dx, self.center.y + dy, a + s * u)
        }))
    }

    /// The horizontal rectangle of cell (`row`, `column`) in world x, y:
    /// `[x_min, x_max, y_min, y_max]`. Column 0 is at the uphill end.
    pub fn cell_rect(&self, row: usize, column: usize) -> [f64; 4] {
        let (hl, hs) = self.halves();
        let wl = 2.0 * hl / COLUMNS as f64;
        let ws = 2.0 * hs / ROWS as f64;
        // Column index along +long (world), uphill column first.
        let k = if self.downhill_sign > 0.0 {
            column
        } else {
            COLUMNS - 1 - column
        };
        let (l0, l1) = (-hl + k as f64 * wl, -hl + (k + 1) as f64 * wl);
        let (s0, s1) = (-hs + row as f64 * ws, -hs + (row + 1) as f64 * ws);
        if self.long_along_x {
            [
                self.center.x + l0,
                self.center.x + l1,
                self.center.y + s0,
                self.center.y + s1,
            ]
        } else {
            [
                self.center.x + s0,
                self.center.x + s1,
                self.center.y + l0,
                self.center.y + l1,
            ]
        }
    }

    /// The cells (row, column) whose rectangles a horizontal disc of centre `p` and
    /// radius `r` may touch (a superset; cells outside the floor are dropped).
    fn cells_near(&self, p: &Vec3, r: f64) -> impl Iterator<Item = (usize, usize)> + use<> {
        let (hl, hs) = self.halves();
        let (l, s) = self.long_short(p);
        let wl = 2.0 * hl / COLUMNS as f64;
        let ws = 2.0 * hs / ROWS as f64;
        let range = |x: f64, h: f64, w: f64, n: usize| {
            let lo = ((x - r + h) / w).floor().max(0.0);
            let hi = ((x + r + h) / w).floor().min(n as f64 - 1.0);
            if lo.is_finite() && hi.is_finite() && lo <= hi {
                (lo as usize, hi as usize + 1)
            } else {
                (0, 0)
            }
        };
        let (k0, k1) = range(l, hl, wl, COLUMNS);
        let (j0, j1) = range(s, hs, ws, ROWS);
        let flip = self.downhill_sign < 0.0;
        (j0..j1)
            .flat_map(move |j| (k0..k1).map(move |k| (j, if flip { COLUMNS - 1 - k } else { k })))
    }
}

/// The result of the measurement (see the module doc for the maths).
#[derive(Clone, Debug, PartialEq)]
pub struct ReposeMeasurement {
    /// The highest body point in each cell, `[row][column]`, column 0 uphill; `None` for
    /// an empty cell.
    pub highest: [[Option<Vec3>; COLUMNS]; ROWS],
    /// θ_j = atan(−s_j) of each row's least-squares line, in degrees (NaN: fewer than 2
    /// occupied cells).
    pub row_angles_deg: [f64; ROWS],
    /// The fitted lines z = a_j + s_j u as (a_j, s_j) (NaN when the row has no line).
    pub lines: [(f64, f64); ROWS],
    /// The angle of repose θ̄, the mean of the rows' angles (degrees; NaN if no row
    /// has a line).
    pub angle_deg: f64,
    /// The paper's absolute error ½ (θ_max − θ_min) (degrees).
    pub error_deg: f64,
    /// Rows with a line (those that count in the mean).
    pub rows_fitted: usize,
    /// Cells with no body point.
    pub empty_cells: usize,
}

impl ReposeMeasurement {
    /// The pile's height profile along the long side: per column (uphill first), the
    /// mean over the rows of the highest points' heights z (0 for a column with no
    /// body over it). A diagnostic of the pile's shape, not part of the paper's measure.
    pub fn column_profile(&self) -> [f64; COLUMNS] {
        std::array::from_fn(|c| {
            let z: Vec<f64> = self
                .highest
                .iter()
                .filter_map(|row| row[c].map(|p| p.z))
                .collect();
            z.iter().sum::<f64>() / z.len().max(1) as f64
        })
    }
}

/// The highest point of `body` whose horizontal position lies in the rectangle
/// `rect = [x_min, x_max, y_min, y_max]`, or `None` if the body does not reach over it.
/// Exact for spheres and polyhedral shapes (cuboid, cross, convex polyhedron); `Err`
/// names any other shape.
pub fn highest_point_in_cell(body: &RigidBody, rect: &[f64; 4]) -> Result<Option<Vec3>, String> {
    match &body.shape {
        Shape::Sphere { radius } => Ok(sphere_top_in_rect(&body.position, *radius, rect)),
        Shape::Cuboid { half_extents } => Ok(box_top_in_rect(body, half_extents, rect)),
        Shape::Cross { c } => {
            // A cross is the union of its three bars: the highest of their highest points.
            let mut best: Option<Vec3> = None;
            for h in Shape::cross_bars(*c) {
                best = higher(best, box_top_in_rect(body, &h, rect));
            }
            Ok(best)
        }
        Shape::ConvexPolyhedron(p) => {
            let verts: Vec<Vec3> = p.vertices.iter().map(|v| to_world(body, v)).collect();
            let mut edges = Vec::with_capacity(p.triangles.len() * 3);
            let mut planes = Vec::with_capacity(p.triangles.len());
            for t in &p.triangles {
                let [a, b, c] = t.map(|i| verts[i as usize]);
                edges.extend([(a, b), (b, c), (c, a)]);
                let n = (b - a).cross(&(c - a));
                if n.norm() > 0.0 {
                    let n = n.normalize();
                    planes.push((n, n.dot(&a)));
                }
            }
            Ok(convex_top_in_rect(&verts, &edges, &planes, rect))
        }
        other => Err(format!(
            "the repose measurement handles spheres, cuboids, crosses and convex polyhedra, not {}",
            other.kind_name()
        )),
    }
}

/// Whether [`highest_point_in_cell`] handles this shape.
pub fn shape_supported(shape: &Shape) -> bool {
    matches!(
        shape,
        Shape::Sphere { .. }
            | Shape::Cuboid { .. }
            | Shape::Cross { .. }
            | Shape::ConvexPolyhedron(_)
    )
}

/// A body-frame point in the world: x + R p.
fn to_world(body: &RigidBody, p: &Vec3) -> Vec3 {
    body.position + body.orientation * p
}

fn higher(a: Option<Vec3>, b: Option<Vec3>) -> Option<Vec3> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b.z > a.z { b } else { a }),
        (a, None) => a,
        (None, b) => b,
    }
}

fn in_rect(x: f64, y: f64, r: &[f64; 4]) -> bool {
    x >= r[0] && x <= r[1] && y >= r[2] && y <= r[3]
}

/// Sphere of centre c and radius r: the height over a horizontal point q at distance
/// d = |q − c|ₕ < r is c_z + √(r² − d²), largest at the point q* of the rectangle
/// closest to c (q* = c itself when c is over the rectangle: the top c + r ẑ).
fn sphere_top_in_rect(c: &Vec3, r: f64, rect: &[f64; 4]) -> Option<Vec3> {
    let qx = c.x.clamp(rect[0], rect[1]);
    let qy = c.y.clamp(rect[2], rect[3]);
    let d2 = (qx - c.x).powi(2) + (qy - c.y).powi(2);
    if d2 >= r * r {
        return None;
    }
    Some(Vec3::new(qx, qy, c.z + (r * r - d2).sqrt()))
}

/// The box of half-extents `h` centred on the body's centre of mass, along its axes.
fn box_top_in_rect(body: &RigidBody, h: &Vec3, rect: &[f64; 4]) -> Option<Vec3> {
    let corner = |i: usize| {
        let s = |bit: usize| if (i >> bit) & 1 == 1 { 1.0 } else { -1.0 };
        to_world(body, &Vec3::new(s(0) * h.x, s(1) * h.y, s(2) * h.z))
    };
    let verts: Vec<Vec3> = (0..8).map(corner).collect();
    // Edges join corners differing in one bit.
    let mut edges = Vec::with_capacity(12);
    for i in 0..8 {
        for bit in 0..3 {
            if i & (1 << bit) == 0 {
                edges.push((verts[i], verts[i | (1 << bit)]));
            }
        }
    }
    let r = body.orientation;
    let centre = body.position;
    let mut planes = Vec::with_capacity(6);
    for (k, half) in h.iter().enumerate() {
        let axis = r * Vec3::ith(k, 1.0);
        planes.push((axis, axis.dot(&centre) + half));
        planes.push((-axis, -axis.dot(&centre) + half));
    }
    convex_top_in_rect(&verts, &edges, &planes, rect)
}

/// Highest point of the convex polytope P = {p : n_k·p ≤ d_k} (vertices, edges and face
/// planes given) over the vertical prism Q above `rect`. The maximum of z over P ∩ Q is
/// at a vertex of P ∩ Q, and each such vertex lies on three of the bounding planes: three
/// of P (a vertex of P inside Q), two of P and one of Q (an edge of P crossing a side of
/// Q), or one of P and two of Q (a vertical corner line of Q meeting a face of P); three
/// of Q never meet, as Q's sides are vertical. All three kinds are enumerated.
fn convex_top_in_rect(
    verts: &[Vec3],
    edges: &[(Vec3, Vec3)],
    planes: &[(Vec3, f64)],
    rect: &[f64; 4],
) -> Option<Vec3> {
    // Rounding slack on the rectangle's sides (m): points computed on a side may land a
    // few ulps outside it.
    let tol = 1e-9 * (1.0 + rect.iter().fold(0.0f64, |m, x| m.max(x.abs())));
    let inside = |x: f64, y: f64| {
        x >= rect[0] - tol && x <= rect[1] + tol && y >= rect[2] - tol && y <= rect[3] + tol
    };
    let mut best: Option<Vec3> = None;
    let mut consider = |p: Vec3| {
        if best.is_none_or(|b| p.z > b.z) {
            best = Some(p);
        }
    };
    for v in verts {
        if in_rect(v.x, v.y, rect) {
            consider(*v);
        }
    }
    for (a, b) in edges {
        // Edge a + t (b − a), t ∈ [0, 1], crossing the planes x = x_min, x_max (axis 0)
        // and y = y_min, y_max (axis 1).
        for (axis, value) in [(0, rect[0]), (0, rect[1]), (1, rect[2]), (1, rect[3])] {
            let da = b[axis] - a[axis];
            if da == 0.0 {
                continue;
            }
            let t = (value - a[axis]) / da;
            if (0.0..=1.0).contains(&t) {
                let p = a + t * (b - a);
                if inside(p.x, p.y) {
                    consider(p);
                }
            }
        }
    }
    for x in [rect[0], rect[1]] {
        for y in [rect[2], rect[3]] {
            // The vertical line (x, y, z) inside P: lo ≤ z ≤ hi from the faces with n_z ≠ 0;
            // a vertical face must hold on its own.
            let (mut lo, mut hi) = (f64::NEG_INFINITY, f64::INFINITY);
            let mut feasible = true;
            for (n, d) in planes {
                let rhs = d - n.x * x - n.y * y;
                if n.z.abs() < 1e-12 {
                    if rhs < -tol {
                        feasible = false;
                        break;
                    }
                } else if n.z > 0.0 {
                    hi = hi.min(rhs / n.z);
                } else {
                    lo = lo.max(rhs / n.z);
                }
            }
            if feasible && hi.is_finite() && lo <= hi + tol {
                consider(Vec3::new(x, y, hi));
            }
        }
    }
    best
}

/// Least-squares line z = a + s u through `points` (u, z): (a, s), or `None` with fewer
/// than 2 distinct u.
pub fn fit_line(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    if points.len() < 2 {
        return None;
    }
    let n = points.len() as f64;
    let ub = points.iter().map(|p| p.0).sum::<f64>() / n;
    let zb = points.iter().map(|p| p.1).sum::<f64>() / n;
    let suu: f64 = points.iter().map(|p| (p.0 - ub).powi(2)).sum();
    let suz: f64 = points.iter().map(|p| (p.0 - ub) * (p.1 - zb)).sum();
    if suu.is_nan() || suu <= 1e-12 * (1.0 + ub * ub) {
        return None;
    }
    let s = suz / suu;
    Some((zb - s * ub, s))
}

/// Measure the angle of repose of `bodies` on `grid` (module doc, paper 000 §7.5).
/// Static bodies and bodies for which `skip` is true (e.g. those that left the
/// container) are ignored. `Err` if a body's shape is not handled.
pub fn measure(
    grid: &ReposeGrid,
    bodies: &[RigidBody],
    skip: impl Fn(usize) -> bool,
) -> Result<ReposeMeasurement, String> {
    let mut highest = [[None; COLUMNS]; ROWS];
    for (i, b) in bodies.iter().enumerate() {
        if b.is_static() || skip(i) {
            continue;
        }
        for (row, col) in grid.cells_near(&b.position, b.shape.bounding_radius()) {
            let rect = grid.cell_rect(row, col);
            let top = highest_point_in_cell(b, &rect)?;
            highest[row][col] = higher(highest[row][col], top);
        }
    }
    Ok(from_highest(grid, highest))
}

/// Steps 3-4 of the module doc on given highest points.
pub fn from_highest(
    grid: &ReposeGrid,
    highest: [[Option<Vec3>; COLUMNS]; ROWS],
) -> ReposeMeasurement {
    let mut row_angles_deg = [f64::NAN; ROWS];
    let mut lines = [(f64::NAN, f64::NAN); ROWS];
    let mut empty_cells = 0;
    for (j, row) in highest.iter().enumerate() {
        let points: Vec<(f64, f64)> = row.iter().flatten().map(|p| (grid.u(p), p.z)).collect();
        empty_cells += COLUMNS - points.len();
        if let Some((a, s)) = fit_line(&points) {
            lines[j] = (a, s);
            row_angles_deg[j] = (-s).atan().to_degrees();
        }
    }
    let fitted: Vec<f64> = row_angles_deg
        .iter()
        .copied()
        .filter(|a| !a.is_nan())
        .collect();
    let (angle_deg, error_deg) = if fitted.is_empty() {
        (f64::NAN, f64::NAN)
    } else {
        let mean = fitted.iter().sum::<f64>() / fitted.len() as f64;
        let max = fitted.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let min = fitted.iter().copied().fold(f64::INFINITY, f64::min);
        // ε = ½ [(θ_max − θ̄) + (θ̄ − θ_min)]   (paper 000, §7.5)
        (mean, 0.5 * ((max - mean) + (mean - min)))
    };
    ReposeMeasurement {
        highest,
        row_angles_deg,
        lines,
        angle_deg,
        error_deg,
        rows_fitted: fitted.len(),
        empty_cells,
    }
}

/// The slope of a conical pile about the vertical axis through `base` (the cylinder
/// protocol's measurement, in the layout of [`ReposeMeasurement`]): each dynamic body's
/// highest point (exact, as [`highest_point_in_cell`] over a rectangle covering the
/// body) falls into one of [`ROWS`] sectors of 45° about the axis (row j: azimuth in
/// [j·45°, (j+1)·45°) from +x) and one of [`COLUMNS`] rings of equal width out to the
/// farthest point's distance ρ_max (column 0 at the axis); the highest point of each
/// cell is kept, a least-squares line z = a + s ρ is fitted through each sector's cells,
/// and the pile's angle is the mean of the sectors' atan(−s), with the paper's error
/// ½ (max − min) (the grid measurement's statistics, over sectors instead of rows).
/// `lines` hold (a, s) in ρ. Static bodies and those for which `skip` is true are
/// ignored; `Err` if a body's shape is not handled.
pub fn measure_cone(
    base: &Vec3,
    bodies: &[RigidBody],
    skip: impl Fn(usize) -> bool,
) -> Result<ReposeMeasurement, String> {
    let mut tops = Vec::new();
    for (i, b) in bodies.iter().enumerate() {
        if b.is_static() || skip(i) {
            continue;
        }
        let r = b.shape.bounding_radius();
        let p = &b.position;
        let rect = [p.x - r, p.x + r, p.y - r, p.y + r];
        if let Some(top) = highest_point_in_cell(b, &rect)? {
            tops.push(top);
        }
    }
    let radial = |p: &Vec3| ((p.x - base.x).powi(2) + (p.y - base.y).powi(2)).sqrt();
    let rho_max = tops.iter().map(radial).fold(0.0, f64::max);
    let mut highest = [[None; COLUMNS]; ROWS];
    for p in &tops {
        let sector = (p.y - base.y)
            .atan2(p.x - base.x)
            .rem_euclid(std::f64::consts::TAU)
            / std::f64::consts::TAU
            * ROWS as f64;
        let ring = if rho_max > 0.0 {
            radial(p) / rho_max * COLUMNS as f64
        } else {
            0.0
        };
        let (j, k) = (
            (sector as usize).min(ROWS - 1),
            (ring as usize).min(COLUMNS - 1),
        );
        highest[j][k] = higher(highest[j][k], Some(*p));
    }
    let mut row_angles_deg = [f64::NAN; ROWS];
    let mut lines = [(f64::NAN, f64::NAN); ROWS];
    let mut empty_cells = 0;
    for (j, row) in highest.iter().enumerate() {
        let points: Vec<(f64, f64)> = row.iter().flatten().map(|p| (radial(p), p.z)).collect();
        empty_cells += COLUMNS - points.len();
        if let Some((a, s)) = fit_line(&points) {
            lines[j] = (a, s);
            row_angles_deg[j] = (-s).atan().to_degrees();
        }
    }
    let fitted: Vec<f64> = row_angles_deg
        .iter()
        .copied()
        .filter(|a| !a.is_nan())
        .collect();
    let (angle_deg, error_deg) = if fitted.is_empty() {
        (f64::NAN, f64::NAN)
    } else {
        let mean = fitted.iter().sum::<f64>() / fitted.len() as f64;
        let max = fitted.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let min = fitted.iter().copied().fold(f64::INFINITY, f64::min);
        (mean, 0.5 * ((max - mean) + (mean - min)))
    };
    Ok(ReposeMeasurement {
        highest,
        row_angles_deg,
        lines,
        angle_deg,
        error_deg,
        rows_fitted: fitted.len(),
        empty_cells,
    })
}
