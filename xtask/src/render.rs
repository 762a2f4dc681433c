//! Renders the generated parts of the Python stub and of the README from the support
//! table (`cudnn_rs::convolution::support::SUPPORT_LINES`).
//!
//! Not part of the shipped library: `xtask` writes the blocks (`cargo run -p xtask --
//! stubs` / `-- readme`) and `tests/stubs_generated.rs` includes this file to check that
//! the committed blocks are what the table says.

use std::fmt::Write as _;

use cudnn_rs::convolution::support::{SupportConfig, SupportLine, SUPPORT_LINES};
use cudnn_rs::convolution::AlgoKind;
use cudnn_rs::{DType, Format};

/// The memory formats the format-generic overloads range over; the stub's type variables
/// `_LayoutW`, `_LayoutY`, `_LayoutX` are constrained to exactly these.
const LAYOUTS: [Format; 2] = [Format::Nchw, Format::Nhwc];

/// The table as Markdown, one line per configuration, for the README.
pub fn render_markdown_table() -> String {
    let mut out = String::from(
        "| filter | dy | compute | dx | rank | algorithms |\n\
         | --- | --- | --- | --- | --- | --- |\n",
    );
    for line in SUPPORT_LINES {
        let c = &line.config;
        let algos: Vec<&str> = line.algos.iter().map(|a| a.name()).collect();
        let _ = writeln!(
            out,
            "| {} {} | {} {} | {} | {} {} | {}-d (D={}) | {} |",
            c.filter.0,
            c.filter.1,
            c.dy.0,
            c.dy.1,
            c.comp,
            c.dx.0,
            c.dx.1,
            c.conv_dims,
            c.tensor_dims,
            algos.join(", ")
        );
    }
    out
}

/// The configuration without its formats: lines that agree on this form a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TypeKey {
    filter: DType,
    dy: DType,
    comp: DType,
    dx: DType,
    tensor_dims: usize,
    conv_dims: usize,
}

impl TypeKey {
    fn of(c: &SupportConfig) -> Self {
        Self {
            filter: c.filter.0,
            dy: c.dy.0,
            comp: c.comp,
            dx: c.dx.0,
            tensor_dims: c.tensor_dims,
            conv_dims: c.conv_dims,
        }
    }
}

/// A data type of a group overload: one type, or a constrained type variable that is
/// exactly one of several (declared by [`render_pyi_declarations`]).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ty {
    Fixed(DType),
    Var(Vec<DType>),
}

impl Ty {
    fn pyi(&self) -> String {
        match self {
            Ty::Fixed(d) => pyi_dtype(*d),
            Ty::Var(ds) => dtype_var(ds),
        }
    }
}

/// The name of the type variable constrained to `ds`: `_DT_F16_BF16`.
fn dtype_var(ds: &[DType]) -> String {
    let names: Vec<String> = ds.iter().map(|&d| pyi_dtype(d)).collect();
    format!("_DT_{}", names.join("_"))
}

/// Format groups of the same ranks and algorithms, merged over their data types: the
/// three operands share `storage`; the compute type is `comp`, or the storage type
/// itself when `None` (so `_DT_F64_F16` with `comp: None` is f64/f64 or f16/f16).
#[derive(Debug, Clone, PartialEq, Eq)]
struct GroupKey {
    storage: Ty,
    comp: Option<DType>,
    tensor_dims: usize,
    conv_dims: usize,
}

impl GroupKey {
    /// Covers the groups `keys` (same ranks; filter, dy and dx of one data type, as
    /// [`common_algos`] requires) with as few keys
    /// as a constrained variable allows: largest class first, where a class is the
    /// groups of one compute type, or those computing in their own type.
    fn merge(keys: &[TypeKey]) -> Vec<GroupKey> {
        let mut left: Vec<TypeKey> = keys.to_vec();
        let mut out = Vec::new();
        while let Some(first) = left.first().copied() {
            let mut classes: Vec<(Option<DType>, Vec<TypeKey>)> = Vec::new();
            for k in &left {
                if !classes.iter().any(|(c, _)| *c == Some(k.comp)) {
                    let members = left.iter().filter(|m| m.comp == k.comp).copied().collect();
                    classes.push((Some(k.comp), members));
                }
            }
            let same: Vec<TypeKey> = left
                .iter()
                .filter(|m| m.comp == m.filter)
                .copied()
                .collect();
            classes.push((None, same));
            let (comp, members) = classes
                .into_iter()
                .fold(
                    None,
                    |best: Option<(Option<DType>, Vec<TypeKey>)>, c| match best {
                        Some(b) if b.1.len() >= c.1.len() => Some(b),
                        _ => Some(c),
                    },
                )
                .unwrap_or((Some(first.comp), vec![first]));
            left.retain(|k| !members.contains(k));
            let dtypes: Vec<DType> = members.iter().map(|k| k.filter).collect();
            let storage = if dtypes.len() == 1 {
                Ty::Fixed(dtypes[0])
            } else {
                Ty::Var(dtypes)
            };
            let comp = match (comp, &storage) {
                (None, Ty::Fixed(d)) => Some(*d),
                (c, _) => c,
            };
            out.push(GroupKey {
                storage,
                comp,
                tensor_dims: first.tensor_dims,
                conv_dims: first.conv_dims,
            });
        }
        out
    }
}

