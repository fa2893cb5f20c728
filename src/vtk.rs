//! VTK output for ParaView: the bodies of each frame as an XML UnstructuredGrid (`.vtu`),
//! a `.pvd` collection naming the frames with their times, and the containers as a
//! separate static `.vtu`.
//!
//! Format facts (VTK XML file formats, ASCII encoding, `version="1.0"`):
//! - A frame file has one point per body (body order of the world, static bodies
//!   included) and one `VTK_VERTEX` cell (type 1) per point, so every filter sees them.
//!   Point data, all `Float64` unless stated: `id` (`Int64`, the body's index),
//!   `velocity` (3), `angular_velocity` (3, rad/s, world frame), `orientation` (4,
//!   the unit quaternion as w, x, y, z), `rotation` (9, the rotation matrix body → world,
//!   row-major, for ParaView's tensor glyph), `shape` (`Int32`, an index into the field
//!   data `shape_names`), `size` (3, half-extents of the shape's bounding box in the
//!   body frame: a sphere's radius three times), `radius` (the shape's bounding radius:
//!   a sphere's radius, for the Glyph filter's scale), `mass` (kg, 0 for static bodies).
//!   Positions are the points themselves. Field data: `TimeValue` (1, s), `step`
//!   (`Int64`, 1) and `shape_names` (a `String` array; in ASCII every string is its
//!   bytes as numbers followed by 0, as VTK writes it).
//! - The containers file has the containers' surfaces as `VTK_POLYGON` cells (type 7)
//!   with cell data `container` (`Int32`, the container's index in the world). A plane
//!   is drawn as a square of half-width [`plane_half_width`] about its point.
//! - Numbers are written with Rust's shortest round-trip formatting: reading a value
//!   back gives the same `f64`.

use crate::container::Container;
use crate::math::Vec3;
use crate::shapes::Shape;
use crate::world::World;
use std::fmt::Write as _;

/// The names of the `shape` codes, in code order (the field data `shape_names`).
pub const SHAPE_NAMES: [&str; 8] = [
    "sphere",
    "cuboid",
    "cross",
    "ellipsoid",
    "rod",
    "tetrahedron",
    "polyhedron",
    "mass_points",
];

/// Segments of a cylinder's or hopper's circle in the containers file.
pub const CIRCLE_SEGMENTS: usize = 48;

/// The `shape` code of a shape: its [`Shape::kind_name`]'s index in [`SHAPE_NAMES`].
pub fn shape_code(shape: &Shape) -> i32 {
    match shape {
        Shape::Sphere { .. } => 0,
        Shape::Cuboid { .. } => 1,
        Shape::Cross { .. } => 2,
        Shape::Ellipsoid { .. } => 3,
        Shape::Rod { .. } => 4,
        Shape::ConvexPolyhedron(p) if p.vertices.len() == 4 => 5,
        Shape::ConvexPolyhedron(_) => 6,
        Shape::MassPoints { .. } => 7,
    }
}

/// Half-extents of the axis-aligned box about the body's origin that holds the shape,
/// in the body frame.
pub fn shape_size(shape: &Shape) -> Vec3 {
    let of_points = |pts: &[Vec3], pad: f64| {
        let mut m = Vec3::zeros();
        for p in pts {
            m = m.sup(&p.abs());
        }
        m.add_scalar(pad)
    };
    match shape {
        Shape::Sphere { radius } => Vec3::repeat(*radius),
        Shape::Cuboid { half_extents } => *half_extents,
        Shape::Cross { c } => Vec3::repeat(1.5 * c),
        Shape::Ellipsoid { semi_axes } => *semi_axes,
        Shape::Rod { length, radius } => Vec3::new(*radius, *radius, 0.5 * length + radius),
        Shape::ConvexPolyhedron(p) => of_points(&p.vertices, 0.0),
        Shape::MassPoints { points, radius, .. } => of_points(points, *radius),
    }
}

fn header(out: &mut String) {
    out.push_str("<?xml version=\"1.0\"?>\n");
    out.push_str(
        "<VTKFile type=\"UnstructuredGrid\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\">\n<UnstructuredGrid>\n",
    );
}

fn footer(out: &mut String) {
    out.push_str("</UnstructuredGrid>\n</VTKFile>\n");
}

