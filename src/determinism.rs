//! Whether an algorithm gives bitwise-identical results from run to run.

use cudarc::cudnn::sys::cudnnDeterminism_t;

/// Reproducibility of an algorithm's results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Determinism {
    /// Bitwise-identical results for identical inputs.
    Deterministic,
    /// Results may differ in rounding between runs (atomics).
    NonDeterministic,
}

impl Determinism {
    pub const fn into_raw(self) -> cudnnDeterminism_t {
        match self {
            Determinism::Deterministic => cudnnDeterminism_t::CUDNN_DETERMINISTIC,
            Determinism::NonDeterministic => cudnnDeterminism_t::CUDNN_NON_DETERMINISTIC,
        }
    }

    /// Maps a raw value cuDNN wrote; `None` for an unknown value.
    pub const fn from_raw(raw: u32) -> Option<Self> {
        match raw {
            0 => Some(Determinism::NonDeterministic),
            1 => Some(Determinism::Deterministic),
            _ => None,
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            Determinism::Deterministic => "Deterministic",
            Determinism::NonDeterministic => "NonDeterministic",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_values_round_trip() {
        for d in [Determinism::Deterministic, Determinism::NonDeterministic] {
            assert_eq!(Determinism::from_raw(d.into_raw() as u32), Some(d));
        }
        assert_eq!(Determinism::from_raw(2), None);
    }
}