/// One overload's worth of configurations: a single line of the table, or whole groups
/// (every combination of `LAYOUTS` for the filter, dy and dx, typed with the stub's
/// constrained format variables; several data types through a constrained variable).
#[derive(Debug, Clone)]
enum Configs {
    Line(SupportConfig),
    Group(GroupKey),
}

/// The overloads of a backward-data call, in order: per configuration set, the
/// algorithms it admits (in `AlgoKind::ALL` order).
#[derive(Debug, Clone)]
struct Plan {
    entries: Vec<(Configs, Vec<AlgoKind>)>,
}

impl Plan {
    /// Groups whose lines cover every format combination get one format-generic overload
    /// for the algorithms all their lines admit, shared with the other groups of the same
    /// ranks and algorithms where a constrained data-type variable can express them; each
    /// line keeps an overload for the algorithms only it admits. Lines of an incomplete
    /// group keep all their algorithms.
    fn of_table() -> Self {
        let mut entries = Vec::new();
        let mut done: Vec<TypeKey> = Vec::new();
        for line in SUPPORT_LINES {
            let key = TypeKey::of(&line.config);
            let common = common_algos(key);
            if !common.is_empty() && !done.contains(&key) {
                let mut peers: Vec<TypeKey> = Vec::new();
                for l in SUPPORT_LINES {
                    let k = TypeKey::of(&l.config);
                    if k.tensor_dims == key.tensor_dims
                        && k.conv_dims == key.conv_dims
                        && !done.contains(&k)
                        && !peers.contains(&k)
                        && common_algos(k) == common
                    {
                        peers.push(k);
                    }
                }
                done.extend(peers.iter().copied());
                for g in GroupKey::merge(&peers) {
                    entries.push((Configs::Group(g), common.clone()));
                }
            }
            let own: Vec<AlgoKind> = line
                .algos
                .iter()
                .copied()
                .filter(|a| !common.contains(a))
                .collect();
            if !own.is_empty() {
                entries.push((Configs::Line(line.config), sorted(own)));
            }
        }
        Self { entries }
    }

    /// The constrained data-type variables the overloads use, in order of first use.
    fn dtype_vars(&self) -> Vec<Vec<DType>> {
        let mut vars: Vec<Vec<DType>> = Vec::new();
        for (configs, _) in &self.entries {
            if let Configs::Group(GroupKey {
                storage: Ty::Var(ds),
                ..
            }) = configs
            {
                if !vars.contains(ds) {
                    vars.push(ds.clone());
                }
            }
        }
        vars
    }

    /// The configuration sets that admit `algo` (for the calls that take no algorithm).
    fn admitting(&self, algo: AlgoKind) -> Vec<Configs> {
        self.entries
            .iter()
            .filter(|(_, algos)| algos.contains(&algo))
            .map(|(c, _)| c.clone())
            .collect()
    }
}

fn sorted(mut algos: Vec<AlgoKind>) -> Vec<AlgoKind> {
    algos.sort();
    algos
}

