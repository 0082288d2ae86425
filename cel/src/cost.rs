//! Static cost estimation of a checked expression, as cel-go's `checker.Cost` computes it
//! with the cost estimator upstream's API server installs (`k8s.io/apiserver/pkg/cel/library`
//! `CostEstimator`, whose sizes come from the schema: [`Sizes`]) and the estimators of the
//! extension libraries upstream enables (sets). The result is a range of cost units; CRD
//! validation compares its maximum with upstream's limits.
//!
//! The walk follows cel-go's: each node costs what evaluating it once costs (an identifier or
//! a selection on a map or object 1, a literal 0, a presence test 0 as upstream configures it,
//! a list literal 10, a map literal 30, an object literal 40, a call 1 unless its function is
//! priced by the sizes of its arguments), a comprehension its range, initializer and result
//! plus the range's size times one step and condition. Sizes (of strings, bytes, lists, maps)
//! come from literals, from what a call is known to return, or from the schema through the
//! path of field names, `@items`, `@keys` and `@values` that leads to a node from a variable.
//!
//! Not priced as upstream prices them: the lists extension's `slice`, `flatten`, `sort`,
//! `distinct`, `reverse` and `lists.range` (each costs 1 plus its arguments here; upstream
//! prices them by list size), and the macros the parser does not expand (`optMap`,
//! `optFlatMap`, `sortBy`: 1 plus their arguments).

use crate::check::Call;
use crate::stdlib::Overload;
use crate::types::Type;
use cel::common::ast::{operators, EntryExpr, Expr, IdedExpr, LiteralValue};
use std::collections::HashMap;

/// A range of sizes or costs; arithmetic saturates at `u64::MAX` (cel-go's "no overflow").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Estimate {
    pub min: u64,
    pub max: u64,
}

/// cel-go's `StringTraversalCostFactor`: the cost of visiting one character.
const STRING_TRAVERSAL_FACTOR: f64 = 0.1;
/// cel-go's `RegexStringLengthCostFactor`: a guess of one regex state per 4 pattern characters.
const REGEX_LENGTH_FACTOR: f64 = 0.25;
const SELECT_AND_IDENT_COST: u64 = 1;
const LIST_CREATE_BASE_COST: u64 = 10;
const MAP_CREATE_BASE_COST: u64 = 30;
const STRUCT_CREATE_BASE_COST: u64 = 40;
/// Upstream's fixed cost of an authorization check (two fit one expression's limit).
const AUTHZ_CHECK_COST: u64 = 350_000;

/// The accumulator names of the macros' comprehensions (this parser's and cel-go's).
const ACCUMULATORS: &[&str] = &["@result", "__result__"];

impl Estimate {
    pub const UNKNOWN: Estimate = Estimate {
        min: 0,
        max: u64::MAX,
    };

    pub fn fixed(n: u64) -> Self {
        Estimate { min: n, max: n }
    }

    fn add(self, o: Estimate) -> Self {
        Estimate {
            min: self.min.saturating_add(o.min),
            max: self.max.saturating_add(o.max),
        }
    }

    fn mul(self, o: Estimate) -> Self {
        Estimate {
            min: self.min.saturating_mul(o.min),
            max: self.max.saturating_mul(o.max),
        }
    }

    /// Each bound times `factor`, rounded up (cel-go's `MultiplyByCostFactor`).
    fn factor(self, factor: f64) -> Self {
        Estimate {
            min: mul_factor(self.min, factor),
            max: mul_factor(self.max, factor),
        }
    }

    fn union(self, o: Estimate) -> Self {
        Estimate {
            min: self.min.min(o.min),
            max: self.max.max(o.max),
        }
    }
}

fn mul_factor(x: u64, factor: f64) -> u64 {
    let xf = x as f64;
    if xf > 0.0 && factor > 0.0 && xf > u64::MAX as f64 / factor {
        return u64::MAX;
    }
    let ceil = (xf * factor).ceil();
    if ceil >= 18_446_744_073_709_551_616.0 {
        return u64::MAX;
    }
    ceil as u64
}

