//! Drivers older than the minimum are refused with a CUDA error, never a panic.
//!
//! No real old driver is needed: a stand-in `libcuda.so.1` is compiled here from C (it
//! exports `cuInit` and a `cuDriverGetVersion` reporting a chosen version, and nothing
//! newer). The end-to-end cases run this test binary again in a child process with the
//! stand-in first on `LD_LIBRARY_PATH`, since the loader reads that path only at process
//! start and the driver check caches its success for the process. Without a C compiler
//! the tests print why and pass without checking anything.

use std::path::{Path, PathBuf};
use std::process::Command;

use cudnn_rs::library::{check_cuda_driver_at, MIN_DRIVER_CUDA_VERSION};
use cudnn_rs::{CudnnContext, Error};

const STANDIN_SOURCE: &str = r"
int cuInit(unsigned int flags) { (void)flags; return 0; }
int cuDriverGetVersion(int *version) {
    if (!version) return 1; /* CUDA_ERROR_INVALID_VALUE */
    *version = STANDIN_CUDA_VERSION;
    return 0;
}
";

/// Marks the child process and carries the case it runs.
const CHILD_ENV: &str = "CUDNN_RS_STANDIN_CHILD";
const CHILD_MARK: &str = "standin-result:";

fn compiler() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".to_owned())
}

/// A fresh directory holding `libcuda.so.1` (and `libcuda.so`, the first name the loaders
/// try) reporting `version`, or `None` (with the reason printed) without a C compiler.
fn build_standin(version: i32) -> Option<PathBuf> {
    let dir = std::env::temp_dir().join(format!(
        "cudnn_rs_standin_{}_{version}_{}",
        std::process::id(),
        rand::random::<u64>()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let source = dir.join("standin.c");
    std::fs::write(&source, STANDIN_SOURCE).expect("write the stand-in source");
    let lib = dir.join("libcuda.so.1");
    let cc = compiler();
    let built = Command::new(&cc)
        .args(["-shared", "-fPIC", "-Wl,-soname,libcuda.so.1"])
        .arg(format!("-DSTANDIN_CUDA_VERSION={version}"))
        .arg("-o")
        .arg(&lib)
        .arg(&source)
        .output();
    match built {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!(
            "{cc} failed to build the stand-in driver: {}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => {
            println!("skipped: no C compiler ({cc}: {e}) to build the stand-in libcuda");
            return None;
        }
    }
    std::os::unix::fs::symlink("libcuda.so.1", dir.join("libcuda.so")).expect("symlink");
    Some(dir)
}

/// Runs `case` in a child process of this test binary with `dir` first on the loader's
/// search path; returns what the child reported after [`CHILD_MARK`].
fn run_child(case: &str, dir: &Path) -> String {
    let search = match std::env::var("LD_LIBRARY_PATH") {
        Ok(old) if !old.is_empty() => format!("{}:{old}", dir.display()),
        _ => dir.display().to_string(),
    };
    let out = Command::new(std::env::current_exe().expect("test binary path"))
        .args(["child_opens_a_context", "--exact", "--nocapture"])
        .env(CHILD_ENV, case)
        .env("LD_LIBRARY_PATH", search)
        .output()
        .expect("run the child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(CHILD_MARK))
        .unwrap_or_else(|| panic!("the child ran no case: {stdout}"))
        .trim()
        .to_owned()
}

/// The child's side: opens a context on device 0 and reports the error. Does nothing when
/// run as an ordinary test.
#[test]
fn child_opens_a_context() {
    let Ok(case) = std::env::var(CHILD_ENV) else {
        return;
    };
    match CudnnContext::new(0) {
        Err(Error::Cuda(msg)) => println!("{CHILD_MARK} {case}: {msg}"),
        Ok(_) => panic!("a context opened on the stand-in driver"),
        Err(other) => panic!("expected a CUDA error, got {other:?}"),
    }
}

#[test]
fn the_check_refuses_a_cuda_12_2_driver_and_accepts_the_minimum() {
    let (Some(old), Some(min), Some(new)) = (
        build_standin(12020),
        build_standin(MIN_DRIVER_CUDA_VERSION),
        build_standin(13000),
    ) else {
        return;
    };
    match check_cuda_driver_at(&old.join("libcuda.so.1")) {
        Err(Error::Cuda(msg)) => {
            assert!(msg.contains("supports CUDA 12.2"), "{msg}");
            assert!(msg.contains("cuDriverGetVersion = 12020"), "{msg}");
            assert!(msg.contains("CUDA 12.8 or newer (R570+)"), "{msg}");
        }
        other => panic!("a CUDA 12.2 driver was not refused: {other:?}"),
    }
    assert_eq!(
        check_cuda_driver_at(&min.join("libcuda.so.1")).ok(),
        Some(MIN_DRIVER_CUDA_VERSION)
    );
    assert_eq!(
        check_cuda_driver_at(&new.join("libcuda.so.1")).ok(),
        Some(13000)
    );
    for dir in [old, min, new] {
        std::fs::remove_dir_all(dir).expect("remove the stand-in");
    }
}

#[test]
fn a_context_on_a_cuda_12_2_driver_is_a_cuda_error_naming_both_versions() {
    let Some(dir) = build_standin(12020) else {
        return;
    };
    let reported = run_child("old", &dir);
    assert!(reported.starts_with("old: "), "{reported}");
    assert!(reported.contains("supports CUDA 12.2"), "{reported}");
    assert!(reported.contains("CUDA 12.8 or newer"), "{reported}");
    std::fs::remove_dir_all(dir).expect("remove the stand-in");
}

#[test]
fn a_new_enough_driver_missing_entry_points_is_a_cuda_error_not_a_panic() {
    // Passes the version check, then cudarc finds no cuDeviceGetCount and panics inside
    // its loader: the guard must turn that into an error.
    let Some(dir) = build_standin(13000) else {
        return;
    };
    let reported = run_child("missing", &dir);
    assert!(reported.starts_with("missing: "), "{reported}");
    assert!(
        reported.contains("missing a required entry point"),
        "{reported}"
    );
    std::fs::remove_dir_all(dir).expect("remove the stand-in");
}
