//! The sweep's figure: angle of repose against the friction coefficient μ, one line per
//! (shape, solver), with error bars (the layout of paper 000, Fig. 15).
//!
//! Each point is the mean angle θ̄ over the seeds run at that μ; its error bar is the
//! mean over those runs of the paper's error ½(θmax − θmin) of the eight row slopes
//! (§7.5), the spread the paper draws. The figure is drawn by `plotters` into an RGB
//! buffer with the bundled DejaVu Sans (no system fonts needed) and written as PNG.

use plotters::element::DashedPathElement;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::OnceLock;

/// One run of the sweep, as the plot needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct PlotRun {
    pub shape: String,
    pub solver: String,
    pub friction: f64,
    pub angle_deg: f64,
    pub error_deg: f64,
    /// A phase of the run reached its time cap: the pile was still moving when it was
    /// measured (the CSV's `packing_settled` or `slumping_settled` is false).
    pub capped: bool,
}

/// One point of a series: μ, mean angle, mean paper error, number of runs, and how
/// many of them reached a time cap (drawn as an open marker).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlotPoint {
    pub friction: f64,
    pub angle_deg: f64,
    pub error_deg: f64,
    pub runs: usize,
    pub capped: usize,
}

/// The runs grouped per (shape, solver), each series sorted by μ, runs at the same μ
/// averaged. Runs whose angle is not finite (nothing measured) are left out.
pub fn series(runs: &[PlotRun]) -> BTreeMap<(String, String), Vec<PlotPoint>> {
    // Sums first (angle_deg, error_deg hold totals), then means.
    let mut out: BTreeMap<(String, String), Vec<PlotPoint>> = BTreeMap::new();
    for r in runs.iter().filter(|r| r.angle_deg.is_finite()) {
        let s = out.entry((r.shape.clone(), r.solver.clone())).or_default();
        match s.iter_mut().find(|p| p.friction == r.friction) {
            Some(p) => {
                p.angle_deg += r.angle_deg;
                p.error_deg += r.error_deg;
                p.runs += 1;
                p.capped += usize::from(r.capped);
            }
            None => s.push(PlotPoint {
                friction: r.friction,
                angle_deg: r.angle_deg,
                error_deg: r.error_deg,
                runs: 1,
                capped: usize::from(r.capped),
            }),
        }
    }
    for s in out.values_mut() {
        s.sort_by(|a, b| a.friction.total_cmp(&b.friction));
        for p in s.iter_mut() {
            p.angle_deg /= p.runs as f64;
            p.error_deg /= p.runs as f64;
        }
    }
    out
}

/// The bundled font, registered once as plotters' "sans-serif".
fn register_font() -> Result<(), String> {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            include_bytes!("../../assets/fonts/DejaVuSans.ttf"),
        )
        .map_err(|_| "the bundled font DejaVuSans.ttf cannot be read".to_string())
    })
    .clone()
}

/// "sphere" → "spheres", "cross" → "crosses".
fn plural(shape: &str) -> String {
    if shape.ends_with('s') || shape.ends_with('x') {
        format!("{shape}es")
    } else {
        format!("{shape}s")
    }
}

/// A colour per shape (in the order spheres, cubes, crosses, then others).
fn shape_colour(shape: &str, i: usize) -> RGBColor {
    match shape {
        "sphere" => RGBColor(31, 119, 180),
        "cube" => RGBColor(214, 39, 40),
        "cross" => RGBColor(44, 160, 44),
        _ => {
            let (r, g, b) = Palette99::pick(i + 3).to_backend_color().rgb;
            RGBColor(r, g, b)
        }
    }
}

