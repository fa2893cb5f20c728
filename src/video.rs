//! Video encoders for recordings: MP4 (H.264), GIF and numbered PNG frames, behind one
//! small trait, [`FrameSink`]. Nothing here depends on Bevy: the encoders take tightly
//! packed 8-bit sRGB RGBA frames ([`Frame`]) from anywhere and are unit tested with
//! synthetic frames.
//!
//! - MP4: OpenH264 (Cisco's encoder, built from source by the `openh264` crate) turns
//!   each frame into an Annex B access unit; the pure-Rust `muxide` muxer writes them
//!   into an MP4 with a presentation time of `k / fps` for frame `k`, so the file lasts
//!   exactly `frames / fps` seconds. H.264 needs even dimensions (4:2:0 chroma);
//!   [`check_size`] rejects odd ones.
//! - GIF: each frame is quantised to its own 256-colour palette (NeuQuant). GIF delays
//!   are whole centiseconds; the delay of frame `k` is
//!   `round(100 (k+1) / fps) − round(100 k / fps)`, so the delays of a 30 fps recording
//!   alternate 3, 3, 4 cs and the total is `frames / fps` to within 5 ms.
//! - PNG: a directory of `frame_00000.png`, `frame_00001.png`, ... (RGB, 8 bits).
//!
//! [`ThreadedSink`] runs any sink on its own thread so that encoding overlaps rendering.

use crate::output::{OutputDir, OutputFile};
use std::fmt;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One picture: `width × height` pixels, RGBA, 8 bits per channel, sRGB, rows top to
/// bottom, no padding (`rgba.len() == 4 · width · height`).
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    pub width: u32,
    pub height: u32,
    pub rgba: Vec<u8>,
}

impl Frame {
    /// A frame filled with one colour.
    pub fn filled(width: u32, height: u32, rgba: [u8; 4]) -> Self {
        Frame {
            width,
            height,
            rgba: rgba.repeat((width * height) as usize),
        }
    }

    /// This frame stretched to `width × height` by bilinear interpolation, as a GPU's
    /// linear filter samples a texture: output pixel centre x + ½ maps to source
    /// position (x + ½)·w_src/w − ½, clamped to the edge pixels, and each channel is
    /// the weighted mean of the 2 × 2 nearest source pixels (weights in 1/256, on the
    /// sRGB-encoded bytes). The same size returns the frame unchanged.
    pub fn stretched(&self, width: u32, height: u32) -> Frame {
        if (width, height) == (self.width, self.height) {
            return self.clone();
        }
        if self.width == 0 || self.height == 0 || width == 0 || height == 0 {
            return Frame::filled(width, height, [0, 0, 0, 255]);
        }
        // Per output column or row: the two source indices and the second's weight.
        let taps = |n: u32, src: u32| -> Vec<(usize, usize, u32)> {
            let ratio = src as f64 / n as f64;
            (0..n)
                .map(|i| {
                    let p = ((i as f64 + 0.5) * ratio - 0.5).clamp(0.0, (src - 1) as f64);
                    let i0 = p.floor() as usize;
                    let i1 = (i0 + 1).min(src as usize - 1);
                    (i0, i1, ((p - i0 as f64) * 256.0).round() as u32)
                })
                .collect()
        };
        let (xs, ys) = (taps(width, self.width), taps(height, self.height));
        // Separable: each source row used is interpolated along x once (values in
        // 1/256), then each output row blends two such rows.
        let stride = 4 * self.width as usize;
        let horizontal = |y: usize, out: &mut Vec<u32>| {
            out.clear();
            let row = &self.rgba[y * stride..(y + 1) * stride];
            for &(x0, x1, w) in &xs {
                let (a, b) = (&row[4 * x0..4 * x0 + 4], &row[4 * x1..4 * x1 + 4]);
                for c in 0..4 {
                    out.push(u32::from(a[c]) * (256 - w) + u32::from(b[c]) * w);
                }
            }
        };
        let (mut upper, mut lower) = (Vec::new(), Vec::new());
        let (mut have_upper, mut have_lower) = (usize::MAX, usize::MAX);
        let mut rgba = vec![0u8; 4 * width as usize * height as usize];
        for (out, &(y0, y1, w)) in rgba.chunks_exact_mut(4 * width as usize).zip(&ys) {
            if have_upper != y0 {
                if have_lower == y0 {
                    std::mem::swap(&mut upper, &mut lower);
                    have_lower = usize::MAX;
                } else {
                    horizontal(y0, &mut upper);
                }
                have_upper = y0;
            }
            if have_lower != y1 {
                horizontal(y1, &mut lower);
                have_lower = y1;
            }
            for ((o, &a), &b) in out.iter_mut().zip(&upper).zip(&lower) {
                *o = ((a * (256 - w) + b * w + (1 << 15)) >> 16) as u8;
            }
        }
        Frame {
            width,
            height,
            rgba,
        }
    }
}