/// What the schema says of a variable's largest sizes, shaped as upstream's `DeclType`:
/// `max_elements` is a string's or bytes' length (a string's `maxLength` times 4, its bytes),
/// a list's items or a map's entries; objects and scalars have 0. A node a path reaches has
/// size `0..=max_elements`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sizes {
    pub max_elements: u64,
    pub fields: HashMap<String, Sizes>,
    /// A list's items or a map's values.
    pub elem: Option<Box<Sizes>>,
    /// A map's keys.
    pub key: Option<Box<Sizes>>,
}

impl Sizes {
    /// upstream's `sizeEstimator.EstimateSize`: the first path element (the variable) is
    /// skipped, every variable being typed from the same schema node.
    fn at(&self, path: &[String]) -> Option<Estimate> {
        let mut node = self;
        for step in path.iter().skip(1) {
            node = match step.as_str() {
                "@items" | "@values" => node.elem.as_deref()?,
                "@keys" => node.key.as_deref()?,
                field => node.fields.get(field)?,
            };
        }
        Some(Estimate {
            min: 0,
            max: node.max_elements,
        })
    }
}

#[derive(Clone, Copy, Debug)]
struct EntrySize {
    list: bool,
    key: Estimate,
    val: Estimate,
}

impl EntrySize {
    fn union(a: Option<EntrySize>, b: Option<EntrySize>) -> Option<EntrySize> {
        let (a, b) = (a?, b?);
        Some(EntrySize {
            list: a.list,
            key: a.key.union(b.key),
            val: a.val.union(b.val),
        })
    }
}

struct LocalVar {
    path: Vec<String>,
    size: Option<Estimate>,
    entry: Option<EntrySize>,
}

/// A call's argument or target as the function estimators see it (cel-go's `AstNode`).
struct Node {
    path: Vec<String>,
    ty: Type,
    computed: Option<Estimate>,
    /// The value of an int literal (`split`'s limit).
    literal_int: Option<i64>,
}

/// How a matched overload is priced (cel-go's overload ids that have their own estimate).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Other,
    FormatString,
    StringToBytes,
    BytesToString,
    QuoteString,
    StartsOrEndsWith,
    InList,
    Matches,
    ContainsString,
    Logical,
    Conditional,
    AddStringOrBytes,
    AddList,
    CompareSized,
    IndexList,
    IndexMap,
    Sets(u8),
    ContainsIpString,
    ContainsCidrString,
}

fn kind(name: &str, member: bool, o: Option<&Overload>) -> Kind {
    let p = |i: usize| o.and_then(|o| o.params.get(i));
    let is = |i: usize, t: Type| p(i) == Some(&t);
    let list_at = |i: usize| matches!(p(i), Some(Type::List(_)));
    let map_at = |i: usize| matches!(p(i), Some(Type::Map(..)));
    match name {
        operators::LOGICAL_AND | operators::LOGICAL_OR => Kind::Logical,
        operators::CONDITIONAL => Kind::Conditional,
        "format" if member => Kind::FormatString,
        "bytes" if is(0, Type::String) => Kind::StringToBytes,
        "string" if is(0, Type::Bytes) => Kind::BytesToString,
        "strings.quote" => Kind::QuoteString,
        "startsWith" | "endsWith" => Kind::StartsOrEndsWith,
        operators::IN if list_at(1) => Kind::InList,
        "matches" => Kind::Matches,
        "contains" if is(0, Type::String) => Kind::ContainsString,
        operators::ADD if is(0, Type::String) || is(0, Type::Bytes) => Kind::AddStringOrBytes,
        operators::ADD if list_at(0) => Kind::AddList,
        operators::EQUALS | operators::NOT_EQUALS => Kind::CompareSized,
        operators::LESS
        | operators::LESS_EQUALS
        | operators::GREATER
        | operators::GREATER_EQUALS
            if (is(0, Type::String) && is(1, Type::String))
                || (is(0, Type::Bytes) && is(1, Type::Bytes)) =>
        {
            Kind::CompareSized
        }
        operators::INDEX if list_at(0) => Kind::IndexList,
        operators::INDEX if map_at(0) => Kind::IndexMap,
        "sets.contains" | "sets.intersects" => Kind::Sets(1),
        "sets.equivalent" => Kind::Sets(2),
        "containsIP" if is(1, Type::String) => Kind::ContainsIpString,
        "containsCIDR" if is(1, Type::String) => Kind::ContainsCidrString,
        _ => Kind::Other,
    }
}