/// One `<DataArray>` of `components` per tuple from already formatted values.
fn array<T: std::fmt::Display>(
    out: &mut String,
    ty: &str,
    name: &str,
    components: usize,
    values: impl IntoIterator<Item = T>,
) {
    let _ = write!(
        out,
        "<DataArray type=\"{ty}\" Name=\"{name}\" NumberOfComponents=\"{components}\" format=\"ascii\">"
    );
    for (i, v) in values.into_iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let _ = write!(out, "{v}");
    }
    out.push_str("</DataArray>\n");
}

/// `VTK_VERTEX` cells, one per point.
fn vertex_cells(out: &mut String, n: usize) {
    out.push_str("<Cells>\n");
    array(out, "Int64", "connectivity", 1, 0..n as i64);
    array(out, "Int64", "offsets", 1, 1..=n as i64);
    array(out, "UInt8", "types", 1, std::iter::repeat_n(1u8, n));
    out.push_str("</Cells>\n");
}

/// The bodies of `world` now as one `.vtu` file (see the module doc for its fields).
pub fn bodies_vtu(world: &World) -> String {
    let b = &world.bodies;
    let n = b.len();
    let mut out = String::new();
    header(&mut out);
    out.push_str("<FieldData>\n");
    let _ = writeln!(
        out,
        "<DataArray type=\"Float64\" Name=\"TimeValue\" NumberOfTuples=\"1\" format=\"ascii\">{}</DataArray>",
        world.time
    );
    let _ = writeln!(
        out,
        "<DataArray type=\"Int64\" Name=\"step\" NumberOfTuples=\"1\" format=\"ascii\">{}</DataArray>",
        world.step_index
    );
    let _ = write!(
        out,
        "<DataArray type=\"String\" Name=\"shape_names\" NumberOfTuples=\"{}\" format=\"ascii\">",
        SHAPE_NAMES.len()
    );
    let bytes: Vec<String> = SHAPE_NAMES
        .iter()
        .flat_map(|s| s.bytes().chain([0]).map(|c| c.to_string()))
        .collect();
    out.push_str(&bytes.join(" "));
    out.push_str("</DataArray>\n</FieldData>\n");
    let _ = writeln!(out, "<Piece NumberOfPoints=\"{n}\" NumberOfCells=\"{n}\">");
    out.push_str("<Points>\n");
    array(
        &mut out,
        "Float64",
        "position",
        3,
        b.iter()
            .flat_map(|b| b.position.iter().copied().collect::<Vec<_>>()),
    );
    out.push_str("</Points>\n");
    vertex_cells(&mut out, n);
    out.push_str("<PointData Scalars=\"radius\" Vectors=\"velocity\" Tensors=\"rotation\">\n");
    array(&mut out, "Int64", "id", 1, 0..n as i64);
    let v3 = |f: fn(&crate::RigidBody) -> Vec3| -> Vec<f64> {
        b.iter()
            .flat_map(|b| f(b).iter().copied().collect::<Vec<_>>())
            .collect()
    };
    array(&mut out, "Float64", "velocity", 3, v3(|b| b.velocity));
    array(
        &mut out,
        "Float64",
        "angular_velocity",
        3,
        v3(|b| b.angular_velocity),
    );
    array(
        &mut out,
        "Float64",
        "orientation",
        4,
        b.iter().flat_map(|b| {
            let q = b.orientation.quaternion();
            [q.w, q.i, q.j, q.k]
        }),
    );
    array(
        &mut out,
        "Float64",
        "rotation",
        9,
        b.iter().flat_map(|b| {
            let m = *b.orientation.to_rotation_matrix().matrix();
            (0..3).flat_map(move |r| (0..3).map(move |c| m[(r, c)]))
        }),
    );
    array(
        &mut out,
        "Int32",
        "shape",
        1,
        b.iter().map(|b| shape_code(&b.shape)),
    );
    array(&mut out, "Float64", "size", 3, v3(|b| shape_size(&b.shape)));
    array(
        &mut out,
        "Float64",
        "radius",
        1,
        b.iter().map(|b| b.shape.bounding_radius()),
    );
    array(&mut out, "Float64", "mass", 1, b.iter().map(|b| b.mass));
    out.push_str("</PointData>\n</Piece>\n");
    footer(&mut out);
    out
}

