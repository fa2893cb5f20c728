//! `impulse-lab record`: off-screen rendering into MP4, GIF and PNG frames, run as the
//! real binary with no display (`DISPLAY` unset) on Mesa's software Vulkan driver
//! (lavapipe). The MP4 is demuxed with the `mp4` crate (not the muxer that wrote it)
//! and every sample decoded with OpenH264's decoder.
//!
//! Needs a Vulkan driver (`.ci/run` installs mesa-vulkan-drivers and libvulkan1). Where
//! there is none the rendering tests say so and pass, except under CI (`CI` set), where
//! they fail: CI must always run them. The argument checks need no renderer.
#![cfg(feature = "app")]

use std::collections::HashSet;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// A small bundled scene: one purple ellipsoid bouncing on a grey floor.
const SCENE: &str = "dda_ellipsoid_bounce";

fn vulkan_available() -> bool {
    let found = ["/usr/share/vulkan/icd.d", "/etc/vulkan/icd.d"]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with("lvp_icd"));
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install mesa-vulkan-drivers (see .ci/run)"
        );
        eprintln!("SKIPPED: no lavapipe Vulkan driver; install mesa-vulkan-drivers");
    }
    found
}

fn record(args: &[&str]) -> Output {
    headless(&[&["record"], args].concat())
}

