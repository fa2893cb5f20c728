//! Static containers and obstacles: ground plane, slope, open box with removable walls,
//! cylinder with a closed bottom, truncated-cone hopper with an open bottom.
//!
//! A container is a first-class scene object. For collision it is a set of one-sided
//! surfaces (paper 001, "Orientation of a plane and plane impenetrability"): a body is
//! pushed back to the inner side even if its centre has crossed the surface, so bodies
//! cannot tunnel through walls. Static spheres are static bodies, not containers.
//! The world's vertical is +z for boxes, cylinders and hoppers (gravity along −z).

use crate::math::Vec3;
use serde::{Deserialize, Serialize};

/// Sides of a box container, in the order of [`Container::Box::walls`].
pub const BOX_WALL_NAMES: [&str; 4] = ["-x", "+x", "-y", "+y"];

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Container {
    /// Infinite one-sided plane through `point`; bodies stay on the side `normal` points
    /// to. A ground plane has `normal = +z`; a slope has a tilted normal.
    Plane { point: Vec3, normal: Vec3 },
    /// Open-top box standing on its floor. `center` is the centre of the floor,
    /// `half_size = (hx, hy)` the inner half-widths, `height` the wall height.
    /// `walls[k]` says whether wall k (see [`BOX_WALL_NAMES`]) is present; `dividers`
    /// are removable internal walls across x (planes x = const), present or not.
    Box {
        center: Vec3,
        half_size: [f64; 2],
        height: f64,
        walls: [bool; 4],
        dividers: Vec<Divider>,
    },
    /// Cylinder with a closed bottom and open top, axis +z, `base` = centre of the floor.
    Cylinder {
        base: Vec3,
        radius: f64,
        height: f64,
    },
    /// Truncated cone (hopper), axis +z, open at both ends: radius `bottom_radius` at
    /// `base` (the outlet) growing linearly to `top_radius` at height `height`.
    Hopper {
        base: Vec3,
        bottom_radius: f64,
        top_radius: f64,
        height: f64,
    },
}

/// A removable internal wall of a box: the plane x = `x` (world), spanning the box in y.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Divider {
    pub x: f64,
    pub present: bool,
}

impl Container {
    pub fn kind_name(&self) -> &'static str {
        match self {
            Container::Plane { .. } => "plane",
            Container::Box { .. } => "box",
            Container::Cylinder { .. } => "cylinder",
            Container::Hopper { .. } => "hopper",
        }
    }

    /// Check every dimension is finite and positive and the normal is non-zero.
    pub fn validate(&self) -> Result<(), String> {
        let fin = |name: &str, v: &Vec3| {
            if v.iter().all(|x| x.is_finite()) {
                Ok(())
            } else {
                Err(format!("{name} must be finite"))
            }
        };
        let pos = |name: &str, x: f64| {
            if x.is_finite() && x > 0.0 {
                Ok(())
            } else {
                Err(format!("{name} must be finite and > 0, got {x}"))
            }
        };
        match self {
            Container::Plane { point, normal } => {
                fin("point", point)?;
                fin("normal", normal)?;
                if normal.norm() < 1e-12 {
                    Err("normal must be non-zero".into())
                } else {
                    Ok(())
                }
            }
            Container::Box {
                center,
                half_size,
                height,
                dividers,
                ..
            } => {
                fin("center", center)?;
                pos("half_size", half_size[0])?;
                pos("half_size", half_size[1])?;
                pos("height", *height)?;
                for d in dividers {
                    if !(d.x.is_finite() && (d.x - center.x).abs() < half_size[0]) {
                        return Err(format!(
                            "dividers: x = {} must lie strictly inside the box",
                            d.x
                        ));
                    }
                }
                Ok(())
            }
            Container::Cylinder {
                base,
                radius,
                height,
            } => {
                fin("base", base)?;
                pos("radius", *radius)?;
                pos("height", *height)
            }
            Container::Hopper {
                base,
                bottom_radius,
                top_radius,
                height,
            } => {
                fin("base", base)?;
                pos("bottom_radius", *bottom_radius)?;
                pos("top_radius", *top_radius)?;
                pos("height", *height)
            }
        }
    }
}
