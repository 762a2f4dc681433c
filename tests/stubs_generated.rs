//! The generated parts of the Python stubs and of the README are what the support table
//! says they are.
//!
//! - `python/cudnn_rs/_native.pyi`: the block between `# BEGIN GENERATED OVERLOADS` and
//!   `# END GENERATED OVERLOADS` equals `render_pyi_overloads()`, and the one between
//!   `# BEGIN GENERATED DECLARATIONS` and `# END GENERATED DECLARATIONS` (the type
//!   variables and protocol those overloads use) equals `render_pyi_declarations()`.
//! - `README.md`: the table between `<!-- BEGIN SUPPORT TABLE -->` and
//!   `<!-- END SUPPORT TABLE -->` (when the markers are there) equals
//!   `render_markdown_table()`.
//!
//! The generator lives in the `xtask` crate, outside the shipped library; this test
//! compiles the same files. `cargo run -p xtask -- stubs readme` (or
//! `CUDNN_RS_BLESS=1 cargo test --test stubs_generated`) rewrites a stale block.

#[path = "../xtask/src/blocks.rs"]
mod blocks;
#[path = "../xtask/src/render.rs"]
mod render;

use std::path::Path;

use blocks::{Block, Outcome};
use cudnn_rs::convolution::support::SUPPORT_LINES;
use cudnn_rs::convolution::AlgoKind;

fn bless() -> bool {
    std::env::var("CUDNN_RS_BLESS").is_ok_and(|v| v == "1")
}

fn check(block: &Block) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    match block.sync(root, bless()) {
        Ok(Outcome::UpToDate) => {}
        Ok(Outcome::Rewritten) => eprintln!("rewrote the generated block of {}", block.file),
        Ok(Outcome::Stale(diff)) => panic!(
            "the generated block of {} (between `{}` and `{}`) is stale: the support table \
             in src/convolution/support.rs changed, or the block was edited by hand.\n{diff}\n\
             Regenerate it with:\n    cargo run -p xtask -- stubs readme",
            block.file, block.begin, block.end
        ),
        Err(e) => panic!("{}: {e}", block.file),
    }
}

#[test]
fn stub_overloads_match_the_support_table() {
    check(&Block::stub_declarations());
    check(&Block::stub());
}

#[test]
fn readme_support_table_matches_the_support_table() {
    check(&Block::readme());
}

#[test]
fn markdown_has_one_line_per_configuration() {
    let md = render::render_markdown_table();
    assert_eq!(md.lines().count(), SUPPORT_LINES.len() + 2);
    assert!(md.contains("| f32 NCHW | f32 NCHW | f32 | f32 NCHW | 2-d (D=4) |"));
}

/// Every row of the table is admitted by some overload of every call, through the
/// overloads' algorithm unions; the counts stay far below one overload per row.
#[test]
fn rendered_overloads_cover_every_row() {
    let text = render::render_pyi_overloads();
    let count = |name: &str| text.matches(&format!("def {name}(\n")).count();
    let legacy = SUPPORT_LINES
        .iter()
        .filter(|l| l.algos.contains(&AlgoKind::BestHeuristic))
        .count();
    assert_eq!(SUPPORT_LINES.len(), 80);
    // The format groups (every line's engines) of one rank share overloads through
    // constrained data-type variables: f32, f16, bf16 computing in f32, and f64, f16
    // computing in their own type.
    let merged_groups = 2 * 2;
    // The queries without an algorithm: one per line (legacy) or per merged group
    // (engines), then the four general overloads and the misuse overload.
    assert_eq!(count("get_convolution_backward_data_algorithm"), legacy + 5);
    assert_eq!(
        count("find_convolution_backward_data_algorithm"),
        legacy + 5
    );
    assert_eq!(
        count("get_convolution_backward_data_engine"),
        merged_groups + 5
    );
    assert_eq!(
        count("find_convolution_backward_data_engine"),
        merged_groups + 5
    );
    // With an algorithm: a merged group overload plus one per line with a legacy
    // algorithm.
    let per_call = merged_groups + legacy + 5;
    assert_eq!(
        count("get_convolution_backward_data_workspace_size"),
        per_call
    );
    // Handle's method (indented) and the module-level function (group overloads twice:
    // dx in dy's format, or in the format asked for; no general overload for dx).
    assert_eq!(
        count("convolution_backward_data"),
        per_call + (2 * merged_groups + legacy + 4)
    );
    // A call misusing every operand names them, and nothing else of the overloads.
    assert_eq!(text.matches("w: _FilterExpected,").count(), 7);
    // Every row's algorithm appears in some union of its line or group.
    for line in SUPPORT_LINES {
        for algo in line.algos {
            assert!(
                text.contains(algo.name()),
                "{} missing from the stub",
                algo.name()
            );
        }
    }
    assert!(text.ends_with('\n'));
}