/// Run the binary with no display (the renderer must not need one), on lavapipe.
fn headless(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_impulse-lab"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        // No display: the recorder must not need one.
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env("WGPU_BACKEND", "vulkan")
        .output()
        .unwrap();
    eprintln!(
        "impulse-lab {}\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn out_dir(name: &str) -> std::path::PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("record")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Distinct colours (5 bits per channel) of an RGBA picture.
fn distinct_colours(rgba: &[u8]) -> usize {
    rgba.chunks_exact(4)
        .map(|p| (p[0] >> 3, p[1] >> 3, p[2] >> 3))
        .collect::<HashSet<_>>()
        .len()
}

fn write_png(path: &Path, width: u32, height: u32, rgba: &[u8]) {
    let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut encoder = png::Encoder::new(file, width, height);
    encoder.set_color(png::ColorType::Rgba);
    encoder.set_depth(png::BitDepth::Eight);
    encoder
        .write_header()
        .unwrap()
        .write_image_data(rgba)
        .unwrap();
}

struct Mp4Info {
    width: u32,
    height: u32,
    samples: u32,
    duration: f64,
}

/// Demux with the `mp4` crate and decode every sample with OpenH264 (RGBA frames).
fn decode_mp4(path: &Path) -> (Mp4Info, Vec<Vec<u8>>) {
    use openh264::formats::YUVSource;
    let bytes = std::fs::read(path).unwrap();
    let mut mp4 =
        mp4::Mp4Reader::read_header(std::io::Cursor::new(&bytes), bytes.len() as u64).unwrap();
    assert_eq!(mp4.tracks().len(), 1, "one video track");
    let track = mp4.tracks().values().next().unwrap();
    let id = track.track_id();
    let info = Mp4Info {
        width: u32::from(track.width()),
        height: u32::from(track.height()),
        samples: track.sample_count(),
        duration: track.duration().as_secs_f64(),
    };
    let annex_b = |nal: &[u8]| [&[0, 0, 0, 1][..], nal].concat();
    let mut stream = annex_b(track.sequence_parameter_set().unwrap());
    stream.extend(annex_b(track.picture_parameter_set().unwrap()));
    let mut decoder = openh264::decoder::Decoder::new().unwrap();
    let mut frames = Vec::new();
    let keep = |yuv: &openh264::decoder::DecodedYUV<'_>, frames: &mut Vec<Vec<u8>>| {
        let (w, h) = yuv.dimensions();
        assert_eq!((w as u32, h as u32), (info.width, info.height));
        let mut rgba = vec![0; w * h * 4];
        yuv.write_rgba8(&mut rgba);
        frames.push(rgba);
    };
    for k in 1..=info.samples {
        let sample = mp4.read_sample(id, k).unwrap().unwrap();
        let mut data = &sample.bytes[..];
        while data.len() >= 4 {
            let len = u32::from_be_bytes(data[..4].try_into().unwrap()) as usize;
            stream.extend(annex_b(&data[4..4 + len]));
            data = &data[4 + len..];
        }
        if let Some(yuv) = decoder.decode(&stream).unwrap() {
            keep(&yuv, &mut frames);
        }
        stream.clear();
    }
    for yuv in decoder.flush_remaining().unwrap() {
        keep(&yuv, &mut frames);
    }
    (info, frames)
}

#[test]
fn mp4_decodes_with_the_right_size_frames_and_duration() {
    if !vulkan_available() {
        return;
    }
    let dir = out_dir("mp4");
    let path = dir.join("box.mp4");
    let start = Instant::now();
    let out = record(&[
        SCENE,
        "--out",
        path.to_str().unwrap(),
        "--size",
        "320x240",
        "--fps",
        "10",
        "--duration",
        "1",
    ]);
    eprintln!("recorded in {:.1} s", start.elapsed().as_secs_f64());
    assert!(out.status.success(), "record failed");
    let (info, frames) = decode_mp4(&path);
    assert_eq!((info.width, info.height), (320, 240));
    assert_eq!(info.samples, 10);
    assert!(
        (info.duration - 1.0).abs() <= 0.1,
        "duration {} s",
        info.duration
    );
    assert_eq!(frames.len(), 10, "every sample decodes to a frame");
    // Keep the last decoded frame for a look.
    let last = frames.last().unwrap();
    write_png(&dir.join("last_frame.png"), 320, 240, last);
    let colours = distinct_colours(last);
    let grey = last
        .chunks_exact(4)
        .filter(|p| {
            let (r, g, b) = (i32::from(p[0]), i32::from(p[1]), i32::from(p[2]));
            (r - g).abs() < 16 && (g - b).abs() < 16 && (r - b).abs() < 16
        })
        .count();
    let coloured = 1.0 - grey as f64 / (320.0 * 240.0);
    eprintln!(
        "last frame: {colours} distinct colours, {:.1}% coloured (non-grey) pixels",
        100.0 * coloured
    );
    // The clear colour and the grey floor alone give a few shades of grey; the shaded
    // ellipsoid gives dozens of purples.
    assert!(
        colours > 30,
        "the last frame looks blank: {colours} colours"
    );
    assert!(coloured > 0.01, "no bodies in the last frame");
}

#[test]
fn gif_has_the_frames_size_and_delays() {
    if !vulkan_available() {
        return;
    }
    let dir = out_dir("gif");
    let path = dir.join("box.gif");
    let out = record(&[
        SCENE,
        "--out",
        path.to_str().unwrap(),
        "--size",
        "161x121",
        "--fps",
        "10",
        "--duration",
        "0.5",
        "--camera",
        "iso",
    ]);
    assert!(out.status.success(), "record failed");
    let mut options = gif::DecodeOptions::new();
    options.set_color_output(gif::ColorOutput::RGBA);
    let mut decoder = options
        .read_info(std::fs::File::open(&path).unwrap())
        .unwrap();
    assert_eq!((decoder.width(), decoder.height()), (161, 121));
    let mut delays = Vec::new();
    let mut last = Vec::new();
    while let Some(f) = decoder.read_next_frame().unwrap() {
        delays.push(f.delay);
        last = f.buffer.to_vec();
    }
    assert_eq!(delays, vec![10; 5], "five frames of 1/10 s");
    assert!(distinct_colours(&last) > 20, "the last frame looks blank");
}

#[test]
fn png_frames_are_numbered_and_sized() {
    if !vulkan_available() {
        return;
    }
    let dir = out_dir("png");
    let frames_dir = dir.join("frames");
    let out = record(&[
        SCENE,
        "--out",
        frames_dir.to_str().unwrap(),
        "--format",
        "png",
        "--size",
        "128x96",
        "--fps",
        "8",
        "--duration",
        "0.5",
        "--camera",
        "top",
    ]);
    assert!(out.status.success(), "record failed");
    let mut names: Vec<String> = std::fs::read_dir(&frames_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let expected: Vec<String> = (0..4).map(|k| format!("frame_{k:05}.png")).collect();
    assert_eq!(names, expected);
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(frames_dir.join("frame_00003.png")).unwrap(),
    ));
    let reader = decoder.read_info().unwrap();
    assert_eq!((reader.info().width, reader.info().height), (128, 96));
}