/// Half-width of the square that stands for an infinite plane: twice the largest
/// distance of a body's centre from the plane's point (bodies included by their bounding
/// radius), at least 1 m.
pub fn plane_half_width(world: &World, point: &Vec3) -> f64 {
    world
        .bodies
        .iter()
        .map(|b| 2.0 * ((b.position - point).norm() + b.shape.bounding_radius()))
        .fold(1.0, f64::max)
}

/// The containers' surfaces as polygons (each a list of corner points) with the index
/// of their container.
pub fn container_polygons(world: &World) -> Vec<(usize, Vec<Vec3>)> {
    let mut polys = Vec::new();
    let circle = |base: &Vec3, r: f64, z: f64, k: usize| {
        let a = std::f64::consts::TAU * k as f64 / CIRCLE_SEGMENTS as f64;
        base + Vec3::new(r * a.cos(), r * a.sin(), z)
    };
    for (i, c) in world.containers.iter().enumerate() {
        match c {
            Container::Plane { point, normal } => {
                let h = plane_half_width(world, point);
                let (u, v) = crate::math::tangent_basis(&normal.normalize());
                polys.push((
                    i,
                    vec![
                        point + h * (-u - v),
                        point + h * (u - v),
                        point + h * (u + v),
                        point + h * (-u + v),
                    ],
                ));
            }
            Container::Box {
                center,
                half_size: [hx, hy],
                height,
                walls,
                dividers,
            } => {
                let p = |x: f64, y: f64, z: f64| center + Vec3::new(x, y, z);
                let (hx, hy, h) = (*hx, *hy, *height);
                polys.push((
                    i,
                    vec![
                        p(-hx, -hy, 0.0),
                        p(hx, -hy, 0.0),
                        p(hx, hy, 0.0),
                        p(-hx, hy, 0.0),
                    ],
                ));
                let sides = [
                    [p(-hx, -hy, 0.0), p(-hx, hy, 0.0)],
                    [p(hx, -hy, 0.0), p(hx, hy, 0.0)],
                    [p(-hx, -hy, 0.0), p(hx, -hy, 0.0)],
                    [p(-hx, hy, 0.0), p(hx, hy, 0.0)],
                ];
                let up = Vec3::new(0.0, 0.0, h);
                for (present, [a, b]) in walls.iter().zip(sides) {
                    if *present {
                        polys.push((i, vec![a, b, b + up, a + up]));
                    }
                }
                for d in dividers.iter().filter(|d| d.present) {
                    let x = d.x - center.x;
                    let (a, b) = (p(x, -hy, 0.0), p(x, hy, 0.0));
                    polys.push((i, vec![a, b, b + up, a + up]));
                }
            }
            Container::Cylinder {
                base,
                radius,
                height,
            } => {
                polys.push((
                    i,
                    (0..CIRCLE_SEGMENTS)
                        .map(|k| circle(base, *radius, 0.0, k))
                        .collect(),
                ));
                for k in 0..CIRCLE_SEGMENTS {
                    polys.push((
                        i,
                        vec![
                            circle(base, *radius, 0.0, k),
                            circle(base, *radius, 0.0, k + 1),
                            circle(base, *radius, *height, k + 1),
                            circle(base, *radius, *height, k),
                        ],
                    ));
                }
            }
            Container::Hopper {
                base,
                bottom_radius,
                top_radius,
                height,
            } => {
                for k in 0..CIRCLE_SEGMENTS {
                    polys.push((
                        i,
                        vec![
                            circle(base, *bottom_radius, 0.0, k),
                            circle(base, *bottom_radius, 0.0, k + 1),
                            circle(base, *top_radius, *height, k + 1),
                            circle(base, *top_radius, *height, k),
                        ],
                    ));
                }
            }
        }
    }
    polys
}

