//! `run --vtk-dir`: the .pvd series and every .vtu parse back with a strict XML reader,
//! have one point per body and the documented fields, and hold the world's state at
//! their frame (compared with `--final-state` of runs stopped at those steps).

use std::path::Path;
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_impulse-lab"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .expect("binary runs")
}

fn ok(o: &Output) {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

const SCENE: &str = "rods_and_tetrahedra";

/// A data array's name, component count and values (numbers, as f64).
struct Array {
    components: usize,
    values: Vec<f64>,
}

fn arrays(node: roxmltree::Node) -> Vec<(String, Array)> {
    node.children()
        .filter(|n| n.has_tag_name("DataArray"))
        .map(|n| {
            assert_eq!(n.attribute("format"), Some("ascii"));
            let values = n
                .text()
                .unwrap_or("")
                .split_whitespace()
                .map(|x| x.parse::<f64>().expect("a number"))
                .collect();
            let components = n
                .attribute("NumberOfComponents")
                .map_or(1, |c| c.parse().unwrap());
            (
                n.attribute("Name").unwrap().to_string(),
                Array { components, values },
            )
        })
        .collect()
}

fn child<'a, 'i>(node: roxmltree::Node<'a, 'i>, tag: &str) -> roxmltree::Node<'a, 'i> {
    node.children()
        .find(|n| n.has_tag_name(tag))
        .unwrap_or_else(|| panic!("no <{tag}> in <{}>", node.tag_name().name()))
}

fn get<'a>(arrays: &'a [(String, Array)], name: &str) -> &'a Array {
    &arrays
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no array {name}"))
        .1
}

/// The state `--final-state` writes after `steps` steps.
fn state_after(steps: u64, dir: &Path) -> serde_json::Value {
    let f = dir.join(format!("state{steps}.json"));
    ok(&run(&[
        "run",
        SCENE,
        "--steps",
        &steps.to_string(),
        "--final-state",
        f.to_str().unwrap(),
    ]));
    serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap()
}