/// The algorithms every format combination of `key` admits; empty when a combination
/// is missing from the table, or when the operands' data types differ (a group overload
/// gives the three operands one data type).
fn common_algos(key: TypeKey) -> Vec<AlgoKind> {
    if key.filter != key.dy || key.dy != key.dx {
        return Vec::new();
    }
    let lines: Vec<&SupportLine> = SUPPORT_LINES
        .iter()
        .filter(|l| TypeKey::of(&l.config) == key)
        .collect();
    let complete = LAYOUTS.iter().all(|&w| {
        LAYOUTS.iter().all(|&y| {
            LAYOUTS.iter().all(|&x| {
                lines
                    .iter()
                    .any(|l| l.config.filter.1 == w && l.config.dy.1 == y && l.config.dx.1 == x)
            })
        })
    });
    if !complete {
        return Vec::new();
    }
    AlgoKind::ALL
        .into_iter()
        .filter(|a| lines.iter().all(|l| l.algos.contains(a)))
        .collect()
}

/// The stub types of the operands of one overload.
#[derive(Clone)]
struct PyiOperands {
    w: String,
    dy: String,
    dx: String,
    conv: String,
    /// dx's data type, for the one-call API's `dtype` parameter.
    dx_dtype: String,
    rank: String,
}

impl PyiOperands {
    fn of(configs: &Configs) -> Self {
        match configs {
            Configs::Line(c) => {
                let rank = format!("Rank{}", c.tensor_dims);
                let typed =
                    |(d, f): (DType, Format)| format!("{}, {}, {rank}", pyi_dtype(d), f.name());
                Self {
                    w: format!("Filter[{}]", typed(c.filter)),
                    dy: format!("Tensor[{}]", typed(c.dy)),
                    dx: format!("Tensor[{}]", typed(c.dx)),
                    conv: pyi_conv(c.comp, c.conv_dims),
                    dx_dtype: pyi_dtype(c.dx.0),
                    rank,
                }
            }
            Configs::Group(k) => {
                let rank = format!("Rank{}", k.tensor_dims);
                let storage = k.storage.pyi();
                let comp = k.comp.map_or_else(|| storage.clone(), pyi_dtype);
                Self {
                    w: format!("Filter[{storage}, _LayoutW, {rank}]"),
                    dy: format!("Tensor[{storage}, _LayoutY, {rank}]"),
                    dx: format!("Tensor[{storage}, _LayoutX, {rank}]"),
                    conv: format!("ConvolutionDescriptor[{comp}, Spatial{}]", k.conv_dims),
                    dx_dtype: storage,
                    rank,
                }
            }
        }
    }
}

fn pyi_conv(comp: DType, conv_dims: usize) -> String {
    format!(
        "ConvolutionDescriptor[{}, Spatial{conv_dims}]",
        pyi_dtype(comp)
    )
}

/// The stub class of a data type: `F32`, `BF16`, ...
fn pyi_dtype(d: DType) -> String {
    d.name().to_ascii_uppercase()
}

/// `DataAlgo0 | DataAlgo1 | ...`
fn pyi_algos(algos: &[AlgoKind]) -> String {
    algos
        .iter()
        .map(|a| a.name())
        .collect::<Vec<_>>()
        .join(" | ")
}

/// An operand known only at run time: its data type or its format is the base class.
fn unknown(class: &str) -> String {
    format!("{class}[DType, Any, Any] | {class}[Any, Format, Any]")
}

/// An operand of the same data type as the filter (`_DT`), or one known only at run
/// time.
fn same_or_unknown(class: &str) -> String {
    format!("{class}[_DT, Any, Any] | {}", unknown(class))
}

/// The operands of the general overloads, one per operand that may be the unknown one,
/// in the order w, dy, dx, conv. An earlier overload takes every call whose earlier
/// operand is unknown, so from the second on the filter's data type is known and the
/// known tensors must share it: a call mixing known data types (which no line admits)
/// then fails on the mixed operands as well, and a checker that reports the overload
/// that came closest blames the operand that is wrong, not the last one.
fn general_operands() -> Vec<(&'static str, PyiOperands)> {
    let operands = |w: String, dy: String, dx: String, conv: &str| PyiOperands {
        w,
        dy,
        dx,
        conv: conv.into(),
        dx_dtype: "DType".into(),
        rank: "Any".into(),
    };
    let known_w = || "Filter[_DT, Any, Any]".to_string();
    let any_conv = "ConvolutionDescriptor[Any, Any]";
    vec![
        (
            "w",
            operands(
                unknown("Filter"),
                "Tensor[Any, Any, Any]".into(),
                "Tensor[Any, Any, Any]".into(),
                any_conv,
            ),
        ),
        (
            "dy",
            operands(
                known_w(),
                unknown("Tensor"),
                same_or_unknown("Tensor"),
                any_conv,
            ),
        ),
        (
            "dx",
            operands(
                known_w(),
                same_or_unknown("Tensor"),
                unknown("Tensor"),
                any_conv,
            ),
        ),
        (
            "conv",
            operands(
                known_w(),
                same_or_unknown("Tensor"),
                same_or_unknown("Tensor"),
                "ConvolutionDescriptor[DType, Any]",
            ),
        ),
    ]
}

