//! Arguments checked with messages that say what to do: an array where a `Filter` or
//! `Tensor` is expected names the conversions (or `conv_input_grad`, which takes arrays),
//! and no message prints an argument's contents (an array's repr can be megabytes).

use pyo3::exceptions::{PyOverflowError, PyTypeError};
use pyo3::prelude::*;

use super::describe::describe;
use super::errors::to_py;
use super::tensor::{PyFilter, PyTensor};
use crate::error::Error;

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

fn beyond_i64(obj: &Bound<'_, PyAny>, what: &str, range: &str) -> PyErr {
    to_py(
        obj.py(),
        Error::Shape(format!("{what}: {range}, got {obj}")),
    )
}

/// `obj` as an `i64`. An int beyond `i64` (a Python int has no bound) is out of range
/// like any other, so a ShapeError saying what fits (`range`); anything else that is
/// no int fails as extraction reports it.
pub(crate) fn int_in_range(obj: &Bound<'_, PyAny>, what: &str, range: &str) -> PyResult<i64> {
    obj.extract::<i64>().map_err(|e| {
        if e.is_instance_of::<PyOverflowError>(obj.py()) {
            beyond_i64(obj, what, range)
        } else {
            e
        }
    })
}

/// Why an int or a sequence of ints did not extract as `i64`s, when that is an int
/// beyond `i64`: the ShapeError of [`int_in_range`], for the first such item. `None`
/// when some item is no int (the caller's TypeError then stands). Only called once
/// extraction failed, so the common path pays nothing.
pub(crate) fn out_of_range_item(obj: &Bound<'_, PyAny>, what: &str, range: &str) -> Option<PyErr> {
    let items: Vec<Bound<'_, PyAny>> = if obj.hasattr("__index__").unwrap_or(false) {
        vec![obj.clone()]
    } else if obj.is_instance_of::<pyo3::types::PyString>() {
        return None;
    } else {
        obj.try_iter().ok()?.collect::<PyResult<_>>().ok()?
    };
    let mut first = None;
    for item in &items {
        match item.extract::<i64>() {
            Ok(_) => {}
            Err(e) if e.is_instance_of::<PyOverflowError>(obj.py()) => {
                first = first.or(Some(item));
            }
            Err(_) => return None,
        }
    }
    first.map(|item| beyond_i64(item, what, range))
}