/// Bad input fails at once (no renderer started), exit code 2, a message naming the
/// problem, nothing created.
#[test]
fn bad_arguments_fail_at_once_with_exit_code_2() {
    let dir = out_dir("bad");
    let ok_out = dir.join("x.mp4");
    let ok = ok_out.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &[SCENE, "--out", "/nonexistent/dir/x.mp4"],
            "/nonexistent/dir/x.mp4",
        ),
        (
            &[SCENE, "--out", "/nonexistent/dir/frames", "--format", "png"],
            "/nonexistent/dir/frames",
        ),
        (&[SCENE, "--out", ok, "--size", "321x240"], "even"),
        (&[SCENE, "--out", ok, "--fps", "0"], "frame rate"),
        (&[SCENE, "--out", ok, "--fps", "-5"], "frame rate"),
        (&[SCENE, "--out", ok, "--fps", "NaN"], "frame rate"),
        (&[SCENE, "--out", ok, "--duration", "0"], "duration"),
        (&[SCENE, "--out", ok, "--duration", "-1"], "duration"),
        (&[SCENE, "--out", ok, "--solver", "magic"], "magic"),
        (&[SCENE, "--out", ok, "--camera", "fisheye"], "fisheye"),
        (&[SCENE, "--out", ok, "--format", "avi"], "avi"),
        (&[SCENE, "--out", &format!("{ok}.avi")], ".avi"),
        (&["no_such_scene", "--out", ok], "no_such_scene"),
        (&[SCENE, "--out", ok, "--render-scale", "0"], "render scale"),
        (
            &[SCENE, "--out", ok, "--render-scale", "1.5"],
            "render scale",
        ),
        (
            &[SCENE, "--out", ok, "--render-scale", "half"],
            "render scale",
        ),
    ];
    for (args, needle) in cases {
        let start = Instant::now();
        let out = record(args);
        let elapsed = start.elapsed();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(needle),
            "{args:?}: '{needle}' not in {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(
            elapsed < Duration::from_secs(10),
            "{args:?} took {elapsed:?}: it must fail before rendering"
        );
    }
    assert!(!Path::new("/nonexistent").exists());
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert!(left.is_empty(), "bad runs created files: {left:?}");
}

/// The size `record` printed that it drew the pictures at ("drawn at WxH"): the size
/// of the pictures it read back from the renderer.
fn drawn_at(out: &Output) -> (u32, u32) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let size = stdout
        .split("drawn at ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap_or_else(|| panic!("no 'drawn at' in {stdout}"));
    let (w, h) = size.split_once('x').unwrap();
    (w.parse().unwrap(), h.parse().unwrap())
}

/// The render scale: fast quality draws at half the frame size per axis by default
/// (`--render-scale` chooses another) and stretches the pictures to the requested size;
/// the video has that size and shows the same world as a full-size rendering, softer
/// along edges.
#[test]
fn render_scale_draws_smaller_and_keeps_the_frame_size() {
    if !vulkan_available() {
        return;
    }
    let dir = out_dir("scale");
    let mut first_frames = Vec::new();
    for (scale, drawn) in [
        (None, (160, 120)),
        (Some("0.25"), (80, 60)),
        (Some("1"), (320, 240)),
    ] {
        let path = dir.join(format!("scale_{}.mp4", scale.unwrap_or("default")));
        let mut args = vec![
            SCENE,
            "--out",
            path.to_str().unwrap(),
            "--quality",
            "fast",
            "--size",
            "320x240",
            "--fps",
            "30",
            "--duration",
            "0.1",
        ];
        if let Some(s) = scale {
            args.extend(["--render-scale", s]);
        }
        let out = record(&args);
        assert!(out.status.success(), "record {args:?} failed");
        assert_eq!(drawn_at(&out), drawn, "{args:?}");
        let (info, frames) = decode_mp4(&path);
        assert_eq!((info.width, info.height), (320, 240), "{args:?}");
        assert_eq!(frames.len(), 3, "0.1 s at 30 fps");
        assert!(distinct_colours(&frames[0]) > 30, "{args:?}: blank frame");
        write_png(
            &dir.join(format!("frame0_{}.png", scale.unwrap_or("default"))),
            320,
            240,
            &frames[0],
        );
        first_frames.push(frames[0].clone());
    }
    // Half scale against scale 1, frame 0 (the same world): they differ by more than the
    // encoder's rounding (48 of 255) only along the outlines of the ellipsoid, the floor
    // and the walls, which stretching blurs over about two pixels: a few thousand of the
    // 76 800 pixels. A picture of another world, a misplaced or wrongly sized stretch
    // differs over whole bodies and walls.
    let (half, full) = (&first_frames[0], &first_frames[2]);
    let differing = half
        .chunks_exact(4)
        .zip(full.chunks_exact(4))
        .filter(|(p, q)| (0..3).any(|c| p[c].abs_diff(q[c]) > 48))
        .count() as f64
        / (320.0 * 240.0);
    eprintln!(
        "half against full scale: {:.2}% of pixels differ",
        100.0 * differing
    );
    assert!(
        differing < 0.05,
        "{:.2}% of pixels differ",
        100.0 * differing
    );
}