/// The operands of the misuse overload ([`misuse_operands`]) of a call that takes `dx`
/// (or, without `with_dx`, makes it).
fn misuse_pyi_operands(with_dx: bool) -> Vec<PyiOperands> {
    let names: &[&str] = if with_dx {
        &["w", "dy", "dx"]
    } else {
        &["w", "dy"]
    };
    let types = misuse_operands(names);
    let ty = |name: &str| {
        types
            .iter()
            .find(|(n, _)| n == name)
            .map_or_else(|| "object".to_string(), |(_, t)| t.clone())
    };
    vec![PyiOperands {
        w: ty("w"),
        dy: ty("dy"),
        dx: ty("dx"),
        conv: "ConvolutionDescriptor[Any, Any]".into(),
        dx_dtype: "DType".into(),
        rank: "Any".into(),
    }]
}

/// One overload's parameters (after `self`) and return type.
struct PyiSig {
    params: Vec<String>,
    ret: String,
}

impl PyiSig {
    fn new(mut params: Vec<String>, tail: &[&str], ret: &str) -> Self {
        params.extend(tail.iter().map(ToString::to_string));
        Self {
            params,
            ret: ret.into(),
        }
    }
}

fn pyi_operands_w_dy_dx_conv(o: &PyiOperands) -> Vec<String> {
    vec![
        format!("w: {}", o.w),
        format!("dy: {}", o.dy),
        format!("dx: {}", o.dx),
        format!("conv: {}", o.conv),
    ]
}

/// The overloads of a `Handle` query that takes no algorithm, for the configurations
/// admitting `algo`, then the general ones.
fn query_sigs(plan: &Plan, algo: AlgoKind, tail: &[&str], ret: &str) -> Vec<PyiSig> {
    plan.admitting(algo)
        .iter()
        .map(PyiOperands::of)
        .chain(general_operands().into_iter().map(|(_, o)| o))
        .chain(misuse_pyi_operands(true))
        .map(|o| PyiSig::new(pyi_operands_w_dy_dx_conv(&o), tail, ret))
        .collect()
}

/// The module-level declarations the generated overloads use, for the Python stub
/// (`python/cudnn_rs/_native.pyi`, between `# BEGIN GENERATED DECLARATIONS` and
/// `# END GENERATED DECLARATIONS`): the constrained data-type variables of the merged
/// group overloads, and what the misuse overloads are typed with.
pub fn render_pyi_declarations() -> String {
    let plan = Plan::of_table();
    let mut out = String::new();
    for line in [
        "# Generated by `cargo run -p xtask -- stubs` (xtask/src/render.rs); do not edit",
        "# by hand. The data types of the overloads that cover the format groups of",
        "# several lines of the table at once: each variable is exactly one of its types.",
    ] {
        let _ = writeln!(out, "{line}");
    }
    for ds in plan.dtype_vars() {
        let name = dtype_var(&ds);
        let types: Vec<String> = ds.iter().map(|&d| pyi_dtype(d)).collect();
        let _ = writeln!(out, "{name} = TypeVar(\"{name}\", {})", types.join(", "));
    }
    for line in [
        "",
        "# The misuse overload (the last of each backward-data call) accepts nothing: every",
        "# object's ``__repr__`` returns a ``str``, never ``Never``. It exists for the error",
        "# message: mypy lists every overload of a call that no overload nearly fits (an array",
        "# passed as an operand), but reports only the wrong arguments of the first overload",
        "# that nearly fits, and this one nearly fits any object: a line per wrong operand.",
        "_Str_co = TypeVar(\"_Str_co\", bound=str, covariant=True)",
        "",
        "class _NotAnOperand(Protocol[_Str_co]):",
        "    def __repr__(self) -> _Str_co: ...",
        "",
    ] {
        let _ = writeln!(out, "{line}");
    }
    for (name, _) in MISUSED {
        let _ = writeln!(
            out,
            "{name} = TypeVar(\"{name}\", bound=_NotAnOperand[Never])"
        );
    }
    out.push('\n');
    out
}