/// The container/codec of a recording.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VideoFormat {
    Mp4,
    Gif,
    /// A directory of numbered PNG files.
    Png,
}

impl VideoFormat {
    pub const ALL: [VideoFormat; 3] = [VideoFormat::Mp4, VideoFormat::Gif, VideoFormat::Png];

    pub fn name(self) -> &'static str {
        match self {
            VideoFormat::Mp4 => "mp4",
            VideoFormat::Gif => "gif",
            VideoFormat::Png => "png",
        }
    }

    /// `mp4`, `gif` or `png` (any case).
    pub fn parse(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown video format '{s}' (expected mp4, gif or png)"))
    }

    /// The format named by the path's extension. A path without an extension is a PNG
    /// frame directory.
    pub fn from_path(path: &Path) -> Result<Self, String> {
        match path.extension().and_then(|e| e.to_str()) {
            None => Ok(VideoFormat::Png),
            Some(ext) => Self::parse(ext).map_err(|_| {
                format!(
                    "{}: cannot tell the video format from the extension '.{ext}' \
                     (use .mp4, .gif, a directory for PNG frames, or --format)",
                    path.display()
                )
            }),
        }
    }
}

impl fmt::Display for VideoFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a recording could not be written.
#[derive(Debug)]
pub struct VideoError(pub String);

impl fmt::Display for VideoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for VideoError {}

fn err(context: impl fmt::Display, e: impl fmt::Display) -> VideoError {
    VideoError(format!("{context}: {e}"))
}

/// What a finished recording holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub path: PathBuf,
    pub format: VideoFormat,
    pub frames: u64,
    pub width: u32,
    pub height: u32,
    /// Playing time (s): frames / fps.
    pub duration: f64,
    /// Time spent encoding and writing (measured by [`ThreadedSink`]; zero otherwise).
    pub encode_time: Duration,
}

/// Receives the frames of one recording, in order, all of the size it was created with.
pub trait FrameSink: Send {
    /// Encode and write one frame.
    fn push(&mut self, frame: &Frame) -> Result<(), VideoError>;
    /// Write what is left and close the file(s).
    fn finish(self: Box<Self>) -> Result<Summary, VideoError>;
}

/// Check a frame size for `format`: at least 2×2, and even for MP4 (H.264 4:2:0).
pub fn check_size(format: VideoFormat, width: u32, height: u32) -> Result<(), String> {
    if width < 2 || height < 2 {
        return Err(format!("frame size {width}x{height} is too small"));
    }
    if format == VideoFormat::Mp4 && (!width.is_multiple_of(2) || !height.is_multiple_of(2)) {
        return Err(format!(
            "MP4 (H.264) needs an even width and height, got {width}x{height}"
        ));
    }
    Ok(())
}

/// Check a frame rate: finite and positive (and at most 1000).
pub fn check_fps(fps: f64) -> Result<(), String> {
    if fps.is_finite() && fps > 0.0 && fps <= 1000.0 {
        Ok(())
    } else {
        Err(format!(
            "frame rate must be a number above 0 and at most 1000, got {fps}"
        ))
    }
}

/// Make sure `path` can be written as a recording of `format` without writing a frame:
/// a file's directory must exist and accept a temporary file; a PNG directory's parent
/// must, and an existing directory there may hold only the frames of an earlier
/// recording. Nothing is left behind (see [`crate::output`]).
pub fn check_output(path: &Path, format: VideoFormat) -> Result<(), String> {
    let fail =
        |e: &dyn fmt::Display| format!("{}: cannot write the recording: {e}", path.display());
    match format {
        VideoFormat::Mp4 | VideoFormat::Gif => {
            OutputFile::create(path).map(drop).map_err(|e| fail(&e.why))
        }
        VideoFormat::Png => OutputDir::create(path, is_png_frame_name)
            .map(drop)
            .map_err(|e| fail(&e.why)),
    }
}

/// Whether `name` is a frame file name of [`png_frame_name`] (`frame_NNNNN.png`).
pub fn is_png_frame_name(name: &str) -> bool {
    name.len() == "frame_00000.png".len()
        && name.starts_with("frame_")
        && name.ends_with(".png")
        && name[6..11].bytes().all(|b| b.is_ascii_digit())
}

/// An encoder for `format` writing to `path`, for frames of `width × height` at `fps`.
pub fn create_sink(
    format: VideoFormat,
    path: &Path,
    width: u32,
    height: u32,
    fps: f64,
) -> Result<Box<dyn FrameSink>, VideoError> {
    check_size(format, width, height).map_err(VideoError)?;
    check_fps(fps).map_err(VideoError)?;
    Ok(match format {
        VideoFormat::Mp4 => Box::new(Mp4Sink::create(path, width, height, fps)?),
        VideoFormat::Gif => Box::new(GifSink::create(path, width, height, fps)?),
        VideoFormat::Png => Box::new(PngSink::create(path, width, height, fps)?),
    })
}

