//! With the `cuda` feature, broken or GPU-less drivers must give typed errors, never a
//! panic or an abort: each case builds a fake `libcuda.so` with the C compiler, then
//! re-runs this test binary with the fake on `LD_LIBRARY_PATH` (cudarc loads the driver
//! once per process) and checks what `Device::open` says. Ignored without the feature or
//! off Linux; fails without a C compiler `cc`.

use std::path::{Path, PathBuf};
use std::process::Command;

use fprev::cuda::{CudaError, Device};

const CHILD: &str = "FPREV_TEST_FAKE_DRIVER_EXPECT";

/// Run in the child process only: what `Device::open(0)` returns must match `CHILD`.
#[test]
#[ignore = "run by fake_drivers_give_typed_errors in a child process"]
fn child_open_device() {
    let Ok(expect) = std::env::var(CHILD) else {
        return;
    };
    let got = Device::open(0);
    let ok = matches!(
        (expect.as_str(), &got),
        ("no-device", Err(CudaError::NoDevice { .. }))
            | ("driver-error", Err(CudaError::Driver { .. }))
    );
    assert!(ok, "expected {expect}, got {got:?}");
    println!("fake driver ({expect}): {}", got.unwrap_err());
}

const EMPTY: &str = "int fprev_nothing(void) { return 0; }\n";

const NO_DEVICE: &str = "
int cuInit(unsigned int flags) { (void)flags; return 100; /* CUDA_ERROR_NO_DEVICE */ }
int cuDeviceGetCount(int *c) { *c = 0; return 100; }
";

const CONTEXT_FAILS: &str = "
int cuInit(unsigned int flags) { (void)flags; return 0; }
int cuDeviceGetCount(int *c) { *c = 1; return 0; }
int cuDeviceGet(int *d, int ordinal) { *d = ordinal; return 0; }
int cuDevicePrimaryCtxRetain(void **ctx, int dev) { (void)ctx; (void)dev; return 2; }
";

fn build(dir: &Path, source: &str) -> Option<PathBuf> {
    std::fs::create_dir_all(dir).ok()?;
    let c = dir.join("fake.c");
    std::fs::write(&c, source).ok()?;
    let so = dir.join("libcuda.so");
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&so)
        .arg(&c)
        .status()
        .ok()?;
    status.success().then(|| dir.to_path_buf())
}

#[test]
#[cfg_attr(
    not(all(feature = "cuda", target_os = "linux")),
    ignore = "needs the cuda feature on Linux: cargo test --features cuda --test cuda_fake_driver"
)]
fn fake_drivers_give_typed_errors() {
    let root = std::env::temp_dir().join(format!("fprev-fake-cuda-{}", std::process::id()));
    let cases = [
        ("empty", EMPTY, "no-device"),
        ("no-device", NO_DEVICE, "no-device"),
        ("context-fails", CONTEXT_FAILS, "driver-error"),
    ];
    for (name, source, expect) in cases {
        let Some(dir) = build(&root.join(name), source) else {
            panic!("fake_drivers_give_typed_errors needs a working C compiler `cc`");
        };
        let out = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "child_open_device", "--ignored", "--nocapture"])
            .env("LD_LIBRARY_PATH", &dir)
            .env(CHILD, expect)
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("1 passed"),
            "fake driver {name}: {}\n{}",
            text,
            String::from_utf8_lossy(&out.stderr)
        );
        println!("fake driver {name}: ok");
    }
    let _ = std::fs::remove_dir_all(&root);
}