/// The type variables of the misuse overload, by the operand they stand for: mypy's
/// error reads `Value of type variable "_FilterExpected" of ... cannot be "ndarray[...]"`.
const MISUSED: [(&str, &str); 3] = [
    ("_FilterExpected", "w"),
    ("_TensorExpectedForDy", "dy"),
    ("_TensorExpectedForDx", "dx"),
];

/// The misuse overload of a call whose operands are `operands` (`w`, `dy`, `dx`): every
/// operand a misuse variable, so that it accepts no call. One, not one per operand:
/// pyright reports the overload whose failing arguments are fewest and latest, so an
/// overload accepting real filters and failing only on a later operand would be blamed
/// instead of the overload a wrong-dtype filter nearly fits (see
/// `test_misuse_names_the_wrong_operand`); this one fails on every operand of a
/// correctly typed call and is never pyright's choice then. mypy names each operand of
/// a call that is not a Filter / Tensor at all (and, in a call that mixes arrays and
/// operands, the operands as well: still a few lines).
fn misuse_operands(operands: &[&str]) -> Vec<(String, String)> {
    operands
        .iter()
        .map(|&name| {
            let var = MISUSED
                .iter()
                .find(|(_, o)| *o == name)
                .map_or("object", |(v, _)| v);
            (name.to_string(), var.to_string())
        })
        .collect()
}