/// The app's recorder (`gui --record`, the same as F9) in a real window under Xvfb:
/// 2 s at 30 fps gives exactly 60 frames at the requested size (not the 3D view's size
/// in the window, 800x600 minus the panels), and the app's lockstep gives the same
/// pictures as the headless `record` of the same scene, camera and quality: frame k
/// shows the world at simulated time k/30 s in both.
#[test]
fn app_records_duration_times_fps_frames_at_the_requested_size() {
    let Some(xvfb) = ["/usr/bin/xvfb-run", "/usr/local/bin/xvfb-run"]
        .iter()
        .map(Path::new)
        .find(|p| p.exists())
    else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install xvfb (see .ci/run)"
        );
        eprintln!("SKIPPED: xvfb-run not found; install xvfb and mesa-vulkan-drivers");
        return;
    };
    if !vulkan_available() {
        return;
    }
    let dir = out_dir("app");
    let path = dir.join("app.mp4");
    let start = Instant::now();
    let out = Command::new(xvfb)
        .args(["-a", "-s", "-screen 0 800x600x24"])
        .arg(env!("CARGO_BIN_EXE_impulse-lab"))
        .args([
            "gui",
            SCENE,
            "--size",
            "800x600",
            "--quality",
            "fast",
            "--record-size",
            "320x240",
            "--record-fps",
            "30",
            "--record-duration",
            "2",
            // The exit waits for the recording to finish.
            "--exit-after-frames",
            "1",
        ])
        .arg("--record")
        .arg(&path)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("WGPU_BACKEND", "vulkan")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "app failed ({}):\n{log}", out.status);
    eprintln!("app recorded in {:.1} s", start.elapsed().as_secs_f64());
    let (info, frames) = decode_mp4(&path);
    eprintln!(
        "{}: {}x{}, {} samples, {:.3} s",
        path.display(),
        info.width,
        info.height,
        info.samples,
        info.duration
    );
    assert_eq!((info.width, info.height), (320, 240));
    assert_eq!(info.samples, 60, "2 s at 30 fps:\n{log}");
    assert_eq!(frames.len(), 60, "every sample decodes to a frame");
    // muxide stamps frame k at k/30 s: the video lasts 60/30 s.
    assert!((info.duration - 2.0).abs() < 1e-3, "{} s", info.duration);
    let last = frames.last().unwrap();
    write_png(&dir.join("last_frame.png"), 320, 240, last);
    let colours = distinct_colours(last);
    assert!(
        colours > 30,
        "the last frame looks blank: {colours} colours"
    );

    // The same recording headless.
    let headless_path = dir.join("record.mp4");
    let out = record(&[
        SCENE,
        "--out",
        headless_path.to_str().unwrap(),
        "--quality",
        "fast",
        "--size",
        "320x240",
        "--fps",
        "30",
        "--duration",
        "2",
    ]);
    assert!(out.status.success(), "record failed");
    let (_, reference) = decode_mp4(&headless_path);
    assert_eq!(reference.len(), 60);
    for k in [0, 30] {
        write_png(&dir.join(format!("app_{k}.png")), 320, 240, &frames[k]);
        write_png(
            &dir.join(format!("record_{k}.png")),
            320,
            240,
            &reference[k],
        );
    }
    // Per frame: the largest channel difference and the share of pixels differing by
    // more than 48 of 255. The ellipsoid crosses several of its own widths per frame
    // interval while it falls, so a frame a step or more out of time differs in a
    // body-sized patch (about 1 % of the picture); the same world differs only by the
    // encoder's rounding.
    let mut worst = 0.0f64;
    for (k, (a, b)) in frames.iter().zip(&reference).enumerate() {
        let differing = a
            .chunks_exact(4)
            .zip(b.chunks_exact(4))
            .filter(|(p, q)| (0..3).any(|c| p[c].abs_diff(q[c]) > 48))
            .count() as f64
            / (320.0 * 240.0);
        if differing > worst {
            eprintln!("frame {k}: {:.3}% of pixels differ", 100.0 * differing);
            worst = differing;
        }
    }
    assert!(
        worst < 0.002,
        "the app's frames are not record's: up to {:.2}% of pixels differ",
        100.0 * worst
    );
}

