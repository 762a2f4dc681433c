//! Int arguments beyond `i64`: a Python int has no bound, so one past `i64` is out of
//! range like any other value, a ShapeError saying what fits, not a TypeError or an
//! OverflowError.

use pyo3::exceptions::PyOverflowError;
use pyo3::prelude::*;

use super::errors::to_py;
use crate::error::Error;

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