/// The typed overloads of the backward-data calls for the Python stubs
/// (`python/cudnn_rs/_native.pyi`, between `# BEGIN GENERATED OVERLOADS` and
/// `# END GENERATED OVERLOADS`).
///
/// Per group of lines that differ only in formats and cover every combination of NCHW
/// and NHWC: one overload generic in the three formats, for the algorithms every line
/// of the group admits; per line: one overload with the algorithms only it admits (the
/// algorithm parameter is the union of their classes). Then general overloads that apply
/// only when an operand's data type or format is typed as the base class (`DType` /
/// `Format`), i.e. known only at run time. A combination of statically known types that
/// the table lacks therefore matches no overload and is a type error. The format groups
/// of one rank share their overload where a constrained data-type variable can say
/// which data types (with which compute types) they cover. Last, a misuse overload that
/// accepts nothing ([`misuse_operands`]), so that mypy's report of a call passing
/// something that is not an operand at all stays a line per operand.
///
/// The text starts inside the stub's `class Handle` body (indented methods) and ends
/// at module level (the one-call `convolution_backward_data`). It is formatted as
/// `ruff format` leaves it; `tests/stubs_generated.rs` keeps the stub in step.
pub fn render_pyi_overloads() -> String {
    let plan = Plan::of_table();
    let mut out = String::new();
    for line in [
        "# Generated from the support table in src/convolution/support.rs by",
        "# `cargo run -p xtask -- stubs` (xtask/src/render.rs); do not edit by hand.",
        "# Per group of lines that differ only in formats: one overload generic in the",
        "# formats (_LayoutW/_LayoutY/_LayoutX) for the algorithms the whole group admits",
        "# (groups of one rank share it through a data-type variable, _DT_...); per line:",
        "# one overload for the algorithms only it admits; then general overloads for",
        "# operands typed only as DType / Format; last, the misuse overload (accepts",
        "# nothing; keeps mypy's report of a call with non-operands short).",
    ] {
        let _ = writeln!(out, "    {line}");
    }

    pyi_group(
        &mut out,
        "get_convolution_backward_data_algorithm",
        "cuDNN's heuristic choice of algorithm for these operands (the CPU device\n\
         answers with an algorithm of the table). Usable wherever an algorithm is.",
        &query_sigs(
            &plan,
            AlgoKind::BestHeuristic,
            &["*", "deterministic: bool = False"],
            "BestHeuristic",
        ),
    );
    pyi_group(
        &mut out,
        "find_convolution_backward_data_algorithm",
        "Runs the algorithms on these operands and returns them fastest first; `dx` is\n\
         not modified. Cached per problem on the handle: a repeat measures nothing\n\
         (`use_cache=False` measures again).",
        &query_sigs(
            &plan,
            AlgoKind::BestHeuristic,
            &[
                "*",
                "max_workspace_bytes: int | None = None",
                "deterministic: bool = False",
                "use_cache: bool = True",
            ],
            "list[AlgoPerf]",
        ),
    );
    pyi_group(
        &mut out,
        "get_convolution_backward_data_engine",
        "The graph API's heuristic engine for these operands (what `BestEngine()` runs);\n\
         the CPU device answers with a stand-in. Usable wherever an algorithm is.",
        &query_sigs(
            &plan,
            AlgoKind::Engine,
            &["*", "deterministic: bool = False"],
            "Engine",
        ),
    );
    pyi_group(
        &mut out,
        "find_convolution_backward_data_engine",
        "Autotunes the graph API: times up to `limit` of its engines (the heuristic's\n\
         first, then every other) on these operands and returns them fastest first; `dx`\n\
         is not modified. Cached per problem on the handle like\n\
         `find_convolution_backward_data_algorithm`.",
        &query_sigs(
            &plan,
            AlgoKind::Engine,
            &[
                "*",
                "max_workspace_bytes: int | None = None",
                "deterministic: bool = False",
                "limit: int | None = None",
                "budget_ms: float | None = 10000.0",
                "use_cache: bool = True",
            ],
            "list[Engine]",
        ),
    );

    // Handle.get_convolution_backward_data_workspace_size
    let with_algos = || {
        plan.entries
            .iter()
            .map(|(c, algos)| (PyiOperands::of(c), pyi_algos(algos)))
            .chain(
                general_operands()
                    .into_iter()
                    .map(|(_, o)| o)
                    .chain(misuse_pyi_operands(true))
                    .map(|o| (o, "Algorithm".to_string())),
            )
    };
    let sigs: Vec<PyiSig> = with_algos()
        .map(|(o, algo)| {
            let mut params = pyi_operands_w_dy_dx_conv(&o);
            params.push(format!("algo: {algo}"));
            PyiSig::new(params, &[], "int | None")
        })
        .collect();
    pyi_group(
        &mut out,
        "get_convolution_backward_data_workspace_size",
        "Workspace bytes `algo` needs for these operands; None when it needs none\n\
         (always None on the CPU device).",
        &sigs,
    );

    // Handle.convolution_backward_data
    let sigs: Vec<PyiSig> = with_algos()
        .map(|(o, algo)| {
            PyiSig::new(
                vec![
                    "alpha: float".into(),
                    format!("w: {}", o.w),
                    format!("dy: {}", o.dy),
                    format!("conv: {}", o.conv),
                    format!("algo: {algo}"),
                    "workspace: Workspace | None".into(),
                    "beta: float".into(),
                    format!("dx: {}", o.dx),
                ],
                &[],
                "None",
            )
        })
        .collect();
    pyi_group(
        &mut out,
        "convolution_backward_data",
        "`dx = alpha * dgrad(w, dy) + beta * dx` with algorithm `algo`; `workspace`\n\
         holds at least `get_convolution_backward_data_workspace_size` bytes (None when\n\
         the algorithm needs none).",
        &sigs,
    );

    // Module-level convolution_backward_data (dtype/format of dx default to dy's).
    out.push('\n');
    let mut sigs = Vec::new();
    for (configs, algos) in &plan.entries {
        let o = PyiOperands::of(configs);
        let algo = if algos.contains(&AlgoKind::DefaultAlgo) {
            format!("algo: {} | None = None", pyi_algos(algos))
        } else {
            format!("algo: {}", pyi_algos(algos))
        };
        // (format parameter, dx type): omitted or None means dy's format.
        let formats: Vec<(String, String)> = match configs {
            Configs::Line(c) => {
                let opt = if c.dx.1 == c.dy.1 {
                    " | None = None"
                } else {
                    ""
                };
                vec![(
                    format!("format: type[{}]{opt}", c.dx.1.name()),
                    o.dx.clone(),
                )]
            }
            Configs::Group(_) => {
                let dx = |layout: &str| format!("Tensor[{}, {layout}, {}]", o.dx_dtype, o.rank);
                vec![
                    (
                        "format: type[_LayoutY] | None = None".into(),
                        dx("_LayoutY"),
                    ),
                    ("format: type[_LayoutX]".into(), dx("_LayoutX")),
                ]
            }
        };
        for (format, ret) in formats {
            sigs.push(PyiSig {
                params: vec![
                    "handle: Handle".into(),
                    format!("w: {}", o.w),
                    format!("dy: {}", o.dy),
                    format!("conv: {}", o.conv),
                    "x_shape: Sequence[int]".into(),
                    algo.clone(),
                    "*".into(),
                    "alpha: float = 1.0".into(),
                    format!("dtype: {} | None = None", o.dx_dtype),
                    format,
                ],
                ret,
            });
        }
    }
    let general = general_operands()
        .into_iter()
        // dx is made here, so only w, dy and conv can be the unknown operand.
        .filter(|(unknown, _)| *unknown != "dx")
        .map(|(_, o)| o)
        .chain(misuse_pyi_operands(false));
    for o in general {
        sigs.push(PyiSig {
            params: vec![
                "handle: Handle".into(),
                format!("w: {}", o.w),
                format!("dy: {}", o.dy),
                format!("conv: {}", o.conv),
                "x_shape: Sequence[int]".into(),
                "algo: Algorithm | None = None".into(),
                "*".into(),
                "alpha: float = 1.0".into(),
                "dtype: DType | None = None".into(),
                "format: type[Format] | None = None".into(),
            ],
            ret: "Tensor[DType, Format, Any]".into(),
        });
    }
    pyi_module_group(
        &mut out,
        "convolution_backward_data",
        "One call for people who just want `dx`: allocates it with shape `x_shape`\n\
         (`dtype` and `format` default to dy's), runs `algo` or, when it is None, the\n\
         library's default choice (`DefaultAlgo`: untimed, the same in every process for\n\
         a problem, cuDNN and GPU; measured once per problem on a handle with\n\
         `benchmark=True`), reuses the handle's workspace, returns `dx`.",
        &sigs,
    );
    // ruff's stub style: a blank line between the last definition and the end marker.
    out.push('\n');
    out
}