/// `record --caption`: the caption changes pixels in a band at the bottom-left and
/// nowhere else (frame 0, the world before any step, rendered twice as PNG: lossless).
#[test]
fn caption_changes_only_its_band() {
    if !vulkan_available() {
        return;
    }
    let dir = out_dir("caption");
    let frame0 = |name: &str, extra: &[&str]| {
        let frames = dir.join(name);
        let mut args = vec![
            SCENE,
            "--out",
            frames.to_str().unwrap(),
            "--format",
            "png",
            "--size",
            "640x360",
            "--fps",
            "10",
            "--duration",
            "0.1",
        ];
        args.extend_from_slice(extra);
        let out = record(&args);
        assert!(out.status.success(), "record failed");
        let decoder = png::Decoder::new(std::io::BufReader::new(
            std::fs::File::open(frames.join("frame_00000.png")).unwrap(),
        ));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height), (640, 360));
        buf.truncate(info.buffer_size());
        (buf, info.color_type.samples())
    };
    let (plain, n) = frame0("plain", &[]);
    let (captioned, _) = frame0("captioned", &["--caption"]);
    let (mut x0, mut y0, mut x1, mut y1) = (u32::MAX, u32::MAX, 0, 0);
    let mut differing = 0;
    for (i, (p, q)) in plain
        .chunks_exact(n)
        .zip(captioned.chunks_exact(n))
        .enumerate()
    {
        if p != q {
            let (x, y) = (i as u32 % 640, i as u32 / 640);
            (x0, y0, x1, y1) = (x0.min(x), y0.min(y), x1.max(x), y1.max(y));
            differing += 1;
        }
    }
    eprintln!("caption: {differing} pixels differ, in x {x0}..={x1}, y {y0}..={y1}");
    // The band: text 10 px high (360 / 36) in one line with 5 px padding and margin, so
    // at most 40 px from the bottom; its width follows the text.
    assert!(differing > 2000, "no caption: {differing} pixels differ");
    assert!(y0 >= 360 - 40 && y1 < 360, "caption rows {y0}..={y1}");
    assert!(x0 < 20 && x1 < 600, "caption columns {x0}..={x1}");
}

/// `impulse-lab repose --video-dir`: each run is also an MP4 that plays the experiment at
/// simulated real speed until the pile is measured (one 30 fps frame per 1/30 s, so
/// ⌈(packing + slumping) · 30⌉ + 1 frames at most, and at least the frames of that time),
/// and its CSV row is the row of the same sweep without video.
#[test]
fn repose_video_dir_records_each_run_and_keeps_its_row() {
    if !vulkan_available() {
        return;
    }
    let dir = out_dir("repose_video");
    let sweep = |extra: &[&str], csv: &Path| {
        let mut args = vec![
            "repose",
            "tests/fixtures/repose_tiny.ron",
            "--friction",
            "0.5",
            "--max-time",
            "0.4",
            "--jobs",
            "1",
            "--out",
            csv.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let out = headless(&args);
        assert!(out.status.success(), "repose failed");
        // Rows without the wall-clock column.
        std::fs::read_to_string(csv)
            .unwrap()
            .lines()
            .map(|l| l.rsplit_once(',').unwrap().0.to_string())
            .collect::<Vec<_>>()
    };
    let videos = dir.join("videos");
    let with = sweep(
        &["--video-dir", videos.to_str().unwrap()],
        &dir.join("with.csv"),
    );
    let without = sweep(&[], &dir.join("without.csv"));
    assert_eq!(with, without, "the video changed the run");
    let files: Vec<_> = std::fs::read_dir(&videos)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(files, ["repose_tiny_sqm_mu0.5_seed7.mp4"], "{files:?}");
    let header: Vec<&str> = with[0].split(',').collect();
    let row: Vec<&str> = with[1].split(',').collect();
    let col = |name: &str| -> f64 {
        row[header.iter().position(|h| *h == name).unwrap()]
            .parse()
            .unwrap()
    };
    let t = col("packing_s") + col("slumping_s");
    let (info, frames) = decode_mp4(&videos.join(&files[0]));
    assert_eq!((info.width, info.height), (960, 540));
    let n = f64::from(info.samples);
    assert!(
        n >= (t * 30.0).floor() && n <= (t * 30.0).ceil() + 1.0,
        "{n} frames for {t} s of experiment"
    );
    assert_eq!(frames.len(), info.samples as usize);
}
