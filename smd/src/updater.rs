//! Field ownership, as upstream's `merge.Updater`.
//!
//! Managers are keyed as managedFields entries are identified upstream: by manager name,
//! operation and subresource, plus the API version for Update entries only (an applier keeps
//! one entry whatever version it applies with). Each holds the set of fields it owns and the
//! version that set is expressed in.
//!
//! - [`Updater::update`]: an Update operation (create, update, non-apply patch) takes every
//!   field it added or changed; other managers lose those fields and the fields it removed;
//!   it never conflicts (Apply rule 4).
//! - [`Updater::apply`]: merges the applied configuration into the live object (rule 8),
//!   the applier owns exactly the configuration's fields, fields it applied before and no
//!   longer applies are removed when no other manager owns them (rules 7, 8), a change to a
//!   field another manager owns is a conflict unless forced, in which case that manager loses
//!   it (rules 4, 5, 6).
//! - Both drop a manager left owning nothing (rule 13), and first reconcile every set with
//!   the schema, so a container that became atomic is owned whole by whoever owned parts of it
//!   (rule 11).
//!
//! - Fields given to [`Updater::with_ignored`] (upstream's reset fields, e.g. `status` on
//!   the main resource) are never gained, lost or conflicted on.
//!
//! Not done: converting managers' sets between API versions (every set is taken to be in the
//! object's version); reset fields therefore come as one set, not one per version.

use crate::fieldpath::{Path, Set};
use crate::schema::{Schema, TypeRef};
use crate::typed::{self, TypedError};
use crate::value::{go_quote, write_go_json_string};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt;

/// `Apply` or `Update`, as in a managedFields entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
    Apply,
    Update,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// Identifies a manager, as upstream's manager identifier does. Build it with
/// [`ManagerKey::apply`] or [`ManagerKey::update`] so that an Apply key carries no version.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ManagerKey {
    pub manager: String,
    pub operation: Operation,
    /// Empty for Apply.
    pub api_version: String,
    /// Empty for the main resource.
    pub subresource: String,
}

impl ManagerKey {
    pub fn apply(manager: impl Into<String>, subresource: impl Into<String>) -> ManagerKey {
        ManagerKey {
            manager: manager.into(),
            operation: Operation::Apply,
            api_version: String::new(),
            subresource: subresource.into(),
        }
    }

    pub fn update(
        manager: impl Into<String>,
        api_version: impl Into<String>,
        subresource: impl Into<String>,
    ) -> ManagerKey {
        ManagerKey {
            manager: manager.into(),
            operation: Operation::Update,
            api_version: api_version.into(),
            subresource: subresource.into(),
        }
    }

    /// Upstream's identifier string: the managedFields entry without time and fields, as
    /// Go's encoder writes it (`{"manager":"m","operation":"Update","apiVersion":"v1"}`).
    /// Managers sort by it in conflict messages.
    pub fn identifier(&self) -> String {
        let mut out = String::from("{\"manager\":");
        write_go_json_string(&mut out, &self.manager);
        out.push_str(",\"operation\":\"");
        out.push_str(self.operation.as_str());
        out.push('"');
        if !self.api_version.is_empty() {
            out.push_str(",\"apiVersion\":");
            write_go_json_string(&mut out, &self.api_version);
        }
        if !self.subresource.is_empty() {
            out.push_str(",\"subresource\":");
            write_go_json_string(&mut out, &self.subresource);
        }
        out.push('}');
        out
    }
}

impl Ord for ManagerKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.identifier().cmp(&other.identifier())
    }
}

impl PartialOrd for ManagerKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// How upstream names a manager in conflict messages: `"name"`, plus
/// ` with subresource "s"`, plus ` using <apiVersion>` for an Update manager.
impl fmt::Display for ManagerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", go_quote(&self.manager))?;
        if !self.subresource.is_empty() {
            write!(f, " with subresource {}", go_quote(&self.subresource))?;
        }
        if self.operation == Operation::Update {
            write!(f, " using {}", self.api_version)?;
        }
        Ok(())
    }
}

