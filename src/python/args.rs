//! Arguments checked with messages that say what to do: an array where a `Filter` or
//! `Tensor` is expected names the conversions (or `conv_input_grad`, which takes arrays),
//! and no message prints an argument's contents (an array's repr can be megabytes).

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use super::describe::describe;
use super::tensor::{PyFilter, PyTensor};

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
