//! How an argument is named in error messages: never by its contents (an array's repr
//! can be megabytes).

use pyo3::prelude::*;

/// Longest repr an error message quotes.
const REPR_CAP: usize = 80;

/// A short description of `obj` for error messages: `numpy.ndarray of shape (2, 3) and
/// dtype float32` for arrays, otherwise its repr cut to a few dozen characters.
pub(crate) fn describe(obj: &Bound<'_, PyAny>) -> String {
    let ty = obj.get_type();
    let module = ty.module().map_or_else(|_| "?".into(), |m| m.to_string());
    let name = ty.qualname().map_or_else(|_| "?".into(), |n| n.to_string());
    let full = if module == "builtins" {
        name
    } else {
        format!("{module}.{name}")
    };
    if let Ok(class) = obj.cast::<pyo3::types::PyType>() {
        // A class, not an instance: its attributes (`shape`, `dtype`) are descriptors.
        let module = class
            .module()
            .map_or_else(|_| "?".into(), |m| m.to_string());
        let name = class
            .qualname()
            .map_or_else(|_| "?".into(), |n| n.to_string());
        return if module == "builtins" {
            format!("the class {name}")
        } else {
            format!("the class {module}.{name}")
        };
    }
    let attr = |a: &str| -> Option<String> {
        obj.getattr(a)
            .ok()
            .and_then(|v| v.str().ok())
            .map(|s| cap(&s.to_string_lossy()))
    };
    if let (Some(shape), Some(dtype)) = (attr("shape"), attr("dtype")) {
        return format!("a {full} of shape {shape} and dtype {dtype}");
    }
    let repr = obj
        .repr()
        .map(|r| cap(&r.to_string_lossy()))
        .unwrap_or_default();
    format!("{repr} (a {full})")
}

fn cap(text: &str) -> String {
    match text.char_indices().nth(REPR_CAP) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}