/// Writes `sigs` as overloads of a `Handle` method; the first carries the docstring.
fn pyi_group(out: &mut String, name: &str, doc: &str, sigs: &[PyiSig]) {
    pyi_overloads(out, "    ", name, Some("self"), doc, sigs);
}

/// Writes `sigs` as overloads of a module-level function.
fn pyi_module_group(out: &mut String, name: &str, doc: &str, sigs: &[PyiSig]) {
    pyi_overloads(out, "", name, None, doc, sigs);
}

fn pyi_overloads(
    out: &mut String,
    indent: &str,
    name: &str,
    receiver: Option<&str>,
    doc: &str,
    sigs: &[PyiSig],
) {
    for (i, sig) in sigs.iter().enumerate() {
        let _ = writeln!(out, "{indent}@overload");
        let _ = writeln!(out, "{indent}def {name}(");
        for p in receiver
            .into_iter()
            .chain(sig.params.iter().map(String::as_str))
        {
            write_param(out, indent, p);
        }
        if i == 0 {
            let _ = writeln!(out, "{indent}) -> {}:", sig.ret);
            let mut lines = doc.lines();
            let first = lines.next().unwrap_or_default();
            let rest: Vec<&str> = lines.collect();
            if rest.is_empty() {
                let _ = writeln!(out, "{indent}    \"\"\"{first}\"\"\"");
            } else {
                let _ = writeln!(out, "{indent}    \"\"\"{first}");
                for l in rest {
                    let _ = writeln!(out, "{indent}    {l}");
                }
                let _ = writeln!(out, "{indent}    \"\"\"");
            }
            // ruff's stub style: a module-level function with a body is followed by
            // a blank line.
            if indent.is_empty() {
                out.push('\n');
            }
        } else {
            let _ = writeln!(out, "{indent}) -> {}: ...", sig.ret);
        }
    }
}

/// Writes one parameter line; a union too long for ruff's 88 columns is split before
/// each `|`, as `ruff format` splits it.
fn write_param(out: &mut String, indent: &str, param: &str) {
    const WIDTH: usize = 88;
    if indent.len() + 4 + param.len() < WIDTH || param.contains(" = ") {
        let _ = writeln!(out, "{indent}    {param},");
        return;
    }
    let mut parts = param.split(" | ");
    let _ = writeln!(out, "{indent}    {}", parts.next().unwrap_or_default());
    let rest: Vec<&str> = parts.collect();
    for (i, part) in rest.iter().enumerate() {
        let comma = if i + 1 == rest.len() { "," } else { "" };
        let _ = writeln!(out, "{indent}    | {part}{comma}");
    }
}