/// Draw the figure (`width` × `height` pixels) and return the RGB pixels, row-major.
pub fn render(runs: &[PlotRun], width: u32, height: u32) -> Result<Vec<u8>, String> {
    register_font()?;
    let series = series(runs);
    if series.is_empty() {
        return Err("nothing to plot: no run has a measured angle".into());
    }
    let pts = || series.values().flatten();
    let mu_max = pts().map(|p| p.friction).fold(0.0, f64::max).max(0.1);
    let top = pts().map(|p| p.angle_deg + p.error_deg).fold(0.0, f64::max);
    let y_max = (top * 1.15 / 5.0).ceil().max(1.0) * 5.0;
    let solvers: Vec<&String> = {
        let mut s: Vec<&String> = series.keys().map(|k| &k.1).collect();
        s.dedup();
        s.sort();
        s.dedup();
        s
    };
    let mut buf = vec![255u8; (width * height * 3) as usize];
    {
        let e = |e: DrawingAreaErrorKind<_>| format!("drawing the plot: {e}");
        let root = BitMapBackend::with_buffer(&mut buf, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(e)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "Angle of repose against friction (paper 000 §7.5)",
                ("sans-serif", 22),
            )
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(60)
            .build_cartesian_2d(-0.02 * mu_max..mu_max * 1.04, 0.0..y_max)
            .map_err(e)?;
        chart
            .configure_mesh()
            .x_desc("friction coefficient μ")
            .y_desc("angle of repose, mean of 8 rows (°)")
            .axis_desc_style(("sans-serif", 18))
            .label_style(("sans-serif", 15))
            .draw()
            .map_err(e)?;
        let shapes: Vec<&String> = {
            let mut s: Vec<&String> = series.keys().map(|k| &k.0).collect();
            s.dedup();
            s
        };
        for ((shape, solver), points) in &series {
            let si = shapes.iter().position(|s| *s == shape).unwrap_or(0);
            let colour = shape_colour(shape, si);
            let dashed = solvers.iter().position(|s| *s == solver).unwrap_or(0) % 2 == 1;
            let xy: Vec<(f64, f64)> = points.iter().map(|p| (p.friction, p.angle_deg)).collect();
            let style = ShapeStyle::from(&colour).stroke_width(2);
            let label = format!("{}, {}", plural(shape), solver.to_uppercase());
            if dashed {
                chart
                    .draw_series(DashedLineSeries::new(xy.clone(), 8, 5, style))
                    .map_err(e)?
                    .label(label)
                    .legend(move |(x, y)| {
                        DashedPathElement::new(vec![(x, y), (x + 24, y)], 6, 4, style)
                    });
            } else {
                chart
                    .draw_series(LineSeries::new(xy.clone(), style))
                    .map_err(e)?
                    .label(label)
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], style));
            }
            chart
                .draw_series(points.iter().map(|p| {
                    ErrorBar::new_vertical(
                        p.friction,
                        p.angle_deg - p.error_deg,
                        p.angle_deg,
                        p.angle_deg + p.error_deg,
                        style,
                        8,
                    )
                }))
                .map_err(e)?;
            // Markers over the error bars: an open one (a capped run) is filled white,
            // so its inside reads empty.
            for p in points {
                let at = (p.friction, p.angle_deg);
                let open = p.capped > 0;
                let size = if open { 7 } else { 5 };
                let fill = if open {
                    WHITE.filled()
                } else {
                    colour.filled()
                };
                if dashed {
                    chart
                        .draw_series([TriangleMarker::new(at, size + 1, fill)])
                        .map_err(e)?;
                    if open {
                        chart
                            .draw_series([TriangleMarker::new(at, size + 1, style)])
                            .map_err(e)?;
                    }
                } else {
                    chart
                        .draw_series([Circle::new(at, size, fill)])
                        .map_err(e)?;
                    if open {
                        chart
                            .draw_series([Circle::new(at, size, style)])
                            .map_err(e)?;
                    }
                }
            }
        }
        if pts().any(|p| p.capped > 0) {
            root.draw(&Text::new(
                "open marker: a run reached its time cap (the pile was still moving)",
                (76, height as i32 - 18),
                ("sans-serif", 14).into_font().color(&BLACK),
            ))
            .map_err(e)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .label_font(("sans-serif", 15))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(e)?;
        root.present().map_err(e)?;
    }
    Ok(buf)
}

/// Draw the figure and write it as PNG to `out`.
pub fn write_png(runs: &[PlotRun], width: u32, height: u32, out: impl Write) -> Result<(), String> {
    write_rgb_png(&render(runs, width, height)?, width, height, out)
}

