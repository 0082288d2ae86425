//! The type checker: every node of a parsed expression gets a type from the declared
//! variables and functions, as cel-go's checker decides it (overloads resolved by
//! assignability with type parameters, comprehension scopes, homogeneous literals), and each
//! problem becomes an error at the node's position with cel-go's wording.

use crate::stdlib::{type_ident, Function, Overload, FUNCTIONS};
use crate::types::{most_general, Mapping, Type};
use crate::Env;
use cel::common::ast::{operators, EntryExpr, Expr, IdedExpr, LiteralValue};
use std::collections::HashMap;

pub struct Checker<'e> {
    env: &'e Env,
    scopes: Vec<HashMap<String, Type>>,
    types: HashMap<u64, Type>,
    mapping: Mapping,
    fresh: usize,
    /// (expression id, message)
    pub errors: Vec<(u64, String)>,
    /// Each call as resolved: the function (a namespaced one's full name) and the overloads
    /// its arguments matched, as cel-go's reference map records them (the cost estimator
    /// prices each).
    pub calls: HashMap<u64, Call>,
}

/// A call as the checker resolved it.
#[derive(Clone, Debug)]
pub struct Call {
    pub name: String,
    /// Called on a target (`s.contains(x)`), not as a namespaced global (`sets.contains`).
    pub member: bool,
    /// Empty for loosely declared functions and the logical operators.
    pub overloads: Vec<&'static Overload>,
}

impl<'e> Checker<'e> {
    pub fn new(env: &'e Env) -> Self {
        Checker {
            env,
            scopes: Vec::new(),
            types: HashMap::new(),
            mapping: Mapping::default(),
            fresh: 0,
            errors: Vec::new(),
            calls: HashMap::new(),
        }
    }

    /// The expression's type once checked, free parameters as `dyn`.
    pub fn check_root(&mut self, e: &IdedExpr) -> Type {
        self.check(e);
        self.mapping.substitute(&self.ty(e), true)
    }

    /// Every checked node's type, its free parameters as `dyn`.
    pub fn final_types(&self) -> HashMap<u64, Type> {
        self.types
            .iter()
            .map(|(id, t)| (*id, self.mapping.substitute(t, true)))
            .collect()
    }

    fn ty(&self, e: &IdedExpr) -> Type {
        self.types.get(&e.id).cloned().unwrap_or(Type::Error)
    }

    fn set(&mut self, e: &IdedExpr, t: Type) {
        self.types.insert(e.id, t);
    }

    fn error(&mut self, id: u64, msg: String) {
        self.errors.push((id, msg));
    }

    fn undeclared(&mut self, id: u64, name: &str) {
        self.error(
            id,
            format!("undeclared reference to '{name}' (in container '')"),
        );
    }

    fn mismatch(&mut self, id: u64, expected: &Type, found: &Type) {
        self.error(
            id,
            format!("expected type '{expected}' but found '{found}'"),
        );
    }

    fn fresh_param(&mut self) -> Type {
        self.fresh += 1;
        Type::Param(format!("_var{}", self.fresh - 1))
    }

    fn lookup_ident(&self, name: &str) -> Option<Type> {
        for scope in self.scopes.iter().rev() {
            if let Some(t) = scope.get(name) {
                return Some(t.clone());
            }
        }
        self.env
            .variables
            .get(name)
            .cloned()
            .or_else(|| type_ident(name))
    }