/// The fields one manager owns, in the version they are expressed in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManagedSet {
    pub set: Set,
    pub api_version: String,
}

/// Every manager of an object.
pub type Managers = BTreeMap<ManagerKey, ManagedSet>;

/// Another manager's field that an apply would change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    pub manager: ManagerKey,
    pub path: Path,
}

/// The conflicts of one apply, grouped by manager in identifier order, each manager's paths
/// in set order.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Conflicts(pub Vec<Conflict>);

impl Conflicts {
    fn from_sets(sets: &BTreeMap<ManagerKey, Set>) -> Conflicts {
        let mut out = Vec::new();
        for (manager, set) in sets {
            for path in set.paths() {
                out.push(Conflict {
                    manager: manager.clone(),
                    path,
                });
            }
        }
        Conflicts(out)
    }

    /// The Status message upstream builds:
    /// `Apply failed with 1 conflict: conflict with "m" using apps/v1: .spec.replicas`, or
    /// `Apply failed with N conflicts: conflicts with "m":\n- .a\n- .b` per manager.
    pub fn message(&self) -> String {
        if let [only] = self.0.as_slice() {
            return format!(
                "Apply failed with 1 conflict: conflict with {}: {}",
                only.manager, only.path
            );
        }
        let mut lines = Vec::new();
        let mut current: Option<&ManagerKey> = None;
        for c in &self.0 {
            if current != Some(&c.manager) {
                lines.push(format!("conflicts with {}:", c.manager));
                current = Some(&c.manager);
            }
            lines.push(format!("- {}", c.path));
        }
        format!(
            "Apply failed with {} conflicts: {}",
            self.0.len(),
            lines.join("\n")
        )
    }

    /// The 409 Status upstream answers with: reason `Conflict`, one `FieldManagerConflict`
    /// cause per conflict (message `conflict with <manager>`, field the path string).
    pub fn to_status(&self) -> Value {
        let causes: Vec<Value> = self
            .0
            .iter()
            .map(|c| {
                json!({
                    "reason": "FieldManagerConflict",
                    "message": format!("conflict with {}", c.manager),
                    "field": c.path.to_string(),
                })
            })
            .collect();
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message(),
            "reason": "Conflict",
            "details": {"causes": causes},
            "code": 409,
        })
    }
}

impl fmt::Display for Conflicts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

/// Why an update or apply failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApplyError {
    /// The apply changes fields other managers own (not forced).
    Conflicts(Conflicts),
    /// An object does not fit the schema.
    Typed(TypedError),
}

impl fmt::Display for ApplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApplyError::Conflicts(c) => c.fmt(f),
            ApplyError::Typed(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ApplyError {}

impl From<TypedError> for ApplyError {
    fn from(e: TypedError) -> ApplyError {
        ApplyError::Typed(e)
    }
}

/// The outcome of an apply.
#[derive(Clone, Debug, PartialEq)]
pub struct Applied {
    /// The object to persist.
    pub object: Value,
    /// Whether it differs from the live object (upstream returns no object when it does not).
    pub changed: bool,
    pub managers: Managers,
}

/// Whether every path of `b` is in `a`.
fn contains_all(a: &Set, b: &Set) -> bool {
    b.members.iter().all(|pe| a.members.contains(pe))
        && b.children()
            .all(|(pe, bc)| a.child(pe).is_some_and(|ac| contains_all(ac, bc)))
}

/// Computes ownership for one object type: the schema and the root type of the objects.
#[derive(Clone, Copy, Debug)]
pub struct Updater<'s> {
    pub schema: &'s Schema,
    pub root: &'s TypeRef,
    /// Fields (and everything below them) no manager gains or loses.
    pub ignored: Option<&'s Set>,
    /// Whether managers' sets are first reconciled with the schema (rule 11). Sets this
    /// updater wrote itself with the same schema need not be.
    pub reconcile: bool,
}

