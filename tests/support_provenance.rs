//! Every algorithm row of the support table is backed by the GPU sweep recorded in
//! `tests/data/` (`examples/gpu_sweep.rs` on the H200, both cuDNN builds): in each build
//! the pair ran and matched the CPU reference on at least one shape, and never gave a
//! wrong result. `BestHeuristic` and `BestEngine` pick among those and have no sweep
//! rows of their own; `DefaultAlgo` admits engines `BestEngine` leaves out (a reduction
//! in less than the compute type), so it was swept on its own (`sweep_default_*.csv`).

use std::collections::HashMap;

use cudnn_rs::convolution::support::support_rows;
use cudnn_rs::convolution::AlgoKind;

/// (algo, filter type, filter format, dy format, comp, dx format, conv dims) ->
/// build -> (accepted, wrong).
type Seen = HashMap<[String; 7], HashMap<String, (usize, usize)>>;

fn read(paths: &[&str]) -> Seen {
    let mut seen = Seen::new();
    for path in paths {
        let full = format!("{}/tests/data/{path}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e}"));
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
        let cols = [
            "algo",
            "filter_type",
            "filter_format",
            "dy_format",
            "comp_type",
            "dx_format",
            "conv_dims",
        ]
        .map(col);
        let (build, status) = (col("cudnn"), col("status"));
        for line in lines {
            let f: Vec<&str> = line.split(',').collect();
            let key = cols.map(|c| f[c].to_string());
            let entry = seen
                .entry(key)
                .or_default()
                .entry(f[build].to_string())
                .or_default();
            match f[status] {
                "accepted" => entry.0 += 1,
                s if s.starts_with("CUDNN_STATUS_NOT_SUPPORTED") => {}
                _ => entry.1 += 1,
            }
        }
    }
    seen
}

#[test]
fn every_algorithm_row_ran_correctly_in_both_cudnn_builds() {
    let seen = read(&[
        "sweep_pip.csv",
        "sweep_system.csv",
        "sweep_engine_pip.csv",
        "sweep_engine_system.csv",
        "sweep_default_pip.csv",
        "sweep_default_system.csv",
    ]);
    let mut checked = 0;
    for row in support_rows() {
        if matches!(row.algo, AlgoKind::BestHeuristic | AlgoKind::BestEngine) {
            continue;
        }
        let key = [
            row.algo.name().to_string(),
            row.filter.0.name().to_string(),
            row.filter.1.name().to_string(),
            row.dy.1.name().to_string(),
            row.comp.name().to_string(),
            row.dx.1.name().to_string(),
            row.conv_dims.to_string(),
        ];
        let builds = seen
            .get(&key)
            .unwrap_or_else(|| panic!("{row}: not in the sweep"));
        assert_eq!(builds.len(), 2, "{row}: swept in {:?}", builds.keys());
        for (build, (ok, wrong)) in builds {
            assert!(*ok > 0, "{row}: never accepted by cuDNN {build}");
            assert_eq!(*wrong, 0, "{row}: wrong results with cuDNN {build}");
        }
        checked += 1;
    }
    assert!(checked > 160, "{checked} rows checked");
}
