//! The cache of measured algorithms and engines (`find_convolution_backward_data_algorithm`
//! / `_engine`, and the measured default choices): the second find for the same problem
//! returns the first one's measurements instead of measuring again, and the cache can be
//! saved to a file and loaded into another process, by Rust and Python users alike.
//!
//! File format: a first line naming what the measurements were made with
//! ([`ENV_PREFIX`] then the cuDNN version and the GPU, see
//! [`crate::CudnnContext::environment`]); then one line per problem,
//! `key<TAB>entry;entry;...`, each entry `algo,time_ms,workspace_bytes,determinism,
//! math_type` with the names used in Python; an engine's `algo` is `Engine:index` followed
//! by `:knob=value` per knob. Measured default choices are keyed [`DEFAULT_PREFIX`] and the
//! problem as text. A file made elsewhere (another cuDNN or GPU) loads nothing.

use std::fmt::Write as _;
use std::sync::Mutex;

use crate::convolution::{BestHeuristic, BwdDataAlgo, Engine, EngineConfig};
use crate::determinism::Determinism;
use crate::error::{Error, Result};
use crate::math_type::MathType;
use crate::problem::RawProblem;

/// First line of a saved cache: what the measurements were made with follows.
pub const ENV_PREFIX: &str = "# cudnn_rs algorithm cache | ";
/// Key prefix of a measured default choice in a saved cache.
pub const DEFAULT_PREFIX: &str = "DefaultAlgo | ";

/// Everything a measurement depends on, as text (descriptors print their type, format and
/// shape; the cap and the determinism request narrow the list).
pub fn key(descs: &RawProblem<'_>, max_ws: Option<usize>, deterministic: bool) -> String {
    let c = descs.conv;
    let p = c.params();
    format!(
        "{} | {} | {} | pad {:?} stride {:?} dil {:?} groups {} {} | comp {} math {} | max_ws {} | det {}",
        descs.w,
        descs.dy,
        descs.dx,
        p.padding,
        p.stride,
        p.dilation,
        p.groups,
        p.mode.name(),
        c.comp(),
        c.math_type().name(),
        max_ws.map_or_else(|| "none".to_string(), |v| v.to_string()),
        deterministic
    )
}

/// The key of an engine autotune: [`key`] with the candidate limit and time budget.
pub fn engine_key(
    p: &RawProblem<'_>,
    max_ws: Option<usize>,
    deterministic: bool,
    limit: usize,
    budget: Option<std::time::Duration>,
) -> String {
    format!(
        "engines limit {limit} budget {budget:?} | {}",
        key(p, max_ws, deterministic)
    )
}

/// One measured result: a legacy algorithm or a graph-API engine.
#[derive(Debug, Clone, Copy, PartialEq)]
#[allow(clippy::large_enum_variant)] // a few per cached problem; kept `Copy`
pub enum Found {
    Algo(BestHeuristic),
    Engine(Engine),
}

impl Found {
    fn name(&self) -> String {
        match self {
            Found::Algo(b) => b.algo().name().to_string(),
            Found::Engine(e) => {
                let c = e.config();
                let mut out = format!("Engine:{}", c.index());
                for (k, v) in c.knobs() {
                    let _ = write!(out, ":{k}={v}");
                }
                out
            }
        }
    }

    fn fields(&self) -> (f32, usize, Determinism, MathType) {
        match self {
            Found::Algo(b) => (b.time(), b.workspace_size(), b.determinism(), b.math_type()),
            Found::Engine(e) => (e.time(), e.workspace_size(), e.determinism(), e.math_type()),
        }
    }
}

/// What a find returns per entry: a legacy algorithm record or an engine record.
pub trait Measured: Copy {
    fn wrap(self) -> Found;
    fn unwrap(found: Found) -> Option<Self>;
}