fn check_frame(frame: &Frame, width: u32, height: u32) -> Result<(), VideoError> {
    if frame.width != width || frame.height != height {
        return Err(VideoError(format!(
            "frame of {}x{} in a {width}x{height} recording",
            frame.width, frame.height
        )));
    }
    if frame.rgba.len() != 4 * (width as usize) * (height as usize) {
        return Err(VideoError(format!(
            "frame data of {} bytes for {width}x{height} RGBA",
            frame.rgba.len()
        )));
    }
    Ok(())
}

/// H.264 in MP4 (see the module doc).
pub struct Mp4Sink {
    path: PathBuf,
    width: u32,
    height: u32,
    fps: f64,
    frames: u64,
    encoder: openh264::encoder::Encoder,
    yuv: openh264::formats::YUVBuffer,
    muxer: muxide::api::Muxer<OutputFile>,
}

// SAFETY: the OpenH264 encoder holds raw pointers to its C++ instance, which has no
// thread affinity; the sink is used by one thread at a time (moved into the encoding
// thread of `ThreadedSink`, never shared).
unsafe impl Send for Mp4Sink {}

impl Mp4Sink {
    pub fn create(path: &Path, width: u32, height: u32, fps: f64) -> Result<Self, VideoError> {
        use openh264::encoder::{
            BitRate, Encoder, EncoderConfig, FrameRate, IntraFramePeriod, RateControlMode,
        };
        // About 0.15 bit per pixel per frame: 1280x720 at 30 fps is 4 Mbit/s, sharp for
        // flat-shaded bodies.
        let bps = (0.15 * f64::from(width) * f64::from(height) * fps).clamp(2e5, 5e7) as u32;
        let config = EncoderConfig::new()
            .bitrate(BitRate::from_bps(bps))
            .max_frame_rate(FrameRate::from_hz(fps as f32))
            .rate_control_mode(RateControlMode::Bitrate)
            // Every frame must be encoded: a skipped frame would leave a hole in time.
            .skip_frames(false)
            // A key frame every two seconds, for seeking.
            .intra_frame_period(IntraFramePeriod::from_num_frames(
                (2.0 * fps).round().max(1.0) as u32,
            ));
        let encoder = Encoder::with_api_config(openh264::OpenH264API::from_source(), config)
            .map_err(|e| err("H.264 encoder", e))?;
        let file = OutputFile::create(path).map_err(|e| VideoError(e.to_string()))?;
        let muxer = muxide::api::MuxerBuilder::new(file)
            .video(muxide::api::VideoCodec::H264, width, height, fps)
            .build()
            .map_err(|e| err(path.display(), e))?;
        Ok(Mp4Sink {
            path: path.to_path_buf(),
            width,
            height,
            fps,
            frames: 0,
            encoder,
            yuv: openh264::formats::YUVBuffer::new(width as usize, height as usize),
            muxer,
        })
    }
}

