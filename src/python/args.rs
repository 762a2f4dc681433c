//! Arguments checked with messages that say what to do: an array where a `Filter` or
//! `Tensor` is expected names the conversions (or `conv_input_grad`, which takes arrays),
//! and no message prints an argument's contents (an array's repr can be megabytes).

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use super::tensor::{PyFilter, PyTensor};

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

fn wrong_operand(obj: &Bound<'_, PyAny>, name: &str, class: &str) -> PyErr {
    let other = if class == "Filter" {
        "Tensor"
    } else {
        "Filter"
    };
    let hint = if obj.is_instance_of::<PyFilter>() || obj.is_instance_of::<PyTensor>() {
        format!(
            "a {other} cannot stand for a {class}; make one with cudnn_rs.{class}.from_dlpack(other_array) or cudnn_rs.{class}.from_numpy(handle, array)"
        )
    } else {
        format!(
            "wrap the array first: cudnn_rs.{class}.from_numpy(handle, array) (copies to the handle's device) or cudnn_rs.{class}.from_dlpack(array) (zero-copy, for PyTorch, CuPy, JAX and NumPy arrays); or call cudnn_rs.conv_input_grad(input_shape, weight, grad_output, ...), which takes arrays directly"
        )
    };
    PyTypeError::new_err(format!(
        "{name} must be a cudnn_rs.{class}, got {}: {hint}",
        describe(obj)
    ))
}

/// `obj` as a `Filter`, or a TypeError naming how to make one.
pub(crate) fn filter_arg<'a>(obj: &'a Bound<'_, PyAny>, name: &str) -> PyResult<&'a PyFilter> {
    obj.cast::<PyFilter>()
        .map(Bound::get)
        .map_err(|_| wrong_operand(obj, name, "Filter"))
}

/// `obj` as a `Tensor`, or a TypeError naming how to make one.
pub(crate) fn tensor_arg<'a>(obj: &'a Bound<'_, PyAny>, name: &str) -> PyResult<&'a PyTensor> {
    obj.cast::<PyTensor>()
        .map(Bound::get)
        .map_err(|_| wrong_operand(obj, name, "Tensor"))
}