impl Measured for BestHeuristic {
    fn wrap(self) -> Found {
        Found::Algo(self)
    }
    fn unwrap(found: Found) -> Option<Self> {
        match found {
            Found::Algo(b) => Some(b),
            Found::Engine(_) => None,
        }
    }
}

impl Measured for Engine {
    fn wrap(self) -> Found {
        Found::Engine(self)
    }
    fn unwrap(found: Found) -> Option<Self> {
        match found {
            Found::Engine(e) => Some(e),
            Found::Algo(_) => None,
        }
    }
}

/// Reads an engine name written by [`Found::name`].
fn parse_engine(name: &str) -> Option<EngineConfig> {
    let mut parts = name.strip_prefix("Engine:")?.split(':');
    let index: i64 = parts.next()?.parse().ok()?;
    let knobs = parts
        .map(|kv| {
            let (k, v) = kv.split_once('=')?;
            Some((k.parse().ok()?, v.parse().ok()?))
        })
        .collect::<Option<Vec<(u32, i64)>>>()?;
    EngineConfig::new(index, &knobs)
}

#[derive(Default)]
pub struct FindCache {
    entries: Mutex<Vec<(String, Vec<Found>)>>,
}

impl FindCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(String, Vec<Found>)>> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn get(&self, key: &str) -> Option<Vec<Found>> {
        self.lock()
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    }

    /// The measurement cached under `key` (unless `use_cache` is false), else `measure`'s,
    /// which is then cached.
    pub fn get_or_measure<T: Measured>(
        &self,
        key: String,
        use_cache: bool,
        measure: impl FnOnce() -> Result<Vec<T>>,
    ) -> Result<Vec<T>> {
        if use_cache {
            if let Some(found) = self.get(&key) {
                return Ok(found.into_iter().filter_map(T::unwrap).collect());
            }
        }
        let found = measure()?;
        self.insert(key, found.iter().copied().map(T::wrap).collect());
        Ok(found)
    }

    /// A legacy find through the cache: the measurement cached for the problem, cap and
    /// determinism request (unless `use_cache` is false), else `measure`'s, then cached.
    /// The policy every find follows, typed Rust and Python alike.
    pub fn algorithms(
        &self,
        p: &RawProblem<'_>,
        max_ws: Option<usize>,
        deterministic: bool,
        use_cache: bool,
        measure: impl FnOnce() -> Result<Vec<BestHeuristic>>,
    ) -> Result<Vec<BestHeuristic>> {
        self.get_or_measure(key(p, max_ws, deterministic), use_cache, measure)
    }

    /// An engine autotune through the cache, as [`Self::algorithms`]; the entry is also
    /// keyed by the candidate limit and the time budget, which shape the list.
    #[allow(clippy::too_many_arguments)]
    pub fn engines(
        &self,
        p: &RawProblem<'_>,
        max_ws: Option<usize>,
        deterministic: bool,
        limit: usize,
        budget: Option<std::time::Duration>,
        use_cache: bool,
        measure: impl FnOnce() -> Result<Vec<Engine>>,
    ) -> Result<Vec<Engine>> {
        let key = engine_key(p, max_ws, deterministic, limit, budget);
        self.get_or_measure(key, use_cache, measure)
    }

    pub fn insert(&self, key: String, found: Vec<Found>) {
        let mut entries = self.lock();
        entries.retain(|(k, _)| *k != key);
        entries.push((key, found));
    }

    /// Takes every entry out.
    pub fn drain(&self) -> Vec<(String, Vec<Found>)> {
        std::mem::take(&mut *self.lock())
    }

    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn clear(&self) {
        self.lock().clear();
    }

    /// The cache as text (see the module documentation).
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for (k, found) in self.lock().iter() {
            let entries: Vec<String> = found
                .iter()
                .map(|f| {
                    let (time, ws, det, math) = f.fields();
                    format!("{},{time},{ws},{},{}", f.name(), det.name(), math.name())
                })
                .collect();
            out.push_str(k);
            out.push('\t');
            out.push_str(&entries.join(";"));
            out.push('\n');
        }
        out
    }

    /// Adds the entries of a text made by [`FindCache::to_text`]; returns how many
    /// problems were read. Nothing is added when any line is malformed.
    pub fn load_text(&self, text: &str) -> Result<usize> {
        let mut parsed = Vec::new();
        for (n, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let bad = |why: &str| {
                Error::InvalidArgument(format!("algorithm cache line {}: {why}", n + 1))
            };
            let (key, rest) = line
                .split_once('\t')
                .ok_or_else(|| bad("no tab after the key"))?;
            let mut found = Vec::new();
            for entry in rest.split(';').filter(|e| !e.is_empty()) {
                let f: Vec<&str> = entry.split(',').collect();
                let [algo, time, ws, det, math] = f.as_slice() else {
                    return Err(bad("an entry needs 5 fields"));
                };
                let legacy = BwdDataAlgo::ALL.into_iter().find(|a| a.name() == *algo);
                let engine = parse_engine(algo);
                if legacy.is_none() && engine.is_none() {
                    return Err(bad("unknown algorithm"));
                }
                let time: f32 = time.parse().map_err(|_| bad("bad time"))?;
                let ws: usize = ws.parse().map_err(|_| bad("bad workspace size"))?;
                let det = [Determinism::Deterministic, Determinism::NonDeterministic]
                    .into_iter()
                    .find(|d| d.name() == *det)
                    .ok_or_else(|| bad("unknown determinism"))?;
                let math = MathType::ALL
                    .into_iter()
                    .find(|m| m.name() == *math)
                    .ok_or_else(|| bad("unknown math type"))?;
                found.push(match (legacy, engine) {
                    (Some(a), _) => Found::Algo(BestHeuristic::new(a, time, ws, det, math)),
                    (None, Some(c)) => Found::Engine(Engine::new(c, time, ws, det, math)),
                    (None, None) => return Err(bad("unknown algorithm")),
                });
            }
            parsed.push((key.to_string(), found));
        }
        let n = parsed.len();
        for (k, v) in parsed {
            self.insert(k, v);
        }
        Ok(n)
    }
}