impl FrameSink for Mp4Sink {
    fn push(&mut self, frame: &Frame) -> Result<(), VideoError> {
        check_frame(frame, self.width, self.height)?;
        let dims = (self.width as usize, self.height as usize);
        self.yuv
            .read_rgba8(openh264::formats::RgbaSliceU8::new(&frame.rgba, dims));
        let timestamp =
            openh264::Timestamp::from_millis((self.frames as f64 * 1e3 / self.fps) as u64);
        let bitstream = self
            .encoder
            .encode_at(&self.yuv, timestamp)
            .map_err(|e| err("H.264 encoder", e))?;
        let keyframe = matches!(
            bitstream.frame_type(),
            openh264::encoder::FrameType::IDR | openh264::encoder::FrameType::I
        );
        let data = bitstream.to_vec();
        if data.is_empty() {
            return Err(VideoError(format!(
                "H.264 encoder produced nothing for frame {}",
                self.frames
            )));
        }
        let pts = self.frames as f64 / self.fps;
        self.muxer
            .write_video(pts, &data, keyframe)
            .map_err(|e| err(self.path.display(), e))?;
        self.frames += 1;
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<Summary, VideoError> {
        let s = *self;
        if s.frames == 0 {
            return Err(VideoError(format!(
                "{}: no frames were recorded",
                s.path.display()
            )));
        }
        let mut muxer = s.muxer;
        muxer
            .finish_in_place()
            .map_err(|e| err(s.path.display(), e))?;
        muxer
            .into_writer()
            .commit()
            .map_err(|e| VideoError(e.to_string()))?;
        Ok(Summary {
            path: s.path,
            format: VideoFormat::Mp4,
            frames: s.frames,
            width: s.width,
            height: s.height,
            duration: s.frames as f64 / s.fps,
            encode_time: Duration::ZERO,
        })
    }
}

/// Centiseconds GIF frame `k` is shown for at `fps` (see the module doc).
pub fn gif_delay(k: u64, fps: f64) -> u16 {
    let at = |k: u64| (100.0 * k as f64 / fps).round();
    (at(k + 1) - at(k)).clamp(1.0, f64::from(u16::MAX)) as u16
}

/// Animated GIF, one palette per frame.
pub struct GifSink {
    path: PathBuf,
    width: u32,
    height: u32,
    fps: f64,
    frames: u64,
    encoder: gif::Encoder<OutputFile>,
}

impl GifSink {
    pub fn create(path: &Path, width: u32, height: u32, fps: f64) -> Result<Self, VideoError> {
        let (w, h) = (
            u16::try_from(width).map_err(|_| VideoError(format!("GIF width {width} > 65535")))?,
            u16::try_from(height)
                .map_err(|_| VideoError(format!("GIF height {height} > 65535")))?,
        );
        let file = OutputFile::create(path).map_err(|e| VideoError(e.to_string()))?;
        let mut encoder = gif::Encoder::new(file, w, h, &[]).map_err(|e| err(path.display(), e))?;
        encoder
            .set_repeat(gif::Repeat::Infinite)
            .map_err(|e| err(path.display(), e))?;
        Ok(GifSink {
            path: path.to_path_buf(),
            width,
            height,
            fps,
            frames: 0,
            encoder,
        })
    }
}

impl FrameSink for GifSink {
    fn push(&mut self, frame: &Frame) -> Result<(), VideoError> {
        check_frame(frame, self.width, self.height)?;
        let mut rgba = frame.rgba.clone();
        // Opaque: no transparency index in the palette.
        for px in rgba.chunks_exact_mut(4) {
            px[3] = 255;
        }
        // Speed 10: NeuQuant's sampling factor, a good balance of speed and quality.
        let mut f =
            gif::Frame::from_rgba_speed(self.width as u16, self.height as u16, &mut rgba, 10);
        f.delay = gif_delay(self.frames, self.fps);
        self.encoder
            .write_frame(&f)
            .map_err(|e| err(self.path.display(), e))?;
        self.frames += 1;
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<Summary, VideoError> {
        let s = *self;
        s.encoder
            .into_inner()
            .map_err(|e| err(s.path.display(), e))?
            .commit()
            .map_err(|e| VideoError(e.to_string()))?;
        Ok(Summary {
            path: s.path,
            format: VideoFormat::Gif,
            frames: s.frames,
            width: s.width,
            height: s.height,
            duration: s.frames as f64 / s.fps,
            encode_time: Duration::ZERO,
        })
    }
}

/// The file name of PNG frame `k`.
pub fn png_frame_name(k: u64) -> String {
    format!("frame_{k:05}.png")
}

/// A directory of numbered PNG frames, filled under a temporary sibling name and renamed
/// into place whole when finished ([`OutputDir`]); it replaces a directory holding only
/// an earlier recording's frames (`frame_NNNNN.png`), so the directory holds exactly
/// this recording.
pub struct PngSink {
    out: OutputDir,
    width: u32,
    height: u32,
    fps: f64,
    frames: u64,
}

impl PngSink {
    pub fn create(dir: &Path, width: u32, height: u32, fps: f64) -> Result<Self, VideoError> {
        let out =
            OutputDir::create(dir, is_png_frame_name).map_err(|e| VideoError(e.to_string()))?;
        Ok(PngSink {
            out,
            width,
            height,
            fps,
            frames: 0,
        })
    }
}

impl FrameSink for PngSink {
    fn push(&mut self, frame: &Frame) -> Result<(), VideoError> {
        check_frame(frame, self.width, self.height)?;
        let path = self.out.dir().join(png_frame_name(self.frames));
        let file = File::create(&path).map_err(|e| err(path.display(), e))?;
        let mut encoder = png::Encoder::new(BufWriter::new(file), self.width, self.height);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_compression(png::Compression::Fast);
        encoder.set_source_srgb(png::SrgbRenderingIntent::Perceptual);
        let mut writer = encoder.write_header().map_err(|e| err(path.display(), e))?;
        let rgb: Vec<u8> = frame
            .rgba
            .chunks_exact(4)
            .flat_map(|px| [px[0], px[1], px[2]])
            .collect();
        writer
            .write_image_data(&rgb)
            .map_err(|e| err(path.display(), e))?;
        writer.finish().map_err(|e| err(path.display(), e))?;
        self.frames += 1;
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<Summary, VideoError> {
        let path = self.out.path().to_path_buf();
        self.out.commit().map_err(|e| VideoError(e.to_string()))?;
        Ok(Summary {
            path,
            format: VideoFormat::Png,
            frames: self.frames,
            width: self.width,
            height: self.height,
            duration: self.frames as f64 / self.fps,
            encode_time: Duration::ZERO,
        })
    }
}

/// Runs a sink on its own thread: [`ThreadedSink::push`] hands the frame over (waiting
/// only when `capacity` frames are already queued) so rendering and encoding overlap.
pub struct ThreadedSink {
    sender: Option<SyncSender<Frame>>,
    worker: Option<JoinHandle<Result<Summary, VideoError>>>,
    /// The first error the worker reported.
    error: Arc<Mutex<Option<String>>>,
}

impl ThreadedSink {
    pub fn spawn(mut sink: Box<dyn FrameSink>, capacity: usize) -> Self {
        let (sender, frames) = sync_channel::<Frame>(capacity.max(1));
        let error: Arc<Mutex<Option<String>>> = Arc::default();
        let reported = error.clone();
        let worker = std::thread::Builder::new()
            .name("impulse-lab-encoder".into())
            .spawn(move || {
                let mut failed = None;
                let mut busy = Duration::ZERO;
                for frame in frames {
                    let start = Instant::now();
                    if failed.is_none()
                        && let Err(e) = sink.push(&frame)
                    {
                        *reported.lock().unwrap() = Some(e.0.clone());
                        failed = Some(e);
                    }
                    busy += start.elapsed();
                }
                match failed {
                    Some(e) => Err(e),
                    None => {
                        let start = Instant::now();
                        let mut summary = sink.finish()?;
                        summary.encode_time = busy + start.elapsed();
                        Ok(summary)
                    }
                }
            })
            .expect("cannot start the encoder thread");
        ThreadedSink {
            sender: Some(sender),
            worker: Some(worker),
            error,
        }
    }

