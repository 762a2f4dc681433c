//! Repository tasks that are not part of the shipped library.
//!
//! ```text
//! cargo run -p xtask -- stubs [--check]   the overloads (and the declarations they use)
//!                                         in python/cudnn_rs/_native.pyi
//! cargo run -p xtask -- readme [--check]  the support table in README.md
//! ```
//! Without `--check` the block is rewritten; with it, a stale block is an error (exit 1).
//! `cargo test` runs the same check (`tests/stubs_generated.rs` includes `blocks.rs`).

mod blocks;
mod render;

use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let check = args.iter().any(|a| a == "--check");
    let tasks: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| *a != "--check")
        .collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    if tasks.is_empty() {
        eprintln!("usage: cargo run -p xtask -- (stubs | readme)... [--check]");
        return ExitCode::from(2);
    }
    let mut stale = false;
    for task in tasks {
        let blocks = match task {
            "stubs" => vec![blocks::Block::stub_declarations(), blocks::Block::stub()],
            "readme" => vec![blocks::Block::readme()],
            other => {
                eprintln!("unknown task `{other}` (stubs, readme)");
                return ExitCode::from(2);
            }
        };
        for block in blocks {
            match block.sync(&root, !check) {
                Ok(blocks::Outcome::UpToDate) => println!("{}: up to date", block.file),
                Ok(blocks::Outcome::Rewritten) => println!("{}: rewritten", block.file),
                Ok(blocks::Outcome::Stale(diff)) => {
                    eprintln!("{}: stale\n{diff}", block.file);
                    stale = true;
                }
                Err(e) => {
                    eprintln!("{}: {e}", block.file);
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    if stale {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
