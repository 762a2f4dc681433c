//! The algorithm a call runs with, as the Python layer resolved it from an argument.

use crate::convolution::{AlgoKind, BestHeuristic, BwdDataAlgo, Engine, Route};
use crate::math_type::MathType;

/// What an algorithm argument selects: the support-table column, how the call runs,
/// and (for heuristic and measured results) the record.
#[derive(Clone, Copy)]
pub(crate) struct SelectedAlgo {
    pub kind: AlgoKind,
    pub route: Route,
    pub best: Option<BestHeuristic>,
    pub engine: Option<Engine>,
}

impl SelectedAlgo {
    pub(crate) fn legacy(kind: AlgoKind, algo: BwdDataAlgo, best: Option<BestHeuristic>) -> Self {
        Self {
            kind,
            route: Route::Legacy(algo),
            best,
            engine: None,
        }
    }

    pub(crate) fn engine(engine: Engine) -> Self {
        Self {
            kind: AlgoKind::Engine,
            route: Route::Engine(Some(engine.config())),
            best: None,
            engine: Some(engine),
        }
    }

    /// The library's default choice (`DefaultAlgo`).
    pub(crate) fn default_choice() -> Self {
        Self {
            kind: AlgoKind::DefaultAlgo,
            route: Route::Default,
            best: None,
            engine: None,
        }
    }

    /// The math type the algorithm record asks for (heuristic results).
    pub(crate) fn math(&self) -> Option<MathType> {
        self.best.map(|b| b.math_type())
    }
}
