//! Python bindings (PyO3): the only place PyO3 appears.