/// What loading a saved cache found.
#[derive(Debug)]
pub enum Loaded {
    /// The measurements, `(key, entries)`, and the measured default choices,
    /// `(problem, engine)`.
    Entries {
        finds: Vec<(String, Vec<Found>)>,
        defaults: Vec<(String, Engine)>,
    },
    /// The file was measured elsewhere (or does not say where): nothing is loaded, and
    /// this says why.
    Foreign(String),
}

/// The text of a saved cache: the environment line, the finds, the default choices.
pub fn save_text(environment: &str, finds: &FindCache, defaults: &[(String, Engine)]) -> String {
    let mut text = format!("{ENV_PREFIX}{environment}\n");
    text.push_str(&finds.to_text());
    let chosen = FindCache::default();
    for (problem, engine) in defaults {
        chosen.insert(
            format!("{DEFAULT_PREFIX}{problem}"),
            vec![Found::Engine(*engine)],
        );
    }
    text.push_str(&chosen.to_text());
    text
}

/// Reads a text made by [`save_text`] for a context running `environment`; `source` names
/// the file in messages. A malformed text is an error and loads nothing.
pub fn load_text(text: &str, environment: &str, source: &str) -> Result<Loaded> {
    let (first, rest) = text.split_once('\n').unwrap_or((text, ""));
    match first.strip_prefix(ENV_PREFIX) {
        Some(there) if there == environment => {}
        Some(there) => {
            return Ok(Loaded::Foreign(format!(
                "{source} was measured with {there}; this handle runs {environment}: nothing loaded"
            )))
        }
        None => {
            return Ok(Loaded::Foreign(format!(
                "{source} does not say which cuDNN and GPU it was measured on: nothing loaded"
            )))
        }
    }
    let scratch = FindCache::default();
    // The header stays a (blank) line so that errors name the file's line numbers.
    scratch.load_text(&format!("\n{rest}"))?;
    let (mut finds, mut defaults) = (Vec::new(), Vec::new());
    for (key, found) in scratch.drain() {
        match (key.strip_prefix(DEFAULT_PREFIX), found.first()) {
            (Some(problem), Some(Found::Engine(e))) => defaults.push((problem.to_string(), *e)),
            (Some(_), _) => {
                return Err(Error::InvalidArgument(format!(
                    "{source}: a default choice must be one engine"
                )))
            }
            (None, _) => finds.push((key, found)),
        }
    }
    Ok(Loaded::Entries { finds, defaults })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem_parts() -> (
        crate::tensor::RawDescriptor,
        crate::tensor::RawDescriptor,
        crate::tensor::RawDescriptor,
        crate::convolution::RawConvolutionDescriptor,
    ) {
        use crate::data_type::DType;
        use crate::tensor::{Format, RawDescriptor, Role};
        let t = |role, shape: &[usize]| {
            RawDescriptor::new(role, DType::F32, Format::Nchw, shape).unwrap()
        };
        let params = crate::convolution::ConvParams::new(
            &[1, 1],
            &[1, 1],
            &[1, 1],
            1,
            crate::convolution::ConvolutionMode::CrossCorrelation,
        )
        .unwrap();
        let conv = crate::convolution::RawConvolutionDescriptor::new(
            params,
            DType::F32,
            MathType::Default,
        )
        .unwrap();
        (
            t(Role::Filter, &[4, 2, 3, 3]),
            t(Role::Tensor, &[1, 4, 5, 5]),
            t(Role::Tensor, &[1, 2, 5, 5]),
            conv,
        )
    }

    #[test]
    fn a_repeated_find_is_served_from_the_cache() {
        // The policy every find follows (typed Rust finds and Python's): measure once
        // per problem, cap, determinism (and, for engines, limit and budget).
        let (w, dy, dx, conv) = problem_parts();
        let p = RawProblem {
            w: &w,
            dy: &dy,
            dx: &dx,
            conv: &conv,
        };
        let cache = FindCache::default();
        let measured = std::cell::Cell::new(0);
        let algo = BestHeuristic::new(
            BwdDataAlgo::Algo1,
            0.5,
            0,
            Determinism::Deterministic,
            MathType::Fma,
        );
        let measure = || {
            measured.set(measured.get() + 1);
            Ok(vec![algo])
        };
        assert_eq!(
            cache.algorithms(&p, None, false, true, measure).unwrap(),
            vec![algo]
        );
        assert_eq!(
            cache.algorithms(&p, None, false, true, measure).unwrap(),
            vec![algo]
        );
        assert_eq!(measured.get(), 1);
        // Another cap or determinism request is another entry; `use_cache = false`
        // measures again.
        cache.algorithms(&p, Some(0), false, true, measure).unwrap();
        cache.algorithms(&p, None, true, true, measure).unwrap();
        cache.algorithms(&p, None, false, false, measure).unwrap();
        assert_eq!((measured.get(), cache.len()), (4, 3));
        let engine = Engine::new(
            EngineConfig::new(3, &[]).unwrap(),
            0.25,
            0,
            Determinism::Deterministic,
            MathType::Fma,
        );
        let engines = || {
            measured.set(measured.get() + 1);
            Ok(vec![engine])
        };
        for _ in 0..2 {
            let found = cache
                .engines(&p, None, false, 4, None, true, engines)
                .unwrap();
            assert_eq!(found, vec![engine]);
        }
        assert_eq!((measured.get(), cache.len()), (5, 4));
        cache
            .engines(&p, None, false, 8, None, true, engines)
            .unwrap();
        assert_eq!((measured.get(), cache.len()), (6, 5));
        // An engine entry is not read as a legacy one, nor the other way round.
        assert_ne!(engine_key(&p, None, false, 4, None), key(&p, None, false));
        // A failed measurement caches nothing.
        let failing = || -> Result<Vec<BestHeuristic>> { Err(Error::Shape("no".into())) };
        assert!(cache.algorithms(&p, Some(1), false, true, failing).is_err());
        assert_eq!(cache.len(), 5);
    }

    #[test]
    fn text_round_trips_and_malformed_text_adds_nothing() {
        let cache = FindCache::default();
        let found = vec![
            Found::Algo(BestHeuristic::new(
                BwdDataAlgo::Algo1,
                0.25,
                0,
                Determinism::Deterministic,
                MathType::Fma,
            )),
            Found::Algo(BestHeuristic::new(
                BwdDataAlgo::Fft,
                0.5,
                4096,
                Determinism::NonDeterministic,
                MathType::TensorOp,
            )),
            Found::Engine(Engine::new(
                EngineConfig::new(17, &[(3, 2), (12, -1)]).unwrap(),
                0.125,
                512,
                Determinism::Deterministic,
                MathType::TensorOp,
            )),
            Found::Engine(Engine::new(
                EngineConfig::new(0, &[]).unwrap(),
                1.5,
                0,
                Determinism::NonDeterministic,
                MathType::Fma,
            )),
        ];
        cache.insert("problem A".into(), found.clone());
        let text = cache.to_text();
        let other = FindCache::default();
        assert_eq!(other.load_text(&text).unwrap(), 1);
        assert_eq!(other.get("problem A").unwrap(), found);
        assert!(other.get("problem B").is_none());
        let broken = FindCache::default();
        assert!(broken
            .load_text("k\tDataAlgo1,1.0,0,Deterministic")
            .is_err());
        assert!(broken
            .load_text("k\tNoSuchAlgo,1.0,0,Deterministic,Fma")
            .is_err());
        assert!(broken.load_text("no tab here").is_err());
        assert!(broken
            .load_text("k\tEngine:x,1.0,0,Deterministic,Fma")
            .is_err());
        assert!(broken
            .load_text("k\tEngine:3:1,1.0,0,Deterministic,Fma")
            .is_err());
        assert_eq!(broken.len(), 0);
    }

    #[test]
    fn saved_files_load_only_where_they_were_measured() {
        let finds = FindCache::default();
        let engine = Engine::new(
            EngineConfig::new(7, &[(1, 2)]).unwrap(),
            0.5,
            64,
            Determinism::Deterministic,
            MathType::TensorOp,
        );
        finds.insert("problem A".into(), vec![Found::Engine(engine)]);
        let defaults = vec![("problem B".to_string(), engine)];
        let text = save_text("cuDNN 9.19.0 | GPU X | sm_90", &finds, &defaults);
        match load_text(&text, "cuDNN 9.19.0 | GPU X | sm_90", "f").unwrap() {
            Loaded::Entries { finds, defaults } => {
                assert_eq!(
                    finds,
                    vec![("problem A".to_string(), vec![Found::Engine(engine)])]
                );
                assert_eq!(defaults, vec![("problem B".to_string(), engine)]);
            }
            Loaded::Foreign(why) => panic!("{why}"),
        }
        for (env, want) in [
            ("cuDNN 9.14.0 | GPU X | sm_90", "measured with"),
            ("x", "measured with"),
        ] {
            match load_text(&text, env, "f").unwrap() {
                Loaded::Foreign(why) => assert!(why.contains(want), "{why}"),
                Loaded::Entries { .. } => panic!("loaded a file from {env}"),
            }
        }
        let bare = text.split_once('\n').unwrap().1;
        assert!(matches!(
            load_text(bare, "x", "f").unwrap(),
            Loaded::Foreign(why) if why.contains("does not say")
        ));
        let broken = format!("{ENV_PREFIX}x\nk\tDataAlgo1,1.0");
        let err = load_text(&broken, "x", "f").unwrap_err().to_string();
        assert!(err.contains("line 2"), "{err}");
    }
}