pub(crate) struct Coster<'a> {
    types: &'a HashMap<u64, Type>,
    calls: &'a HashMap<u64, Call>,
    sizes: Option<&'a Sizes>,
    paths: HashMap<u64, Vec<String>>,
    locals: HashMap<String, Vec<LocalVar>>,
    computed: HashMap<u64, Estimate>,
    entries: HashMap<u64, EntrySize>,
}

impl<'a> Coster<'a> {
    pub(crate) fn new(
        types: &'a HashMap<u64, Type>,
        calls: &'a HashMap<u64, Call>,
        sizes: Option<&'a Sizes>,
    ) -> Self {
        Coster {
            types,
            calls,
            sizes,
            paths: HashMap::new(),
            locals: HashMap::new(),
            computed: HashMap::new(),
            entries: HashMap::new(),
        }
    }

    pub(crate) fn cost(&mut self, e: &IdedExpr) -> Estimate {
        match &e.expr {
            Expr::Literal(_) | Expr::Unspecified => Estimate::default(),
            Expr::Ident(name) => {
                let path = match self.peek(name) {
                    Some(v) => v.path.clone(),
                    None => vec![name.clone()],
                };
                self.paths.insert(e.id, path);
                Estimate::fixed(SELECT_AND_IDENT_COST)
            }
            Expr::Select(sel) => {
                // upstream prices a presence test at 0.
                let mut sum = self.cost(&sel.operand);
                if sel.test {
                    return sum;
                }
                if matches!(self.ty(&sel.operand), Type::Map(..) | Type::Object(_)) {
                    sum = sum.add(Estimate::fixed(SELECT_AND_IDENT_COST));
                }
                let mut path = self.path(&sel.operand);
                path.push(sel.field.clone());
                self.paths.insert(e.id, path);
                sum
            }
            Expr::Call(call) => self.call(e, &call.func_name, call.target.as_deref(), &call.args),
            Expr::List(list) => {
                let mut sum = Estimate::default();
                let mut item = Estimate {
                    min: if list.elements.is_empty() {
                        0
                    } else {
                        u64::MAX
                    },
                    max: 0,
                };
                for el in &list.elements {
                    sum = sum.add(self.cost(el));
                    item = item.union(self.size_or_unknown(el));
                }
                self.entries.insert(
                    e.id,
                    EntrySize {
                        list: true,
                        key: Estimate::fixed(1),
                        val: item,
                    },
                );
                sum.add(Estimate::fixed(LIST_CREATE_BASE_COST))
            }
            Expr::Map(map) => {
                let mut sum = Estimate::default();
                let start = if map.entries.is_empty() { 0 } else { u64::MAX };
                let mut key = Estimate { min: start, max: 0 };
                let mut val = key;
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(m) = &entry.expr {
                        sum = sum.add(self.cost(&m.key)).add(self.cost(&m.value));
                        key = key.union(self.size_or_unknown(&m.key));
                        val = val.union(self.size_or_unknown(&m.value));
                    }
                }
                self.entries.insert(
                    e.id,
                    EntrySize {
                        list: false,
                        key,
                        val,
                    },
                );
                sum.add(Estimate::fixed(MAP_CREATE_BASE_COST))
            }
            Expr::Struct(st) => {
                let mut sum = Estimate::default();
                for entry in &st.entries {
                    if let EntryExpr::StructField(f) = &entry.expr {
                        sum = sum.add(self.cost(&f.value));
                    }
                }
                sum.add(Estimate::fixed(STRUCT_CREATE_BASE_COST))
            }
            Expr::Comprehension(c) => {
                let is_bind = matches!(&c.iter_range.expr, Expr::List(l) if l.elements.is_empty())
                    && matches!(&c.loop_cond.expr, Expr::Literal(LiteralValue::Boolean(b)) if !bool::from(*b))
                    && !ACCUMULATORS.contains(&c.accu_var.as_str());
                if is_bind {
                    return self.bind(e, c);
                }
                self.comprehension(e, c)
            }
        }
    }

    fn bind(&mut self, e: &IdedExpr, c: &cel::common::ast::ComprehensionExpr) -> Estimate {
        // Binds are lazy: the empty range's cost is kept.
        let mut sum = self.cost(&c.iter_range).add(self.cost(&c.accu_init));
        self.push_local(&c.accu_var, &c.accu_init);
        sum = sum.add(self.cost(&c.result));
        self.pop(&c.accu_var);
        if let Some(s) = self.size(&c.result) {
            self.computed.insert(e.id, s);
        }
        if let Some(en) = self.entry(&c.result) {
            self.entries.insert(e.id, en);
        }
        sum
    }

    fn comprehension(&mut self, e: &IdedExpr, c: &cel::common::ast::ComprehensionExpr) -> Estimate {
        let mut sum = self.cost(&c.iter_range).add(self.cost(&c.accu_init));
        self.push_local(&c.accu_var, &c.accu_init);
        let range = &c.iter_range;
        let entry = self.entry(range);
        let list = match entry {
            Some(en) => en.list,
            None => matches!(self.ty(range), Type::List(_)),
        };
        let range_path = self.path(range);
        let with = |sub: &str| {
            let mut p = range_path.clone();
            p.push(sub.to_string());
            p
        };
        match &c.iter_var2 {
            Some(var2) => {
                let key_path = with(if list { "@indices" } else { "@keys" });
                let val_path = with(if list { "@items" } else { "@values" });
                self.push(&c.iter_var, key_path, entry.map(|en| en.key), None);
                self.push(var2, val_path, entry.map(|en| en.val), None);
            }
            None => {
                let (sub, size) = if list {
                    ("@items", entry.map(|en| en.val))
                } else {
                    ("@keys", entry.map(|en| en.key))
                };
                self.push(&c.iter_var, with(sub), size, None);
            }
        }
        let loop_cost = self.cost(&c.loop_cond);
        let step_cost = self.cost(&c.loop_step);
        self.pop(&c.iter_var);
        if let Some(var2) = &c.iter_var2 {
            self.pop(var2);
        }
        sum = sum.add(self.cost(&c.result));
        self.pop(&c.accu_var);
        let count = self.size_or_unknown(range);
        sum = sum.add(count.mul(step_cost.add(loop_cost)));
        match &c.accu_init.expr {
            Expr::Literal(_) => {
                if let Some(s) = self.size(&c.accu_init) {
                    self.computed.insert(e.id, s);
                }
            }
            Expr::List(_) | Expr::Map(_) => {
                self.computed.insert(e.id, count);
                if let Some(en) = self.entry(&c.loop_step) {
                    self.entries.insert(e.id, en);
                }
            }
            _ => {}
        }
        sum
    }

    fn call(
        &mut self,
        e: &IdedExpr,
        func: &str,
        target: Option<&IdedExpr>,
        args: &[IdedExpr],
    ) -> Estimate {
        let info = self.calls.get(&e.id);
        let name = info.map_or(func, |c| c.name.as_str()).to_string();
        let member = info.map_or(target.is_some(), |c| c.member);
        // `dyn` only disables type checking: 1 plus its argument, sized as the argument.
        if name == "dyn" && args.len() == 1 {
            let cost = self.cost(&args[0]);
            if let Some(s) = self.size(&args[0]) {
                self.computed.insert(e.id, s);
            }
            if let Some(en) = self.entry(&args[0]) {
                self.entries.insert(e.id, en);
            }
            return Estimate::fixed(1).add(cost);
        }
        let mut arg_costs = Vec::with_capacity(args.len());
        let mut arg_nodes = Vec::with_capacity(args.len());
        for a in args {
            arg_costs.push(self.cost(a));
            arg_nodes.push(self.node(a));
        }
        let mut sum = Estimate::default();
        let target = if member { target } else { None };
        let target_node = target.map(|t| {
            sum = sum.add(self.cost(t));
            self.node(t)
        });
        let overloads: Vec<Option<&'static Overload>> = match info {
            Some(c) if !c.overloads.is_empty() => c.overloads.iter().map(|o| Some(*o)).collect(),
            _ => vec![None],
        };
        let mut fn_cost = Estimate {
            min: u64::MAX,
            max: 0,
        };
        let mut result_size: Option<Estimate> = None;
        for o in overloads {
            let k = kind(&name, member, o);
            let (cost, size) = self.function_cost(
                e,
                &name,
                k,
                target_node.as_ref(),
                args,
                &arg_nodes,
                &arg_costs,
            );
            fn_cost = fn_cost.union(cost);
            if let Some(s) = size {
                result_size = Some(result_size.map_or(s, |r| r.union(s)));
            }
            if matches!(k, Kind::IndexList | Kind::IndexMap) && !args.is_empty() {
                result_size = self.entry(&args[0]).map(|en| en.val);
                let mut path = self.path(&args[0]);
                path.push(
                    if k == Kind::IndexList {
                        "@items"
                    } else {
                        "@values"
                    }
                    .into(),
                );
                self.paths.insert(e.id, path);
            }
            if result_size.is_none() {
                result_size = self.size(e);
            }
        }
        if let Some(s) = result_size {
            self.computed.insert(e.id, s);
        }
        sum.add(fn_cost)
    }

    #[allow(clippy::too_many_arguments)]
    fn function_cost(
        &mut self,
        e: &IdedExpr,
        name: &str,
        k: Kind,
        target: Option<&Node>,
        args: &[IdedExpr],
        nodes: &[Node],
        arg_costs: &[Estimate],
    ) -> (Estimate, Option<Estimate>) {
        let arg_sum = arg_costs
            .iter()
            .fold(Estimate::default(), |acc, c| acc.add(*c));
        // The extension libraries' own estimators come first (cel-go's overload estimators).
        if let (Kind::Sets(factor), [a, b]) = (k, nodes) {
            let cost = self
                .node_size(a)
                .mul(self.node_size(b))
                .factor(f64::from(factor))
                .add(Estimate::fixed(1));
            return (cost.add(arg_sum), None);
        }
        // Then upstream's library estimator, by function name.
        if let Some((cost, size)) = self.library_cost(name, k, target, nodes) {
            return (cost.add(arg_sum), size);
        }
        let size_of = |n: &Node| n.computed.unwrap_or(Estimate::UNKNOWN);
        let traversal = |s: Estimate| s.factor(STRING_TRAVERSAL_FACTOR);
        match (k, target, nodes) {
            (Kind::FormatString, Some(t), _) => (traversal(size_of(t)).add(arg_sum), None),
            (Kind::StringToBytes, _, [a]) => {
                let sz = size_of(a);
                let size = Estimate {
                    min: sz.min,
                    max: sz.max.saturating_mul(4),
                };
                (traversal(sz).add(arg_sum), Some(size))
            }
            (Kind::BytesToString, _, [a]) => {
                let sz = size_of(a);
                let size = Estimate {
                    min: sz.min / 4,
                    max: sz.max,
                };
                (traversal(sz).add(arg_sum), Some(size))
            }
            (Kind::QuoteString, _, [a]) => {
                let sz = size_of(a);
                let size = Estimate {
                    min: sz.min.saturating_add(2),
                    max: sz.max.saturating_mul(2).saturating_add(2),
                };
                (traversal(sz).add(arg_sum), Some(size))
            }
            (Kind::StartsOrEndsWith, _, [a]) => (traversal(size_of(a)).add(arg_sum), None),
            (Kind::InList, _, [_, list]) => (size_of(list).factor(1.0).add(arg_sum), None),
            (Kind::Matches, Some(t), [re]) => {
                let s = traversal(size_of(t).add(Estimate::fixed(1)));
                let r = size_of(re).factor(REGEX_LENGTH_FACTOR);
                (s.mul(r).add(arg_sum), None)
            }
            (Kind::ContainsString, Some(t), [sub]) => {
                let s = traversal(size_of(t)).mul(traversal(size_of(sub)));
                (s.add(arg_sum), None)
            }
            (Kind::Logical, _, _) if arg_costs.len() == 2 => {
                let (l, r) = (arg_costs[0], arg_costs[1]);
                // Short-circuiting: at least the left side.
                let cost = Estimate {
                    min: l.min,
                    max: l.add(r).max,
                };
                (cost, None)
            }
            (Kind::Conditional, _, [_, a, b]) => {
                let size = size_of(a).union(size_of(b));
                if let Some(en) = EntrySize::union(self.entry(&args[1]), self.entry(&args[2])) {
                    self.entries.insert(e.id, en);
                }
                let cost = arg_costs[0].add(arg_costs[1].union(arg_costs[2]));
                (cost, Some(size))
            }
            (Kind::AddStringOrBytes | Kind::AddList, _, [a, b]) => {
                let size = size_of(a).add(size_of(b));
                if let Some(en) = EntrySize::union(self.entry(&args[0]), self.entry(&args[1])) {
                    self.entries.insert(e.id, en);
                }
                if k == Kind::AddList {
                    // Concatenation is O(1); it is handled here for the size.
                    return (Estimate::fixed(1).add(arg_sum), Some(size));
                }
                (traversal(size).add(arg_sum), Some(size))
            }
            (Kind::CompareSized, _, [a, b]) => {
                let smallest_max = size_of(a).max.min(size_of(b).max);
                let cost = Estimate {
                    min: u64::from(smallest_max > 0),
                    max: smallest_max,
                };
                (traversal(cost).add(arg_sum), None)
            }
            _ => (Estimate::fixed(1).add(arg_sum), None),
        }
    }

    /// Upstream's `library.CostEstimator.EstimateCallCost` (without the arguments' costs).
    fn library_cost(
        &self,
        name: &str,
        k: Kind,
        target: Option<&Node>,
        nodes: &[Node],
    ) -> Option<(Estimate, Option<Estimate>)> {
        let traversal = |s: Estimate| s.factor(STRING_TRAVERSAL_FACTOR);
        let nominal = Some((Estimate::fixed(1), None));
        match name {
            "check" => Some((Estimate::fixed(AUTHZ_CHECK_COST), None)),
            "serviceAccount" | "path" | "group" | "resource" | "subresource" | "namespace"
            | "name" | "allowed" | "reason" | "error" | "errored" => nominal,
            "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf" => {
                let t = target?;
                match self.element_node(t) {
                    Some(el) => {
                        // One comparison per element, plus a traversal of string elements.
                        let mut per = Estimate::fixed(1);
                        if matches!(el.ty, Type::String | Type::Bytes) {
                            per = per.add(traversal(self.node_size(&el)));
                        }
                        Some((self.node_size(t).mul(per), None))
                    }
                    None => Some((traversal(self.node_size(t)), None)),
                }
            }
            "url" if nodes.len() == 1 && target.is_none() => {
                Some((traversal(self.node_size(&nodes[0])), None))
            }
            "lowerAscii" | "upperAscii" | "substring" | "trim" => {
                let sz = self.node_size(target?);
                Some((traversal(sz), Some(sz)))
            }
            "replace" if nodes.len() >= 2 => {
                let sz = self.node_size(target?);
                Some((
                    sz.factor(2.0 * STRING_TRAVERSAL_FACTOR),
                    Some(replace_size(
                        sz,
                        self.node_size(&nodes[0]),
                        self.node_size(&nodes[1]),
                    )),
                ))
            }
            "split" => {
                let sz = self.node_size(target?);
                // The worst case is a "" separator: every character an element.
                let mut max = sz.max;
                if nodes.len() > 1 {
                    if let Some(Ok(n)) = nodes[1].literal_int.map(u64::try_from) {
                        max = n;
                    }
                }
                Some((
                    sz.factor(2.0 * STRING_TRAVERSAL_FACTOR),
                    Some(Estimate { min: 0, max }),
                ))
            }
            "join" => {
                let t = target?;
                let list = self.node_size(t);
                let mut sz = match self.element_node(t) {
                    Some(el) => list.mul(self.node_size(&el)),
                    None => Estimate::default(),
                };
                if let Some(sep) = nodes.first() {
                    let separators = Estimate {
                        min: list.min.saturating_sub(1),
                        max: list.max.saturating_sub(1),
                    };
                    sz = sz.add(self.node_size(sep).mul(separators));
                }
                Some((traversal(sz), Some(sz)))
            }
            "find" | "findAll" if !nodes.is_empty() => {
                let sz = self.node_size(target?);
                let s = traversal(sz.add(Estimate::fixed(1)));
                let r = self.node_size(&nodes[0]).factor(REGEX_LENGTH_FACTOR);
                Some((
                    s.mul(r),
                    Some(Estimate {
                        min: 0,
                        max: sz.max,
                    }),
                ))
            }
            // Parsing a string is a traversal of it.
            "cidr" | "isIP" | "isCIDR" | "quantity" | "isQuantity" if !nodes.is_empty() => {
                Some((traversal(self.node_size(&nodes[0])), None))
            }
            // `cidr.ip()` reads a field; `ip(s)` parses `s`.
            "ip" if target.is_some() => nominal,
            "ip" if !nodes.is_empty() => Some((traversal(self.node_size(&nodes[0])), None)),
            // Parsing, then comparing with the original: two traversals.
            "ip.isCanonical" if !nodes.is_empty() => Some((
                self.node_size(&nodes[0])
                    .factor(2.0 * STRING_TRAVERSAL_FACTOR),
                None,
            )),
            "masked"
            | "prefixLength"
            | "family"
            | "isUnspecified"
            | "isLoopback"
            | "isLinkLocalMulticast"
            | "isLinkLocalUnicast" => nominal,
            "containsIP" | "containsCIDR" if !nodes.is_empty() => {
                target?;
                // Comparing two addresses of 4 or 16 bytes.
                let ip = Estimate { min: 4, max: 16 };
                let mut cost = traversal(ip.add(ip));
                if name == "containsCIDR" {
                    cost = cost.add(traversal(ip)).add(Estimate::fixed(1));
                }
                if matches!(k, Kind::ContainsIpString | Kind::ContainsCidrString) {
                    cost = cost.add(traversal(self.node_size(&nodes[0])));
                }
                Some((cost, None))
            }
            "sign" | "asInteger" | "isInteger" | "asApproximateFloat" | "isGreaterThan"
            | "isLessThan" | "compareTo" | "add" | "sub" => nominal,
            _ => None,
        }
    }

    /// The node of a list's elements (upstream's `listElementNode`): the first type parameter,
    /// with the path to the items when the list has one.
    fn element_node(&self, list: &Node) -> Option<Node> {
        let ty = match &list.ty {
            Type::List(e) => (**e).clone(),
            Type::Map(k, _) => (**k).clone(),
            Type::TypeOf(Some(t)) => (**t).clone(),
            Type::Opaque(_, ps) if !ps.is_empty() => ps[0].clone(),
            _ => return None,
        };
        let path = if list.path.is_empty() {
            Vec::new()
        } else {
            let mut p = list.path.clone();
            p.push("@items".into());
            p
        };
        Some(Node {
            path,
            ty,
            computed: None,
            literal_int: None,
        })
    }

    /// A node's size as upstream's library estimator sees it: computed, else from the schema.
    fn node_size(&self, n: &Node) -> Estimate {
        n.computed
            .or_else(|| self.schema_size(&n.path))
            .unwrap_or(Estimate::UNKNOWN)
    }

    fn schema_size(&self, path: &[String]) -> Option<Estimate> {
        if path.is_empty() {
            return None;
        }
        self.sizes?.at(path)
    }

    fn node(&mut self, e: &IdedExpr) -> Node {
        let mut path = self.path(e);
        if path
            .first()
            .is_some_and(|p| ACCUMULATORS.contains(&p.as_str()))
        {
            path.clear();
        }
        let literal_int = match &e.expr {
            Expr::Literal(LiteralValue::Int(i)) => Some(i64::from(*i)),
            _ => None,
        };
        Node {
            path,
            ty: self.ty(e),
            computed: self.size(e),
            literal_int,
        }
    }

    fn ty(&self, e: &IdedExpr) -> Type {
        self.types.get(&e.id).cloned().unwrap_or(Type::Dyn)
    }

    fn path(&self, e: &IdedExpr) -> Vec<String> {
        if let Expr::Ident(name) = &e.expr {
            if let Some(v) = self.peek(name) {
                return v.path.clone();
            }
        }
        self.paths.get(&e.id).cloned().unwrap_or_default()
    }

    fn peek(&self, name: &str) -> Option<&LocalVar> {
        self.locals.get(name).and_then(|s| s.last())
    }

    fn push(
        &mut self,
        name: &str,
        path: Vec<String>,
        size: Option<Estimate>,
        entry: Option<EntrySize>,
    ) {
        self.locals
            .entry(name.to_string())
            .or_default()
            .push(LocalVar { path, size, entry });
    }

    fn push_local(&mut self, name: &str, e: &IdedExpr) {
        let (path, size, entry) = (self.path(e), self.size(e), self.entry(e));
        self.push(name, path, size, entry);
    }

    fn pop(&mut self, name: &str) {
        if let Some(s) = self.locals.get_mut(name) {
            s.pop();
        }
    }

    fn size_or_unknown(&mut self, e: &IdedExpr) -> Estimate {
        self.size(e).unwrap_or(Estimate::UNKNOWN)
    }

    /// cel-go's `computeSize`: computed, a literal's, the schema's, a scalar type's, a local
    /// variable's.
    fn size(&mut self, e: &IdedExpr) -> Option<Estimate> {
        if let Some(s) = self.computed.get(&e.id) {
            return Some(*s);
        }
        if let Some(s) = literal_size(e) {
            return Some(s);
        }
        if let Some(s) = self.schema_size(&self.path(e)) {
            self.computed.insert(e.id, s);
            return Some(s);
        }
        if is_scalar(&self.ty(e)) {
            return Some(Estimate::fixed(1));
        }
        if let Expr::Ident(name) = &e.expr {
            return self.peek(name).and_then(|v| v.size);
        }
        None
    }

    fn entry(&self, e: &IdedExpr) -> Option<EntrySize> {
        if let Some(en) = self.entries.get(&e.id) {
            return Some(*en);
        }
        if let Expr::Ident(name) = &e.expr {
            return self.peek(name).and_then(|v| v.entry);
        }
        None
    }
}