/// The containers of `world` as one `.vtu` file of polygons (see the module doc).
pub fn containers_vtu(world: &World) -> String {
    let polys = container_polygons(world);
    let points: usize = polys.iter().map(|(_, p)| p.len()).sum();
    let mut out = String::new();
    header(&mut out);
    let _ = writeln!(
        out,
        "<Piece NumberOfPoints=\"{points}\" NumberOfCells=\"{}\">",
        polys.len()
    );
    out.push_str("<Points>\n");
    array(
        &mut out,
        "Float64",
        "position",
        3,
        polys
            .iter()
            .flat_map(|(_, p)| p.iter().flat_map(|v| [v.x, v.y, v.z])),
    );
    out.push_str("</Points>\n<Cells>\n");
    array(&mut out, "Int64", "connectivity", 1, 0..points as i64);
    array(
        &mut out,
        "Int64",
        "offsets",
        1,
        polys.iter().scan(0i64, |end, (_, p)| {
            *end += p.len() as i64;
            Some(*end)
        }),
    );
    array(
        &mut out,
        "UInt8",
        "types",
        1,
        std::iter::repeat_n(7u8, polys.len()),
    );
    out.push_str("</Cells>\n<CellData Scalars=\"container\">\n");
    array(
        &mut out,
        "Int32",
        "container",
        1,
        polys.iter().map(|(i, _)| *i as i32),
    );
    out.push_str("</CellData>\n</Piece>\n");
    footer(&mut out);
    out
}

/// A `.pvd` collection of `(time, file name)` frames, the names relative to the `.pvd`.
pub fn pvd(frames: &[(f64, String)]) -> String {
    let mut out = String::from(
        "<?xml version=\"1.0\"?>\n<VTKFile type=\"Collection\" version=\"0.1\" byte_order=\"LittleEndian\">\n<Collection>\n",
    );
    for (t, file) in frames {
        let _ = writeln!(
            out,
            "<DataSet timestep=\"{t}\" group=\"\" part=\"0\" file=\"{}\"/>",
            xml_escape(file)
        );
    }
    out.push_str("</Collection>\n</VTKFile>\n");
    out
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// File name of frame `k` of a series (`bodies_000012.vtu`).
pub fn frame_name(k: usize) -> String {
    format!("bodies_{k:06}.vtu")
}

/// The series file's name in a VTK directory.
pub const SERIES_NAME: &str = "bodies.pvd";

/// The containers file's name in a VTK directory.
pub const CONTAINERS_NAME: &str = "containers.vtu";

/// Whether `name` is a file a VTK directory holds (an earlier series may be replaced).
pub fn is_series_file(name: &str) -> bool {
    name == SERIES_NAME
        || name == CONTAINERS_NAME
        || (name.starts_with("bodies_") && name.ends_with(".vtu"))
}

/// A series being written into a directory: [`VtkSeries::frame`] writes one frame's
/// file, [`VtkSeries::finish`] the containers file and the `.pvd` naming every frame.
/// The directory is an [`crate::output::OutputDir`] of the caller's, so a series that
/// does not finish leaves nothing.
pub struct VtkSeries {
    dir: std::path::PathBuf,
    frames: Vec<(f64, String)>,
}

impl VtkSeries {
    /// A series written into `dir` (which exists).
    pub fn new(dir: &std::path::Path) -> Self {
        VtkSeries {
            dir: dir.to_path_buf(),
            frames: Vec::new(),
        }
    }

    /// Write the bodies of `world` now as the next frame.
    pub fn frame(&mut self, world: &World) -> std::io::Result<()> {
        let name = frame_name(self.frames.len());
        std::fs::write(self.dir.join(&name), bodies_vtu(world))?;
        self.frames.push((world.time, name));
        Ok(())
    }

    /// Frames written so far.
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// Whether no frame is written yet.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Write the containers of `world` and the `.pvd`.
    pub fn finish(self, world: &World) -> std::io::Result<()> {
        std::fs::write(self.dir.join(CONTAINERS_NAME), containers_vtu(world))?;
        std::fs::write(self.dir.join(SERIES_NAME), pvd(&self.frames))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shape_code_names_its_kind() {
        let v = Vec3::new(0.5, 0.4, 0.3);
        let shapes = [
            Shape::Sphere { radius: 1.0 },
            Shape::Cuboid { half_extents: v },
            Shape::Cross { c: 1.0 },
            Shape::Ellipsoid { semi_axes: v },
            Shape::Rod {
                length: 1.0,
                radius: 0.1,
            },
            Shape::regular_tetrahedron(1.0),
            Shape::MassPoints {
                points: vec![v, -v],
                masses: vec![1.0, 1.0],
                radius: 0.1,
            },
        ];
        for s in &shapes {
            assert_eq!(SHAPE_NAMES[shape_code(s) as usize], s.kind_name());
        }
        assert_eq!(shape_size(&Shape::Cross { c: 2.0 }), Vec3::repeat(3.0));
    }
}