    /// Queue a frame. Fails once the encoder has failed.
    pub fn push(&mut self, frame: Frame) -> Result<(), VideoError> {
        if let Some(e) = self.error.lock().unwrap().clone() {
            self.sender = None;
            return Err(VideoError(e));
        }
        match &self.sender {
            Some(s) => s
                .send(frame)
                .map_err(|_| VideoError("the encoder thread stopped".into())),
            None => Err(VideoError("the recording has failed".into())),
        }
    }

    /// Encode the queued frames and close the file.
    pub fn finish(mut self) -> Result<Summary, VideoError> {
        self.join()
    }

    fn join(&mut self) -> Result<Summary, VideoError> {
        self.sender = None;
        match self.worker.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(VideoError("the encoder thread panicked".into())),
            None => Err(VideoError("the recording was already finished".into())),
        }
    }
}

/// The caption's font: the bundled DejaVu Sans (no system fonts needed; it has the
/// Greek letters of μ and λ).
const CAPTION_FONT: &[u8] = include_bytes!("../assets/fonts/DejaVuSans.ttf");

/// Where a caption of `lines` goes in a `width × height` frame: a band in the
/// bottom-left corner, `(x0, y0, x1, y1)` in pixels (x1, y1 exclusive). The text is
/// `height / 36` pixels high (20 px at 720 p, at least 12), with half that as margin.
pub fn caption_rect(width: u32, height: u32, lines: &[String]) -> (u32, u32, u32, u32) {
    let Ok(font) = ab_glyph::FontRef::try_from_slice(CAPTION_FONT) else {
        return (0, height, 0, height);
    };
    let layout = CaptionLayout::new(&font, height, lines);
    let w = (layout.text_width + 2.0 * layout.pad).ceil() as u32;
    let h = (lines.len() as f32 * layout.line_height + 2.0 * layout.pad).ceil() as u32;
    let (x0, y1) = (
        layout.margin as u32,
        height.saturating_sub(layout.margin as u32),
    );
    (x0.min(width), y1.saturating_sub(h), (x0 + w).min(width), y1)
}

struct CaptionLayout {
    scale: ab_glyph::PxScale,
    line_height: f32,
    ascent: f32,
    pad: f32,
    margin: f32,
    text_width: f32,
}

impl CaptionLayout {
    fn new(font: &ab_glyph::FontRef<'_>, height: u32, lines: &[String]) -> Self {
        use ab_glyph::{Font, ScaleFont};
        let px = (height as f32 / 36.0).max(12.0);
        let scale = ab_glyph::PxScale::from(px);
        let sf = font.as_scaled(scale);
        let text_width = lines.iter().map(|l| line_width(&sf, l)).fold(0.0, f32::max);
        CaptionLayout {
            scale,
            line_height: sf.height() + sf.line_gap(),
            ascent: sf.ascent(),
            pad: 0.5 * px,
            margin: 0.5 * px,
            text_width,
        }
    }
}

fn line_width<F: ab_glyph::Font, S: ab_glyph::ScaleFont<F>>(sf: &S, line: &str) -> f32 {
    let mut w = 0.0;
    let mut prev = None;
    for c in line.chars() {
        let id = sf.glyph_id(c);
        if let Some(p) = prev {
            w += sf.kern(p, id);
        }
        w += sf.h_advance(id);
        prev = Some(id);
    }
    w
}

/// Draw `lines` of white text on a translucent dark band (65 % black) in the
/// bottom-left corner of `frame` ([`caption_rect`]); nothing outside the band changes.
pub fn draw_caption(frame: &mut Frame, lines: &[String]) -> Result<(), String> {
    use ab_glyph::{Font, ScaleFont};
    if lines.is_empty() {
        return Ok(());
    }
    let font = ab_glyph::FontRef::try_from_slice(CAPTION_FONT)
        .map_err(|_| "the bundled font DejaVuSans.ttf cannot be read".to_string())?;
    let layout = CaptionLayout::new(&font, frame.height, lines);
    let (x0, y0, x1, y1) = caption_rect(frame.width, frame.height, lines);
    let width = frame.width as usize;
    for y in y0..y1 {
        for x in x0..x1 {
            let i = 4 * (y as usize * width + x as usize);
            for c in &mut frame.rgba[i..i + 3] {
                *c = (f32::from(*c) * 0.35).round() as u8;
            }
        }
    }
    let sf = font.as_scaled(layout.scale);
    for (k, line) in lines.iter().enumerate() {
        let baseline = y0 as f32 + layout.pad + layout.ascent + k as f32 * layout.line_height;
        let mut x = x0 as f32 + layout.pad;
        let mut prev = None;
        for c in line.chars() {
            let id = sf.glyph_id(c);
            if let Some(p) = prev {
                x += sf.kern(p, id);
            }
            prev = Some(id);
            let glyph = id.with_scale_and_position(layout.scale, ab_glyph::point(x, baseline));
            x += sf.h_advance(id);
            let Some(outline) = font.outline_glyph(glyph) else {
                continue;
            };
            let b = outline.px_bounds();
            outline.draw(|gx, gy, coverage| {
                let px = b.min.x as i64 + i64::from(gx);
                let py = b.min.y as i64 + i64::from(gy);
                // Only inside the band: the caption never touches the rest of the frame.
                if px < i64::from(x0)
                    || px >= i64::from(x1)
                    || py < i64::from(y0)
                    || py >= i64::from(y1)
                {
                    return;
                }
                let i = 4 * (py as usize * width + px as usize);
                let a = coverage.clamp(0.0, 1.0);
                for c in &mut frame.rgba[i..i + 3] {
                    *c = (f32::from(*c) * (1.0 - a) + 255.0 * a).round() as u8;
                }
            });
        }
    }
    Ok(())
}

/// A sink dropped without [`ThreadedSink::finish`] (the app closed while recording)
/// still finishes its file.
impl Drop for ThreadedSink {
    fn drop(&mut self) {
        if self.worker.is_some()
            && let Err(e) = self.join()
        {
            eprintln!("impulse-lab: recording: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stretching a 2-pixel ramp 0 → 255 to 4 pixels samples it at source positions
    /// −¼ (clamped to 0), ¼, ¾ and 1¼ (clamped to 1): 0, ¼·255, ¾·255, 255; rows are
    /// interpolated the same way, and the same size is a copy.
    #[test]
    fn stretched_is_bilinear_with_pixel_centres() {
        let mut src = Frame::filled(2, 2, [0, 0, 0, 255]);
        for y in 0..2 {
            src.rgba[4 * (2 * y + 1)..4 * (2 * y + 1) + 3].copy_from_slice(&[255, 255, 255]);
        }
        let out = src.stretched(4, 4);
        assert_eq!((out.width, out.height), (4, 4));
        for y in 0..4 {
            let row: Vec<u8> = (0..4).map(|x| out.rgba[4 * (4 * y + x)]).collect();
            // 255 · 64/256 = 63.75 and 255 · 192/256 = 191.25, rounded.
            assert_eq!(row, [0, 64, 191, 255], "row {y}");
            assert!((0..4).all(|x| out.rgba[4 * (4 * y + x) + 3] == 255));
        }
        // Vertically: a 1-pixel-wide column 0 over 255 stretched to height 4.
        let mut col = Frame::filled(1, 2, [0, 0, 0, 255]);
        col.rgba[4..7].copy_from_slice(&[255, 255, 255]);
        let out = col.stretched(1, 4);
        let column: Vec<u8> = (0..4).map(|y| out.rgba[4 * y]).collect();
        assert_eq!(column, [0, 64, 191, 255]);
        assert_eq!(src.stretched(2, 2), src);
        // A uniform picture stays uniform at any size.
        let grey = Frame::filled(3, 5, [90, 120, 200, 255]);
        assert_eq!(
            grey.stretched(8, 7),
            Frame::filled(8, 7, [90, 120, 200, 255])
        );
    }

    /// A moving gradient with a bright square: every frame differs.
    fn synthetic(width: u32, height: u32, k: u32) -> Frame {
        let mut rgba = Vec::with_capacity((4 * width * height) as usize);
        for y in 0..height {
            for x in 0..width {
                let inside = (x + 3 * k) % width < width / 4 && y > height / 3 && y < height / 2;
                if inside {
                    rgba.extend_from_slice(&[250, 40, 40, 255]);
                } else {
                    rgba.extend_from_slice(&[
                        (255 * x / width) as u8,
                        (255 * y / height) as u8,
                        (40 + 8 * k) as u8,
                        255,
                    ]);
                }
            }
        }
        Frame {
            width,
            height,
            rgba,
        }
    }

    /// The caption draws inside [`caption_rect`] only: its band is darkened (65 %
    /// black) and carries white text; a longer line gives a wider band.
    #[test]
    fn caption_stays_in_its_band_and_draws_text() {
        let lines = vec!["t = 1.000 s   ETM   e = 0.50   μ = 0.30   λ = 30".to_string()];
        let (x0, y0, x1, y1) = caption_rect(1280, 720, &lines);
        assert!(x0 < x1 && y0 < y1 && y1 <= 720 && x1 <= 1280);
        // 20 px text with 10 px padding: a band about 43 px high at the bottom.
        assert!((30..=60).contains(&(y1 - y0)), "band {y0}..{y1}");
        let longer = vec![format!("{}   repose: slumping", lines[0])];
        assert!(caption_rect(1280, 720, &longer).2 > x1);
        let plain = Frame::filled(1280, 720, [200, 200, 200, 255]);
        let mut f = plain.clone();
        draw_caption(&mut f, &lines).unwrap();
        let (mut dark, mut white) = (0, 0);
        for (i, (p, q)) in plain
            .rgba
            .chunks_exact(4)
            .zip(f.rgba.chunks_exact(4))
            .enumerate()
        {
            let (x, y) = (i as u32 % 1280, i as u32 / 1280);
            let inside = (x0..x1).contains(&x) && (y0..y1).contains(&y);
            if !inside {
                assert_eq!(p, q, "pixel ({x}, {y}) outside the band changed");
                continue;
            }
            // 200 · 0.35 = 70: the band; text (antialiased) is lighter, up to white.
            match q[0] {
                70 => dark += 1,
                71..=255 => white += 1,
                _ => {}
            }
        }
        assert!(
            // Some 40 glyphs of 20 px, each covering dozens of pixels at least partly.
            dark > 10_000 && white > 1_000,
            "{dark} band, {white} text pixels"
        );
    }

    #[test]
    fn format_from_extension() {
        assert_eq!(
            VideoFormat::from_path(Path::new("a/b.MP4")),
            Ok(VideoFormat::Mp4)
        );
        assert_eq!(
            VideoFormat::from_path(Path::new("b.gif")),
            Ok(VideoFormat::Gif)
        );
        assert_eq!(
            VideoFormat::from_path(Path::new("frames")),
            Ok(VideoFormat::Png)
        );
        let e = VideoFormat::from_path(Path::new("x.avi")).unwrap_err();
        assert!(e.contains(".avi"), "{e}");
    }

    #[test]
    fn sizes_and_rates_are_checked() {
        assert!(check_size(VideoFormat::Mp4, 320, 240).is_ok());
        assert!(
            check_size(VideoFormat::Mp4, 321, 240)
                .unwrap_err()
                .contains("even")
        );
        assert!(check_size(VideoFormat::Gif, 321, 241).is_ok());
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(check_fps(bad).is_err(), "{bad}");
        }
        assert!(check_fps(29.97).is_ok());
    }

    #[test]
    fn gif_delays_add_up() {
        let delays: Vec<u16> = (0..30).map(|k| gif_delay(k, 30.0)).collect();
        assert_eq!(delays.iter().map(|&d| u32::from(d)).sum::<u32>(), 100);
        assert!(delays.iter().all(|&d| d == 3 || d == 4), "{delays:?}");
        assert!((0..10).all(|k| gif_delay(k, 10.0) == 10));
    }

    #[test]
    fn unwritable_output_is_refused_without_creating_anything() {
        let e = check_output(Path::new("/nonexistent/dir/x.mp4"), VideoFormat::Mp4).unwrap_err();
        assert!(e.contains("/nonexistent/dir/x.mp4"), "{e}");
        assert!(check_output(Path::new("/nonexistent/dir/frames"), VideoFormat::Png).is_err());
        assert!(!Path::new("/nonexistent").exists());
    }

    #[test]
    fn mp4_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.mp4");
        let (w, h, n) = (64u32, 48u32, 12u32);
        let mut sink = create_sink(VideoFormat::Mp4, &path, w, h, 12.0).unwrap();
        for k in 0..n {
            sink.push(&synthetic(w, h, k)).unwrap();
        }
        let summary = sink.finish().unwrap();
        assert_eq!(summary.frames, u64::from(n));
        assert!((summary.duration - 1.0).abs() < 1e-9);

        let (info, frames) = decode_mp4(&path);
        assert_eq!((info.width, info.height), (w, h));
        assert_eq!(info.samples, n);
        assert!((info.duration - 1.0).abs() < 1e-6, "{}", info.duration);
        assert_eq!(frames.len(), n as usize);
        // The red square of the last frame is where it was drawn (x from 33 to 48).
        let last = frames.last().unwrap();
        let px = |x: u32, y: u32| &last[(4 * (y * w + x)) as usize..][..3];
        assert!(
            px(40, 20)[0] > 180 && px(40, 20)[1] < 110,
            "{:?}",
            px(40, 20)
        );
        assert!(px(10, 20)[0] < 110, "{:?}", px(10, 20));
    }

    pub struct Mp4Info {
        pub width: u32,
        pub height: u32,
        pub samples: u32,
        pub duration: f64,
    }

    /// Demux with the `mp4` crate (not the muxer that wrote the file) and decode every
    /// sample with OpenH264's decoder; the frames come back as RGBA.
    pub fn decode_mp4(path: &Path) -> (Mp4Info, Vec<Vec<u8>>) {
        let bytes = std::fs::read(path).unwrap();
        let mut mp4 =
            ::mp4::Mp4Reader::read_header(std::io::Cursor::new(&bytes), bytes.len() as u64)
                .unwrap();
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
        for k in 1..=info.samples {
            let sample = mp4.read_sample(id, k).unwrap().unwrap();
            let mut data = &sample.bytes[..];
            while data.len() >= 4 {
                let len = u32::from_be_bytes(data[..4].try_into().unwrap()) as usize;
                stream.extend(annex_b(&data[4..4 + len]));
                data = &data[4 + len..];
            }
            if let Some(yuv) = decoder.decode(&stream).unwrap() {
                use openh264::formats::YUVSource;
                let (dw, dh) = yuv.dimensions();
                assert_eq!((dw as u32, dh as u32), (info.width, info.height));
                let mut rgba = vec![0; dw * dh * 4];
                yuv.write_rgba8(&mut rgba);
                frames.push(rgba);
            }
            stream.clear();
        }
        for yuv in decoder.flush_remaining().unwrap() {
            use openh264::formats::YUVSource;
            let (dw, dh) = yuv.dimensions();
            let mut rgba = vec![0; dw * dh * 4];
            yuv.write_rgba8(&mut rgba);
            frames.push(rgba);
        }
        (info, frames)
    }

    #[test]
    fn mp4_rejects_frames_of_the_wrong_size() {
        let dir = tempfile::tempdir().unwrap();
        let mut sink =
            create_sink(VideoFormat::Mp4, &dir.path().join("t.mp4"), 64, 48, 10.0).unwrap();
        assert!(sink.push(&Frame::filled(32, 48, [0, 0, 0, 255])).is_err());
    }

    #[test]
    fn gif_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.gif");
        let (w, h) = (40u32, 30u32);
        let mut sink =
            ThreadedSink::spawn(create_sink(VideoFormat::Gif, &path, w, h, 30.0).unwrap(), 2);
        for k in 0..6 {
            sink.push(synthetic(w, h, k)).unwrap();
        }
        let summary = sink.finish().unwrap();
        assert_eq!(summary.frames, 6);
        let mut options = gif::DecodeOptions::new();
        options.set_color_output(gif::ColorOutput::RGBA);
        let mut decoder = options.read_info(File::open(&path).unwrap()).unwrap();
        assert_eq!((decoder.width(), decoder.height()), (w as u16, h as u16));
        let mut delays = Vec::new();
        let mut last = Vec::new();
        while let Some(f) = decoder.read_next_frame().unwrap() {
            delays.push(f.delay);
            last = f.buffer.to_vec();
        }
        assert_eq!(delays, vec![3, 4, 3, 3, 4, 3]);
        // The red square survives quantisation.
        let red = last
            .chunks_exact(4)
            .filter(|p| p[0] > 200 && p[1] < 90 && p[2] < 90)
            .count();
        assert!(red > 20, "{red} red pixels");
    }

    #[test]
    fn png_frames() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("frames");
        check_output(&out, VideoFormat::Png).unwrap();
        assert!(!out.exists(), "the check leaves nothing behind");
        // A stale frame of an earlier, longer recording is removed.
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join(png_frame_name(7)), b"old").unwrap();
        let mut sink = create_sink(VideoFormat::Png, &out, 20, 10, 5.0).unwrap();
        for k in 0..3 {
            sink.push(&synthetic(20, 10, k)).unwrap();
        }
        assert_eq!(sink.finish().unwrap().frames, 3);
        let mut names: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["frame_00000.png", "frame_00001.png", "frame_00002.png"]
        );
        let decoder = png::Decoder::new(std::io::BufReader::new(
            File::open(out.join("frame_00002.png")).unwrap(),
        ));
        let reader = decoder.read_info().unwrap();
        assert_eq!((reader.info().width, reader.info().height), (20, 10));
    }
}
