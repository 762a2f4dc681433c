//! The generated parts of the Python stubs and of the README are what the support table
//! says they are.
//!
//! - `python/cudnn_rs/_native.pyi`: the block between `# BEGIN GENERATED OVERLOADS` and
//!   `# END GENERATED OVERLOADS` equals `render_pyi_overloads()`.
//! - `README.md`: the table between `<!-- BEGIN SUPPORT TABLE -->` and
//!   `<!-- END SUPPORT TABLE -->` (when the markers are there) equals
//!   `render_markdown_table()`.
//!
//! `CUDNN_RS_BLESS=1 cargo test --test stubs_generated` rewrites a stale block instead
//! of failing.

use std::path::{Path, PathBuf};

use cudnn_rs::convolution::support::{render_markdown_table, render_pyi_overloads};
use cudnn_rs::convolution::AlgoKind;

const PYI: &str = "python/cudnn_rs/_native.pyi";
const PYI_BEGIN: &str = "# BEGIN GENERATED OVERLOADS";
const PYI_END: &str = "# END GENERATED OVERLOADS";
const README: &str = "README.md";
const README_BEGIN: &str = "<!-- BEGIN SUPPORT TABLE -->";
const README_END: &str = "<!-- END SUPPORT TABLE -->";

fn path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn bless() -> bool {
    std::env::var("CUDNN_RS_BLESS").is_ok_and(|v| v == "1")
}

/// The byte range of the lines strictly between the line whose trimmed text is `begin`
/// and the next line whose trimmed text is `end`; `None` when the markers are absent.
fn block(text: &str, begin: &str, end: &str, file: &str) -> Option<std::ops::Range<usize>> {
    let mut start = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let next = offset + line.len();
        match (start, line.trim()) {
            (None, t) if t == begin => start = Some(next),
            (Some(s), t) if t == end => return Some(s..offset),
            (Some(_), t) if t == begin => panic!("{file}: `{begin}` appears twice"),
            _ => {}
        }
        offset = next;
    }
    assert!(
        start.is_none(),
        "{file}: `{begin}` without a following `{end}`"
    );
    None
}

/// The first differing line, for the failure message.
fn first_difference(committed: &str, rendered: &str) -> String {
    let (mut a, mut b) = (committed.lines(), rendered.lines());
    for n in 1.. {
        match (a.next(), b.next()) {
            (Some(x), Some(y)) if x == y => {}
            (None, None) => break,
            (x, y) => {
                return format!(
                    "first difference at line {n} of the block:\n  committed: {}\n  generated: {}",
                    x.unwrap_or("<end of block>"),
                    y.unwrap_or("<end of block>")
                )
            }
        }
    }
    "the blocks differ only in trailing newlines".into()
}

/// Compares the block of `file` with `rendered`; rewrites it under `CUDNN_RS_BLESS=1`.
/// `normalize` is applied to both sides before comparing.
fn check_block(
    file: &str,
    begin: &str,
    end: &str,
    rendered: &str,
    required: bool,
    normalize: fn(&str) -> String,
) {
    let full = path(file);
    let text = std::fs::read_to_string(&full)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", full.display()));
    let Some(range) = block(&text, begin, end, file) else {
        assert!(!required, "{file} has no `{begin}` ... `{end}` block");
        return;
    };
    let committed = &text[range.clone()];
    if normalize(committed) == normalize(rendered) {
        return;
    }
    if bless() {
        let mut updated = String::with_capacity(text.len());
        updated.push_str(&text[..range.start]);
        updated.push_str(rendered);
        updated.push_str(&text[range.end..]);
        std::fs::write(&full, updated)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", full.display()));
        eprintln!("rewrote the generated block of {file}");
        return;
    }
    panic!(
        "the generated block of {file} (between `{begin}` and `{end}`) is stale: the \
         support table in src/convolution/support.rs changed, or the block was edited by \
         hand.\n{}\nRegenerate it with:\n    CUDNN_RS_BLESS=1 cargo test --test stubs_generated",
        first_difference(committed, rendered)
    );
}

#[test]
fn stub_overloads_match_the_support_table() {
    check_block(
        PYI,
        PYI_BEGIN,
        PYI_END,
        &render_pyi_overloads(),
        true,
        ToString::to_string,
    );
}

#[test]
fn readme_support_table_matches_the_support_table() {
    // Compared without the blank lines around it; written with them, so that no
    // Markdown renderer reads the end marker as a row of the table.
    check_block(
        README,
        README_BEGIN,
        README_END,
        &format!("\n{}\n", render_markdown_table()),
        false,
        |s| s.trim().to_string(),
    );
}

#[test]
fn rendered_overloads_cover_every_row() {
    let text = render_pyi_overloads();
    let rows = cudnn_rs::convolution::support::support_rows().count();
    let lines_with = |algo: AlgoKind| {
        cudnn_rs::convolution::support::SUPPORT_LINES
            .iter()
            .filter(|l| l.algos.contains(&algo))
            .count()
    };
    let (legacy, engines) = (
        lines_with(AlgoKind::BestHeuristic),
        lines_with(AlgoKind::Engine),
    );
    assert!(legacy > 0 && engines > legacy);
    let count = |name: &str| text.matches(&format!("def {name}(\n")).count();
    // Rows (or configurations) first, then the general overloads for unknown operands.
    assert_eq!(count("get_convolution_backward_data_algorithm"), legacy + 4);
    assert_eq!(
        count("find_convolution_backward_data_algorithm"),
        legacy + 4
    );
    assert_eq!(count("get_convolution_backward_data_engine"), engines + 4);
    assert_eq!(count("find_convolution_backward_data_engine"), engines + 4);
    assert_eq!(
        count("get_convolution_backward_data_workspace_size"),
        rows + 4
    );
    // Handle's method (indented) and the module-level function.
    assert_eq!(count("convolution_backward_data"), 2 * rows + 4 + 3);
    assert!(text.ends_with('\n'));
}
