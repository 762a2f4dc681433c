//! The generated blocks of the repository's files: where each one is, what it should
//! hold, and how to compare or rewrite it. Shared by `xtask` and `tests/stubs_generated.rs`.

use std::path::Path;

use crate::render::{render_markdown_table, render_pyi_declarations, render_pyi_overloads};

/// A block of `file` between the lines `begin` and `end` (compared after trimming).
pub struct Block {
    pub file: &'static str,
    pub begin: &'static str,
    pub end: &'static str,
    /// What the block should hold.
    pub rendered: String,
    /// Whether a file without the markers is an error (else there is nothing to check).
    pub required: bool,
    /// Applied to both sides before comparing.
    pub normalize: fn(&str) -> String,
}

/// What [`Block::sync`] found.
#[derive(Debug)]
pub enum Outcome {
    UpToDate,
    Rewritten,
    /// Stale and not rewritten: the first difference, for the message.
    Stale(String),
}

impl Block {
    /// The typed overloads in the Python stub.
    pub fn stub() -> Self {
        Self {
            file: "python/cudnn_rs/_native.pyi",
            begin: "# BEGIN GENERATED OVERLOADS",
            end: "# END GENERATED OVERLOADS",
            rendered: render_pyi_overloads(),
            required: true,
            normalize: ToString::to_string,
        }
    }

    /// The module-level declarations the stub's overloads use (type variables, the
    /// misuse overloads' protocol).
    pub fn stub_declarations() -> Self {
        Self {
            file: "python/cudnn_rs/_native.pyi",
            begin: "# BEGIN GENERATED DECLARATIONS",
            end: "# END GENERATED DECLARATIONS",
            rendered: render_pyi_declarations(),
            required: true,
            normalize: ToString::to_string,
        }
    }

    /// The support table in the README, compared without the blank lines around it;
    /// written with them, so that no Markdown renderer reads the end marker as a row.
    pub fn readme() -> Self {
        Self {
            file: "README.md",
            begin: "<!-- BEGIN SUPPORT TABLE -->",
            end: "<!-- END SUPPORT TABLE -->",
            rendered: format!("\n{}\n", render_markdown_table()),
            required: false,
            normalize: |s| s.trim().to_string(),
        }
    }

    /// Compares the committed block under `root` with the rendering; rewrites a stale
    /// one when `write`.
    pub fn sync(&self, root: &Path, write: bool) -> Result<Outcome, String> {
        let full = root.join(self.file);
        let text = std::fs::read_to_string(&full)
            .map_err(|e| format!("cannot read {}: {e}", full.display()))?;
        let Some(range) = self.find(&text)? else {
            return if self.required {
                Err(format!("no `{}` ... `{}` block", self.begin, self.end))
            } else {
                Ok(Outcome::UpToDate)
            };
        };
        let committed = &text[range.clone()];
        if (self.normalize)(committed) == (self.normalize)(&self.rendered) {
            return Ok(Outcome::UpToDate);
        }
        if !write {
            return Ok(Outcome::Stale(first_difference(committed, &self.rendered)));
        }
        let mut updated = String::with_capacity(text.len());
        updated.push_str(&text[..range.start]);
        updated.push_str(&self.rendered);
        updated.push_str(&text[range.end..]);
        std::fs::write(&full, updated)
            .map_err(|e| format!("cannot write {}: {e}", full.display()))?;
        Ok(Outcome::Rewritten)
    }

    /// The byte range of the lines strictly between the `begin` line and the next `end`
    /// line; `None` when the markers are absent.
    fn find(&self, text: &str) -> Result<Option<std::ops::Range<usize>>, String> {
        let mut start = None;
        let mut offset = 0;
        for line in text.split_inclusive('\n') {
            let next = offset + line.len();
            match (start, line.trim()) {
                (None, t) if t == self.begin => start = Some(next),
                (Some(s), t) if t == self.end => return Ok(Some(s..offset)),
                (Some(_), t) if t == self.begin => {
                    return Err(format!("`{}` appears twice", self.begin));
                }
                _ => {}
            }
            offset = next;
        }
        match start {
            Some(_) => Err(format!(
                "`{}` without a following `{}`",
                self.begin, self.end
            )),
            None => Ok(None),
        }
    }
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
                );
            }
        }
    }
    "the blocks differ only in trailing newlines".into()
}