    fn check(&mut self, e: &IdedExpr) {
        match &e.expr {
            Expr::Unspecified => self.set(e, Type::Error),
            Expr::Literal(l) => {
                let t = match l {
                    LiteralValue::Boolean(_) => Type::Bool,
                    LiteralValue::Bytes(_) => Type::Bytes,
                    LiteralValue::Double(_) => Type::Double,
                    LiteralValue::Int(_) => Type::Int,
                    LiteralValue::Null => Type::Null,
                    LiteralValue::String(_) => Type::String,
                    LiteralValue::UInt(_) => Type::Uint,
                };
                self.set(e, t)
            }
            Expr::Ident(name) => match self.lookup_ident(name) {
                Some(t) => self.set(e, t),
                None => {
                    self.undeclared(e.id, name);
                    self.set(e, Type::Error)
                }
            },
            Expr::Select(sel) => {
                if !sel.test {
                    if let Some(t) =
                        qualified_name(e).and_then(|q| self.env.variables.get(&q).cloned())
                    {
                        return self.set(e, t);
                    }
                }
                let t = self.select_field(e.id, &sel.operand, &sel.field, false);
                let t = if sel.test { Type::Bool } else { t };
                let t = self.mapping.substitute(&t, false);
                self.set(e, t)
            }
            Expr::Call(call) => {
                self.check_call(e, &call.func_name, call.target.as_deref(), &call.args)
            }
            Expr::List(list) => {
                let mut elem: Option<Type> = None;
                for (i, item) in list.elements.iter().enumerate() {
                    self.check(item);
                    let mut t = self.ty(item);
                    if list.optional_indices.contains(&i) {
                        match t.unwrap_optional() {
                            Some(inner) => t = inner.clone(),
                            None if !t.is_dyn() => {
                                self.mismatch(item.id, &Type::optional(t.clone()), &t)
                            }
                            None => {}
                        }
                    }
                    elem = Some(self.join(item.id, elem, t));
                }
                let elem = elem.unwrap_or_else(|| self.fresh_param());
                self.set(e, Type::list(elem))
            }
            Expr::Map(map) => {
                let (mut key, mut value): (Option<Type>, Option<Type>) = (None, None);
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(m) = &entry.expr {
                        self.check(&m.key);
                        key = Some(self.join(m.key.id, key, self.ty(&m.key)));
                        self.check(&m.value);
                        let mut t = self.ty(&m.value);
                        if m.optional {
                            match t.unwrap_optional() {
                                Some(inner) => t = inner.clone(),
                                None if !t.is_dyn() => {
                                    self.mismatch(m.value.id, &Type::optional(t.clone()), &t)
                                }
                                None => {}
                            }
                        }
                        value = Some(self.join(m.value.id, value, t));
                    }
                }
                let t = match (key, value) {
                    (Some(k), Some(v)) => Type::map(k, v),
                    _ => Type::map(self.fresh_param(), self.fresh_param()),
                };
                self.set(e, t)
            }
            Expr::Struct(s) => {
                let fields = self.env.objects.get(&s.type_name).cloned();
                let Some(fields) = fields else {
                    self.undeclared(e.id, &s.type_name);
                    for entry in &s.entries {
                        if let EntryExpr::StructField(f) = &entry.expr {
                            self.check(&f.value);
                        }
                    }
                    return self.set(e, Type::Error);
                };
                self.set(e, Type::Object(s.type_name.clone()));
                for entry in &s.entries {
                    if let EntryExpr::StructField(f) = &entry.expr {
                        self.check(&f.value);
                        let value = self.ty(&f.value);
                        let field = match fields.get(&f.field) {
                            Some(t) => t.clone(),
                            None => {
                                self.error(entry.id, format!("undefined field '{}'", f.field));
                                Type::Error
                            }
                        };
                        if !self.mapping.assign(&field, &value) {
                            self.error(
                                entry.id,
                                format!(
                                    "expected type of field '{}' is '{field}' but provided type is '{value}'",
                                    f.field
                                ),
                            );
                        }
                    }
                }
            }
            Expr::Comprehension(c) => {
                self.check(&c.iter_range);
                self.check(&c.accu_init);
                let range = self.mapping.substitute(&self.ty(&c.iter_range), false);
                let accu = self.ty(&c.accu_init);
                self.scopes
                    .push(HashMap::from([(c.accu_var.clone(), accu.clone())]));
                let two = c.iter_var2.is_some();
                let (var, var2) = match &range {
                    Type::List(elem) if two => (Type::Int, (**elem).clone()),
                    Type::List(elem) => ((**elem).clone(), Type::Error),
                    Type::Map(k, v) => ((**k).clone(), (**v).clone()),
                    Type::Dyn | Type::Error | Type::Param(_) => {
                        self.mapping.assign(&Type::Dyn, &range);
                        (Type::Dyn, Type::Dyn)
                    }
                    other => {
                        self.error(
                            c.iter_range.id,
                            format!(
                                "expression of type '{other}' cannot be range of a comprehension (must be list, map, or dynamic)"
                            ),
                        );
                        (Type::Error, Type::Error)
                    }
                };
                let mut scope = HashMap::from([(c.iter_var.clone(), var)]);
                if let Some(v2) = &c.iter_var2 {
                    scope.insert(v2.clone(), var2);
                }
                self.scopes.push(scope);
                self.check(&c.loop_cond);
                self.assert(&c.loop_cond, &Type::Bool);
                self.check(&c.loop_step);
                self.assert(&c.loop_step, &accu);
                self.scopes.pop();
                self.check(&c.result);
                self.scopes.pop();
                let t = self.mapping.substitute(&self.ty(&c.result), false);
                self.set(e, t)
            }
        }
    }

    fn assert(&mut self, e: &IdedExpr, expected: &Type) {
        let found = self.ty(e);
        if !self.mapping.assign(expected, &found) {
            self.mismatch(e.id, expected, &found);
        }
    }

    /// Literal elements must share a type (upstream's environment makes aggregate literals
    /// homogeneous).
    fn join(&mut self, id: u64, previous: Option<Type>, current: Type) -> Type {
        let Some(previous) = previous else {
            return current;
        };
        if self.mapping.assign(&previous, &current) {
            return most_general(&previous, &current);
        }
        self.mismatch(id, &previous, &current);
        Type::Error
    }

    fn select_field(&mut self, id: u64, operand: &IdedExpr, field: &str, optional: bool) -> Type {
        self.check(operand);
        let operand_type = self.mapping.substitute(&self.ty(operand), false);
        let (target, was_optional) = match operand_type.unwrap_optional() {
            Some(inner) => (inner.clone(), true),
            None => (operand_type.clone(), false),
        };
        let result = match &target {
            Type::Map(_, v) => (**v).clone(),
            Type::Object(name) => match self.env.objects.get(name).and_then(|f| f.get(field)) {
                Some(t) => t.clone(),
                None => {
                    self.error(id, format!("undefined field '{field}'"));
                    Type::Error
                }
            },
            Type::Param(_) => {
                self.mapping.assign(&Type::Dyn, &target);
                Type::Dyn
            }
            other => {
                if !other.is_dyn_or_error() {
                    self.error(
                        id,
                        format!("type '{other}' does not support field selection"),
                    );
                }
                Type::Dyn
            }
        };
        if was_optional || optional {
            Type::optional(result)
        } else {
            result
        }
    }

    fn check_call(
        &mut self,
        e: &IdedExpr,
        name: &str,
        target: Option<&IdedExpr>,
        args: &[IdedExpr],
    ) {
        if name == operators::OPT_SELECT && target.is_none() && args.len() == 2 {
            let field = match &args[1].expr {
                Expr::Literal(LiteralValue::String(s)) => s.to_string(),
                _ => {
                    self.error(args[1].id, "unsupported optional field selection".into());
                    return self.set(e, Type::Error);
                }
            };
            let t = self.select_field(e.id, &args[0], &field, true);
            let t = self.mapping.substitute(&t, false);
            return self.set(e, t);
        }
        // A namespaced function (`sets.contains(...)`) is called on what parses as a target.
        if let Some(qualified) = target
            .and_then(qualified_name)
            .map(|q| format!("{q}.{name}"))
        {
            if FUNCTIONS.contains_key(&qualified) {
                return self.call(e, &qualified, None, args);
            }
        }
        self.call(e, name, target, args)
    }

    fn call(&mut self, e: &IdedExpr, name: &str, target: Option<&IdedExpr>, args: &[IdedExpr]) {
        let function: Option<&'static Function> = FUNCTIONS.get(name);
        self.calls.insert(
            e.id,
            Call {
                name: name.to_string(),
                member: target.is_some(),
                overloads: Vec::new(),
            },
        );
        if matches!(function, Some(Function::Unchecked)) {
            if let Some(t) = target {
                self.check(t);
            }
            return self.set(e, Type::Dyn);
        }
        for arg in args {
            self.check(arg);
        }
        if let Some(t) = target {
            self.check(t);
        }
        let overloads = match function {
            None => {
                self.undeclared(e.id, name);
                return self.set(e, Type::Error);
            }
            Some(Function::Loose | Function::Unchecked) => return self.set(e, Type::Dyn),
            Some(Function::Typed(overloads)) => overloads,
        };
        let mut arg_types: Vec<Type> = target.iter().map(|t| self.ty(t)).collect();
        arg_types.extend(args.iter().map(|a| self.ty(a)));
        if name == operators::LOGICAL_AND || name == operators::LOGICAL_OR {
            let mut ok = true;
            for (arg, t) in args.iter().zip(&arg_types) {
                if !self.mapping.assign(&Type::Bool, t) {
                    self.mismatch(arg.id, &Type::Bool, t);
                    ok = false;
                }
            }
            return self.set(e, if ok { Type::Bool } else { Type::Error });
        }
        let mut result: Option<Type> = None;
        for overload in overloads.iter().filter(|o| o.member == target.is_some()) {
            // Fresh parameters for each overload tried.
            let mut fresh = HashMap::new();
            let params: Vec<Type> = overload
                .params
                .iter()
                .map(|p| rename_params(p, &mut fresh, self))
                .collect();
            let overload_result = rename_params(&overload.result, &mut fresh, self);
            if self.mapping.assign_all(&params, &arg_types) {
                if let Some(c) = self.calls.get_mut(&e.id) {
                    c.overloads.push(overload);
                }
                let t = self.mapping.substitute(&overload_result, false);
                result = Some(match result {
                    None => t,
                    Some(previous) if !previous.is_dyn() && previous != t => Type::Dyn,
                    Some(previous) => previous,
                });
            }
        }
        match result {
            Some(t) => self.set(e, t),
            None => {
                let shown: Vec<String> = arg_types
                    .iter()
                    .map(|t| self.mapping.substitute(t, true).to_string())
                    .collect();
                let signature = match target {
                    Some(_) => format!("{}.({})", shown[0], shown[1..].join(", ")),
                    None => format!("({})", shown.join(", ")),
                };
                self.error(
                    e.id,
                    format!("found no matching overload for '{name}' applied to '{signature}'"),
                );
                self.set(e, Type::Error)
            }
        }
    }
}

fn rename_params(t: &Type, fresh: &mut HashMap<String, Type>, checker: &mut Checker) -> Type {
    match t {
        Type::Param(p) => {
            if let Some(v) = fresh.get(p) {
                return v.clone();
            }
            let v = checker.fresh_param();
            fresh.insert(p.clone(), v.clone());
            v
        }
        Type::List(e) => Type::list(rename_params(e, fresh, checker)),
        Type::Map(k, v) => Type::map(
            rename_params(k, fresh, checker),
            rename_params(v, fresh, checker),
        ),
        Type::TypeOf(Some(p)) => Type::TypeOf(Some(Box::new(rename_params(p, fresh, checker)))),
        Type::Opaque(n, ps) => Type::Opaque(
            n.clone(),
            ps.iter()
                .map(|p| rename_params(p, fresh, checker))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `a.b.c` as a dotted name, if the expression is only identifiers and selections.
fn qualified_name(e: &IdedExpr) -> Option<String> {
    match &e.expr {
        Expr::Ident(name) => Some(name.clone()),
        Expr::Select(sel) if !sel.test => {
            qualified_name(&sel.operand).map(|q| format!("{q}.{}", sel.field))
        }
        _ => None,
    }
}