/// The size `replace` gives (upstream's estimate): the most replacements of the shortest
/// match by the longest replacement, and the reverse for the minimum.
fn replace_size(sz: Estimate, from: Estimate, to: Estimate) -> Estimate {
    let (mut count, mut kept) = (Estimate::default(), Estimate::default());
    if from.min == 0 {
        count.max = if sz.max < u64::MAX {
            sz.max + 1
        } else {
            sz.max
        };
        kept.max = sz.max;
    } else if to.max <= from.min {
        kept.max = sz.max;
    } else {
        count.max = (sz.max as f64 / from.min as f64).ceil() as u64;
    }
    if from.max == 0 {
        count.min = if sz.min < u64::MAX {
            sz.min + 1
        } else {
            sz.min
        };
        kept.min = sz.min;
    } else if from.max <= to.min {
        kept.min = sz.min;
    } else {
        count.min = (sz.min as f64 / from.max as f64).ceil() as u64;
    }
    count.mul(to).add(kept)
}

fn literal_size(e: &IdedExpr) -> Option<Estimate> {
    let n = match &e.expr {
        Expr::Literal(l) => match l {
            LiteralValue::String(s) => s.chars().count() as u64,
            LiteralValue::Bytes(b) => b.len() as u64,
            _ => 1,
        },
        Expr::List(l) => l.elements.len() as u64,
        Expr::Map(m) => m.entries.len() as u64,
        _ => return None,
    };
    Some(Estimate::fixed(n))
}

/// Types of a constant size (not strings, bytes or containers).
fn is_scalar(t: &Type) -> bool {
    match t {
        Type::Bool | Type::Double | Type::Duration | Type::Int | Type::Timestamp | Type::Uint => {
            true
        }
        other => other.unwrap_optional().is_some_and(is_scalar),
    }
}