/// Write RGB pixels (row-major, `width` × `height`) as an 8-bit PNG to `out`.
pub fn write_rgb_png(rgb: &[u8], width: u32, height: u32, out: impl Write) -> Result<(), String> {
    let mut enc = png::Encoder::new(out, width, height);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let e = |e: png::EncodingError| format!("writing the plot: {e}");
    let mut w = enc.write_header().map_err(e)?;
    w.write_image_data(rgb).map_err(e)?;
    w.finish().map_err(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(shape: &str, solver: &str, mu: f64, a: f64, e: f64) -> PlotRun {
        PlotRun {
            shape: shape.into(),
            solver: solver.into(),
            friction: mu,
            angle_deg: a,
            error_deg: e,
            capped: false,
        }
    }

    #[test]
    fn seeds_at_one_mu_are_averaged_and_series_sorted_by_mu() {
        let runs = [
            run("sphere", "etm", 0.3, 10.0, 1.0),
            run("sphere", "etm", 0.0, 2.0, 0.5),
            run("sphere", "etm", 0.3, 14.0, 3.0),
            run("cube", "etm", 0.3, 20.0, 1.0),
            run("cube", "etm", 0.5, f64::NAN, 1.0),
        ];
        let s = series(&runs);
        assert_eq!(s.len(), 2);
        let sph = &s[&("sphere".to_string(), "etm".to_string())];
        assert_eq!(sph.len(), 2);
        assert_eq!(sph[0].friction, 0.0);
        assert_eq!(
            (sph[1].angle_deg, sph[1].error_deg, sph[1].runs),
            (12.0, 2.0, 2)
        );
        // The unmeasured cube run is left out.
        assert_eq!(s[&("cube".to_string(), "etm".to_string())].len(), 1);
    }

    #[test]
    fn the_figure_draws_each_series_in_its_colour() {
        let runs = [
            run("sphere", "sqm", 0.0, 3.0, 0.5),
            run("sphere", "sqm", 0.5, 15.0, 1.0),
            run("cross", "etm", 0.0, 6.0, 0.5),
            run("cross", "etm", 0.5, 30.0, 1.0),
        ];
        let (w, h) = (640, 420);
        let rgb = render(&runs, w, h).unwrap();
        assert_eq!(rgb.len(), (w * h * 3) as usize);
        let count = |c: RGBColor| {
            rgb.chunks(3)
                .filter(|p| (p[0], p[1], p[2]) == (c.0, c.1, c.2))
                .count()
        };
        // Lines, markers and error bars of both shapes are drawn (hundreds of pixels
        // each), and text is drawn in black (the caption and axis labels).
        assert!(count(shape_colour("sphere", 0)) > 200);
        assert!(count(shape_colour("cross", 0)) > 200);
        assert!(count(BLACK) > 500);
        assert!(render(&[], w, h).is_err());
    }

    /// A point one of whose runs reached its time cap is drawn open (the marker's
    /// inside is left white where the settled run's marker is filled), and the figure
    /// says what that means (more black: the note).
    #[test]
    fn capped_runs_are_drawn_open() {
        let settled = [
            run("sphere", "sqm", 0.0, 3.0, 0.5),
            run("sphere", "sqm", 0.5, 15.0, 1.0),
        ];
        let mut capped = settled.clone();
        capped[1].capped = true;
        let (w, h) = (640, 420);
        let (filled, open) = (
            render(&settled, w, h).unwrap(),
            render(&capped, w, h).unwrap(),
        );
        let c = shape_colour("sphere", 0);
        let is = |p: &[u8], c: RGBColor| (p[0], p[1], p[2]) == (c.0, c.1, c.2);
        let emptied = filled
            .chunks(3)
            .zip(open.chunks(3))
            .filter(|(f, o)| is(f, c) && is(o, WHITE))
            .count();
        assert!(emptied >= 40, "{emptied} pixels of the marker left white");
        // Text is anti-aliased: its pixels are dark rather than black.
        let dark = |rgb: &[u8]| rgb.chunks(3).filter(|p| p.iter().all(|&v| v < 128)).count();
        let (note, no_note) = (dark(&open), dark(&filled));
        assert!(
            note > no_note + 100,
            "dark pixels {note} with the note, {no_note} without"
        );
        let points = series(&capped);
        assert_eq!(points[&("sphere".into(), "sqm".into())][1].capped, 1);
    }
}