#[test]
fn the_series_reads_back_with_the_worlds_state() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("vtk");
    ok(&run(&[
        "run",
        SCENE,
        "--steps",
        "7",
        "--vtk-dir",
        dir.to_str().unwrap(),
        "--vtk-every",
        "3",
    ]));
    // Frames at steps 0, 3, 6 and the last step, 7.
    let pvd = std::fs::read_to_string(dir.join("bodies.pvd")).unwrap();
    let pvd = roxmltree::Document::parse(&pvd).unwrap();
    assert_eq!(pvd.root_element().attribute("type"), Some("Collection"));
    let sets: Vec<(f64, String)> = child(pvd.root_element(), "Collection")
        .children()
        .filter(|n| n.has_tag_name("DataSet"))
        .map(|n| {
            (
                n.attribute("timestep").unwrap().parse().unwrap(),
                n.attribute("file").unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(sets.len(), 4, "{sets:?}");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut expected: Vec<String> = sets.iter().map(|(_, f)| f.clone()).collect();
    expected.extend(["bodies.pvd".into(), "containers.vtu".into()]);
    expected.sort();
    assert_eq!(
        names, expected,
        "exactly the files the .pvd names, and the containers"
    );

    for ((time, file), steps) in sets.iter().zip([0u64, 3, 6, 7]) {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        let doc = roxmltree::Document::parse(&text).unwrap();
        let root = doc.root_element();
        assert_eq!(root.attribute("type"), Some("UnstructuredGrid"));
        let grid = child(root, "UnstructuredGrid");
        let field = arrays(child(grid, "FieldData"));
        assert_eq!(get(&field, "TimeValue").values, [*time]);
        assert_eq!(get(&field, "step").values, [steps as f64]);
        // The shape-name table: NUL-terminated strings as bytes.
        let bytes: Vec<u8> = get(&field, "shape_names")
            .values
            .iter()
            .map(|b| *b as u8)
            .collect();
        let shape_names: Vec<String> = bytes
            .split(|b| *b == 0)
            .filter(|s| !s.is_empty())
            .map(|s| String::from_utf8(s.to_vec()).unwrap())
            .collect();
        assert_eq!(shape_names, impulse_lab::vtk::SHAPE_NAMES);

        let piece = child(grid, "Piece");
        let state = state_after(steps, tmp.path());
        let bodies = state["bodies"].as_array().unwrap();
        let n: usize = piece.attribute("NumberOfPoints").unwrap().parse().unwrap();
        assert_eq!(n, bodies.len(), "one point per body");
        assert!(n > 10);
        let points = arrays(child(piece, "Points"));
        let data = arrays(child(piece, "PointData"));
        for (name, comps) in [
            ("id", 1),
            ("velocity", 3),
            ("angular_velocity", 3),
            ("orientation", 4),
            ("rotation", 9),
            ("shape", 1),
            ("size", 3),
            ("radius", 1),
            ("mass", 1),
        ] {
            let a = get(&data, name);
            assert_eq!(a.components, comps, "{name}");
            assert_eq!(a.values.len(), n * comps, "{name}");
        }
        let cells = arrays(child(piece, "Cells"));
        assert_eq!(
            get(&cells, "types").values,
            vec![1.0; n],
            "a vertex per body"
        );
        let positions = &points[0].1;
        assert_eq!(positions.components, 3);
        let q = get(&data, "orientation");
        let r = get(&data, "rotation");
        for (k, b) in bodies.iter().enumerate() {
            let f = |key: &str| -> Vec<f64> {
                b[key]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_f64().unwrap())
                    .collect()
            };
            // Exactly the world's numbers: written and read back without rounding.
            assert_eq!(
                positions.values[3 * k..3 * k + 3],
                f("position"),
                "body {k}"
            );
            assert_eq!(
                get(&data, "velocity").values[3 * k..3 * k + 3],
                f("velocity")
            );
            assert_eq!(
                get(&data, "angular_velocity").values[3 * k..3 * k + 3],
                f("angular_velocity")
            );
            assert_eq!(q.values[4 * k..4 * k + 4], f("orientation"));
            assert_eq!(get(&data, "id").values[k], k as f64);
            let code = get(&data, "shape").values[k] as usize;
            assert_eq!(shape_names[code], b["shape"].as_str().unwrap(), "body {k}");
            // The rotation matrix is the quaternion's: its first column is R·x.
            let [w, x, y, z] = [
                q.values[4 * k],
                q.values[4 * k + 1],
                q.values[4 * k + 2],
                q.values[4 * k + 3],
            ];
            let col0 = [
                1.0 - 2.0 * (y * y + z * z),
                2.0 * (x * y + w * z),
                2.0 * (x * z - w * y),
            ];
            for (row, c) in col0.iter().enumerate() {
                assert!((r.values[9 * k + 3 * row] - c).abs() < 1e-12, "body {k}");
            }
            assert!(get(&data, "radius").values[k] > 0.0);
            assert!(get(&data, "mass").values[k] >= 0.0);
        }
    }

    // The containers: polygons whose offsets cover every point, each in a container.
    let text = std::fs::read_to_string(dir.join("containers.vtu")).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap();
    let piece = child(child(doc.root_element(), "UnstructuredGrid"), "Piece");
    let points: usize = piece.attribute("NumberOfPoints").unwrap().parse().unwrap();
    let ncells: usize = piece.attribute("NumberOfCells").unwrap().parse().unwrap();
    assert!(ncells >= 1);
    let cells = arrays(child(piece, "Cells"));
    assert_eq!(get(&cells, "types").values, vec![7.0; ncells], "polygons");
    assert_eq!(
        get(&cells, "offsets").values.last().copied(),
        Some(points as f64)
    );
    assert_eq!(get(&cells, "connectivity").values.len(), points);
    let container = &arrays(child(piece, "CellData"))[0];
    assert_eq!(container.0, "container");
    assert_eq!(container.1.values.len(), ncells);
}

#[test]
fn bad_vtk_dirs_are_refused_before_the_run_and_nothing_is_left() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("a_file");
    std::fs::write(&file, "mine").unwrap();
    let other = tmp.path().join("notes");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("notes.txt"), "mine").unwrap();
    for (dir, why) in [
        (file.clone(), "not a directory"),
        (tmp.path().join("no/such/dir"), "no directory"),
        (other.clone(), "notes.txt"),
    ] {
        let o = run(&[
            "run",
            SCENE,
            "--steps",
            "2",
            "--vtk-dir",
            dir.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{}", dir.display());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("--vtk-dir") && err.contains(why), "{err}");
    }
    let o = run(&[
        "run",
        SCENE,
        "--steps",
        "2",
        "--vtk-dir",
        "x",
        "--vtk-every",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--vtk-every"));
    // Untouched: the file, the other directory, and no temporary left.
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
    assert_eq!(std::fs::read_dir(&other).unwrap().count(), 1);
    let mut names: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a_file", "notes"]);

    // A run stopped with Ctrl-C (SIGINT) part way leaves no series and no temporary.
    let dir = tmp.path().join("series");
    let child = Command::new(env!("CARGO_BIN_EXE_impulse-lab"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["run", "repose_spheres", "--duration", "60", "--vtk-dir"])
        .arg(&dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Long enough for the handler to be installed and frames to be written.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // The shell's built-in kill: no procps needed.
    let killed = Command::new("sh")
        .args(["-c", &format!("kill -INT {}", child.id())])
        .status()
        .unwrap();
    assert!(killed.success());
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!dir.exists());
    let mut names: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a_file", "notes"]);
}

#[test]
fn repose_writes_one_series_per_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("vtk");
    let o = run(&[
        "repose",
        "tests/fixtures/repose_tiny.ron",
        "--friction",
        "0,0.5",
        "--max-time",
        "0.2",
        "--vtk-dir",
        dir.to_str().unwrap(),
        "--vtk-every",
        "50",
        "--out",
        tmp.path().join("r.csv").to_str().unwrap(),
    ]);
    ok(&o);
    let mut runs: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    runs.sort();
    assert_eq!(
        runs,
        [
            "repose_tiny_sqm_mu0.5_e0.3_seed7",
            "repose_tiny_sqm_mu0_e0.3_seed7"
        ]
    );
    for r in runs {
        let sub = dir.join(&r);
        let pvd = std::fs::read_to_string(sub.join("bodies.pvd")).unwrap();
        let pvd = roxmltree::Document::parse(&pvd).unwrap();
        let frames: Vec<(f64, String)> = pvd
            .descendants()
            .filter(|n| n.has_tag_name("DataSet"))
            .map(|n| {
                (
                    n.attribute("timestep").unwrap().parse().unwrap(),
                    n.attribute("file").unwrap().to_string(),
                )
            })
            .collect();
        // Two phases of at most 0.2 s at dt = 1/600 s: up to 240 steps, a frame every
        // 50 and the last.
        assert!(frames.len() >= 3 && frames.len() <= 6, "{r}: {frames:?}");
        assert_eq!(frames[0].0, 0.0);
        assert!(frames.windows(2).all(|w| w[0].0 < w[1].0), "{frames:?}");
        for (t, f) in &frames {
            let text = std::fs::read_to_string(sub.join(f)).unwrap();
            let doc = roxmltree::Document::parse(&text).unwrap();
            let field = arrays(child(
                child(doc.root_element(), "UnstructuredGrid"),
                "FieldData",
            ));
            assert_eq!(get(&field, "TimeValue").values, [*t]);
        }
        let text = std::fs::read_to_string(sub.join("containers.vtu")).unwrap();
        roxmltree::Document::parse(&text).unwrap();
        assert_eq!(std::fs::read_dir(&sub).unwrap().count(), frames.len() + 2);
    }
}