impl<'s> Updater<'s> {
    pub fn new(schema: &'s Schema, root: &'s TypeRef) -> Updater<'s> {
        Updater {
            schema,
            root,
            ignored: None,
            reconcile: true,
        }
    }

    /// The same updater, trusting managers' sets to fit the schema already (they were
    /// computed against this very schema).
    pub fn without_reconcile(self) -> Updater<'s> {
        Updater {
            reconcile: false,
            ..self
        }
    }

    /// The same updater, ignoring `fields` (upstream's reset fields of a resource or
    /// subresource, applied as an exclude filter).
    pub fn with_ignored(self, fields: &'s Set) -> Updater<'s> {
        Updater {
            ignored: Some(fields),
            ..self
        }
    }

    fn filter(&self, mut set: Set) -> Set {
        if let Some(ignored) = self.ignored {
            set.remove_recursive(ignored);
        }
        set
    }

    /// What an Update from `live` to `new` changes, without ignored fields (compare only:
    /// a caller may skip [`Updater::update_compared`] when nothing changed).
    pub fn compare(&self, live: &Value, new: &Value) -> Result<typed::Comparison, TypedError> {
        match self.ignored {
            Some(ignored) => typed::compare_skipping(self.schema, self.root, live, new, ignored),
            None => typed::compare(self.schema, self.root, live, new),
        }
    }

    /// Records an Update operation by `manager` that turned `live` into `new` (`live` is
    /// `{}` for a create): the manager gains what it added or changed and loses what it
    /// removed; every other manager loses what was changed or removed.
    pub fn update(
        &self,
        live: &Value,
        new: &Value,
        api_version: &str,
        managers: Managers,
        manager: &ManagerKey,
    ) -> Result<Managers, TypedError> {
        let cmp = self.compare(live, new)?;
        self.update_compared(cmp, api_version, managers, manager)
    }

    /// [`Updater::update`] with the comparison of the two objects already made
    /// ([`Updater::compare`]).
    pub fn update_compared(
        &self,
        cmp: typed::Comparison,
        api_version: &str,
        managers: Managers,
        manager: &ManagerKey,
    ) -> Result<Managers, TypedError> {
        let mut managers = self.reconcile(managers)?;
        // An Update never conflicts: it takes what it changed.
        let clashes = Self::clashes(&cmp, &managers, manager);
        Self::take_changes(&mut managers, manager, &cmp, &clashes);
        let set = match managers.remove(manager) {
            Some(mine) => {
                let mut set = mine.set;
                set.remove(&cmp.removed);
                set.union_with(&cmp.modified);
                set.union_with(&cmp.added);
                set
            }
            // A new manager (every create): take the changes as they are.
            None => {
                let mut set = cmp.added;
                set.union_with(&cmp.modified);
                set
            }
        };
        let set = self.filter(set);
        if !set.is_empty() {
            managers.insert(
                manager.clone(),
                ManagedSet {
                    set,
                    api_version: api_version.to_string(),
                },
            );
        }
        Ok(managers)
    }

    /// Applies `config` by `manager` to `live` (`{}` when the apply creates the object).
    pub fn apply(
        &self,
        live: &Value,
        config: &Value,
        api_version: &str,
        managers: Managers,
        manager: &ManagerKey,
        force: bool,
    ) -> Result<Applied, ApplyError> {
        let mut managers = self.reconcile(managers)?;
        let merged = typed::merge(self.schema, self.root, live, config)?;
        let last = managers.get(manager).map(|m| m.set.clone());
        let set = self.filter(typed::to_field_set(self.schema, self.root, config)?);
        managers.insert(
            manager.clone(),
            ManagedSet {
                set,
                api_version: api_version.to_string(),
            },
        );
        // Pruning removes what the applier applied last time and not now: nothing when
        // this configuration sets everything the last one did (a repeated apply).
        let object = match last {
            Some(last) if !last.is_empty() && !contains_all(&managers[manager].set, &last) => {
                self.prune(merged, &managers, &last)?
            }
            _ => merged,
        };
        let (cmp, clashes) = self.changes(live, &object, &managers, manager)?;
        if !force && !clashes.is_empty() {
            return Err(ApplyError::Conflicts(Conflicts::from_sets(&clashes)));
        }
        Self::take_changes(&mut managers, manager, &cmp, &clashes);
        let changed = !crate::value::equals(live, &object);
        Ok(Applied {
            object,
            changed,
            managers,
        })
    }

    /// Upstream's `reconcileManagedFieldsWithSchemaChanges` (rule 11).
    fn reconcile(&self, mut managers: Managers) -> Result<Managers, TypedError> {
        if !self.reconcile {
            return Ok(managers);
        }
        for owned in managers.values_mut() {
            if let Some(set) =
                typed::reconcile_field_set_with_schema(&owned.set, self.schema, self.root)?
            {
                owned.set = set;
            }
        }
        Ok(managers)
    }

    /// Upstream's `update`, first half: what changed from `old` to `new` (without ignored
    /// fields), and which other managers own some of the added or modified fields.
    fn changes(
        &self,
        old: &Value,
        new: &Value,
        managers: &Managers,
        manager: &ManagerKey,
    ) -> Result<(typed::Comparison, BTreeMap<ManagerKey, Set>), TypedError> {
        let cmp = self.compare(old, new)?;
        let clashes = Self::clashes(&cmp, managers, manager);
        Ok((cmp, clashes))
    }

    /// The fields other managers own that `cmp` adds or modifies, per manager.
    fn clashes(
        cmp: &typed::Comparison,
        managers: &Managers,
        manager: &ManagerKey,
    ) -> BTreeMap<ManagerKey, Set> {
        let others = managers.keys().any(|key| key != manager);
        if !others || (cmp.modified.is_empty() && cmp.added.is_empty()) {
            return BTreeMap::new();
        }
        let changed = cmp.modified.union(&cmp.added);
        managers
            .iter()
            .filter(|(key, _)| *key != manager)
            .filter(|(_, owned)| owned.set.intersects(&changed))
            .map(|(key, owned)| (key.clone(), owned.set.intersection(&changed)))
            .collect()
    }

    /// Upstream's `update`, second half: other managers lose the fields that changed under
    /// them and the removed fields; managers left with nothing are dropped.
    fn take_changes(
        managers: &mut Managers,
        manager: &ManagerKey,
        cmp: &typed::Comparison,
        clashes: &BTreeMap<ManagerKey, Set>,
    ) {
        for (key, owned) in managers.iter_mut() {
            if key == manager {
                continue;
            }
            if let Some(clash) = clashes.get(key) {
                owned.set.remove(clash);
            }
            owned.set.remove(&cmp.removed);
        }
        managers.retain(|_, m| !m.set.is_empty());
    }

    /// Removes what the applier applied last time and not this time, unless another
    /// manager (or the new configuration) still owns it (upstream's `prune` with
    /// `addBackOwnedItems` and `addBackDanglingItems`).
    fn prune(&self, merged: Value, managers: &Managers, last: &Set) -> Result<Value, TypedError> {
        let (schema, root) = (self.schema, self.root);
        let named = |s: &Set| typed::ensure_named_fields_are_members(s, schema, root);
        let pruned = typed::remove_items(schema, root, &merged, &named(last));

        // Add back what any manager (including this apply's configuration) owns.
        let owned = managers
            .values()
            .fold(Set::new(), |acc, m| acc.union(&m.set));
        let merged_set = named(&typed::to_field_set(schema, root, &merged)?);
        let pruned_set = named(&typed::to_field_set(schema, root, &pruned)?);
        let drop = merged_set.difference(&pruned_set.union(&named(&owned)));
        let pruned = typed::remove_items(schema, root, &merged, &drop);

        // Only what this applier owned last time may go; anything else removed as a side
        // effect (unowned, or owned by updaters only) comes back.
        let pruned_set = named(&typed::to_field_set(schema, root, &pruned)?);
        let drop = merged_set
            .difference(&pruned_set)
            .intersection(&named(last));
        Ok(typed::remove_items(schema, root, &merged, &drop))
    }
}
