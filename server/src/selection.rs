//! What a list, watch or deletecollection selects: label and field selectors (`Filter`), a
//! single name, and for watches how the selected events are encoded (`Selection`); plus the
//! rules turning a stored change into the event a watch sends (an object entering the
//! selection is ADDED, one leaving it DELETED).

use crate::custom::Custom;
use crate::objects;
use crate::repr::{Encoder, Format};
use keel_api::selectors::{FieldSelector, LabelSelector};
use keel_api::status::ApiError;
use keel_engine::{Event, EventKind};
use keel_strategy::Strategy;
use serde_json::Value;
use std::borrow::Cow;
use std::sync::Arc;

/// Which fields a resource's objects can be selected by, and their values: its type's
/// (strategy), and for a custom resource also its definition's `selectableFields`.
#[derive(Clone, Debug)]
pub struct Fields {
    strategy: &'static Strategy,
    custom: Option<Arc<Custom>>,
}

impl From<&'static Strategy> for Fields {
    fn from(strategy: &'static Strategy) -> Fields {
        Fields {
            strategy,
            custom: None,
        }
    }
}

impl Fields {
    /// The fields of a served resource.
    pub fn of(res: &crate::routes::Resource) -> Fields {
        Fields {
            strategy: res.strategy,
            custom: res.custom.clone(),
        }
    }

    fn custom_field(&self, field: &str) -> Option<&Custom> {
        self.custom
            .as_deref()
            .filter(|c| c.selectable.iter().any(|f| f == field))
    }

    fn supports(&self, field: &str) -> bool {
        self.strategy.selectable_fields().contains(&field) || self.custom_field(field).is_some()
    }

    /// The object's value of a selectable field (`None` when absent, read as `""`).
    pub fn value(&self, obj: &Value, field: &str) -> Option<String> {
        match self.custom_field(field) {
            Some(c) => c.field_value(obj, field),
            None => self.strategy.field_value(obj, field),
        }
    }
}

/// One resource's fields compare by its strategy (the table's entries are static) and its
/// definition (shared by every request to it).
impl PartialEq for Fields {
    fn eq(&self, other: &Fields) -> bool {
        std::ptr::eq(self.strategy, other.strategy)
            && match (&self.custom, &other.custom) {
                (None, None) => true,
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                _ => false,
            }
    }
}

impl Eq for Fields {}

impl std::hash::Hash for Fields {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        std::ptr::hash(self.strategy, h);
        self.custom.as_ref().map(Arc::as_ptr).hash(h);
    }
}

/// Label and field selectors of a list, watch or deletecollection.
pub struct Filter {
    pub labels: Option<LabelSelector>,
    pub fields: Option<FieldSelector>,
    /// The resource's selectable fields and their values.
    of: Fields,
}

impl Filter {
    /// No selector: everything.
    pub fn everything(strategy: &'static Strategy) -> Filter {
        Filter {
            labels: None,
            fields: None,
            of: strategy.into(),
        }
    }

    /// The filter of a `labelSelector` and a `fieldSelector` of the resource whose fields
    /// are `of`.
    pub fn parse(
        labels: Option<&str>,
        fields: Option<&str>,
        of: impl Into<Fields>,
    ) -> Result<Filter, ApiError> {
        let of = of.into();
        let labels = match labels {
            Some(s) => Some(LabelSelector::parse(s)?).filter(|l| !l.is_empty()),
            None => None,
        };
        let fields = match fields {
            Some(s) => Some(FieldSelector::parse(s)?),
            None => None,
        };
        if let Some(f) = &fields {
            for field in f.fields() {
                if !of.supports(field) {
                    return Err(ApiError::bad_request(format!(
                        "field label not supported: {field}"
                    )));
                }
            }
        }
        Ok(Filter { labels, fields, of })
    }

    pub fn is_empty(&self) -> bool {
        self.labels.is_none() && self.fields.is_none()
    }

    pub fn matches(&self, obj: &Value) -> bool {
        if let Some(l) = &self.labels {
            if !l.matches(objects::labels(obj)) {
                return false;
            }
        }
        if let Some(f) = &self.fields {
            if !f.matches(&|field: &str| self.of.value(obj, field)) {
                return false;
            }
        }
        true
    }

    /// A field whose exact value every object this filter selects has, with that value (the
    /// first non-negated field term, else the first label requirement naming one value), so
    /// that watches can be indexed by it. `None` when no requirement pins a value.
    pub fn exact_requirement(&self) -> Option<(Indexed, String)> {
        if let Some(t) = self
            .fields
            .as_ref()
            .and_then(|f| f.terms().iter().find(|t| !t.negated))
        {
            let field = Indexed::Field {
                of: self.of.clone(),
                path: t.field.clone(),
            };
            return Some((field, t.value.clone()));
        }
        use keel_api::selectors::Operator;
        self.labels.as_ref()?.requirements().iter().find_map(|r| {
            match (r.operator, r.values.as_slice()) {
                (Operator::Equals | Operator::DoubleEquals | Operator::In, [v]) => {
                    Some((Indexed::Label(r.key.clone()), v.clone()))
                }
                _ => None,
            }
        })
    }

    /// Filters stored bytes: parses only when a selector is set.
    pub fn matches_bytes(&self, bytes: &[u8]) -> bool {
        if self.is_empty() {
            return true;
        }
        match serde_json::from_slice::<Value>(bytes) {
            Ok(v) => self.matches(&v),
            Err(_) => false,
        }
    }
}

/// A value an object can be found by: its name, a label or a selectable field. What
/// `value_of` gives is what the selectors compare (`Filter::matches`, a single-name watch).
#[derive(Clone, Debug)]
pub enum Indexed {
    /// `metadata.name`, as a single-name watch compares it.
    Name,
    /// A label (a non-string value reads as `""`, as label selectors read it).
    Label(String),
    /// A selectable field of a resource (absent reads as `""`, as field selectors read it).
    Field { of: Fields, path: String },
}

impl PartialEq for Indexed {
    fn eq(&self, other: &Indexed) -> bool {
        match (self, other) {
            (Indexed::Name, Indexed::Name) => true,
            (Indexed::Label(a), Indexed::Label(b)) => a == b,
            (Indexed::Field { of: a, path: p }, Indexed::Field { of: b, path: q }) => {
                a == b && p == q
            }
            _ => false,
        }
    }
}

impl Eq for Indexed {}

impl std::hash::Hash for Indexed {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        std::mem::discriminant(self).hash(h);
        match self {
            Indexed::Name => {}
            Indexed::Label(k) => k.hash(h),
            Indexed::Field { of, path } => {
                of.hash(h);
                path.hash(h);
            }
        }
    }
}

impl Indexed {
    /// Whether this is the object's name (a single-name watch's, or the `metadata.name`
    /// field selector's), which the last segment of its storage key holds as well.
    pub fn is_name(&self) -> bool {
        match self {
            Indexed::Name => true,
            Indexed::Field { path, .. } => path == "metadata.name",
            Indexed::Label(_) => false,
        }
    }

    /// The object's value of this field, if it has one.
    pub fn value_of<'a>(&self, obj: &'a Value) -> Option<Cow<'a, str>> {
        match self {
            Indexed::Name => Some(Cow::Borrowed(objects::name(obj))),
            Indexed::Label(key) => {
                keel_api::selectors::label_value(objects::labels(obj), key).map(Cow::Borrowed)
            }
            Indexed::Field { of, path } => {
                Some(Cow::Owned(of.value(obj, path).unwrap_or_default()))
            }
        }
    }
}

/// What one watch sends: the objects it selects (selectors, a single name) and how.
pub struct Selection {
    filter: Filter,
    name: Option<String>,
    enc: Encoder,
}

impl Selection {
    pub fn new(filter: Filter, name: Option<String>, enc: Encoder) -> Selection {
        Selection { filter, name, enc }
    }

    /// Every object of the collection, as JSON, as stored (in one version): the feed's
    /// precomputed lines serve it.
    pub fn is_plain_json(&self) -> bool {
        self.enc.format() == Format::Json && self.selects_all() && self.enc.converts_to().is_none()
    }

    /// No selector and no single name.
    pub fn selects_all(&self) -> bool {
        self.filter.is_empty() && self.name.is_none()
    }

    pub fn encoder(&self) -> &Encoder {
        &self.enc
    }

    /// A field and the exact value every object it selects has (the name of a single-name
    /// watch, else the filter's `exact_requirement`): the feed's index of watches.
    pub fn index_key(&self) -> Option<(Indexed, String)> {
        match &self.name {
            Some(n) => Some((Indexed::Name, n.clone())),
            None => self.filter.exact_requirement(),
        }
    }

    /// Whether the (parsed) object is selected.
    pub fn matches(&self, v: &Value) -> bool {
        self.name.as_ref().is_none_or(|n| objects::name(v) == n) && self.filter.matches(v)
    }

    /// Whether the stored object is selected (parsing it only if something is to be checked).
    pub fn matches_bytes(&self, bytes: &[u8]) -> bool {
        if self.selects_all() {
            return true;
        }
        serde_json::from_slice::<Value>(bytes).is_ok_and(|v| self.matches(&v))
    }

    /// Appends this watch's encoding of a change, applying selector transitions; nothing if
    /// the change does not concern it.
    pub fn encode(&self, ev: &Event, out: &mut Vec<u8>) {
        let new_ok = ev.kind == EventKind::Put && self.matches_bytes(ev.kv.value());
        let old_ok = ev
            .prev
            .as_ref()
            .is_some_and(|p| self.matches_bytes(p.value()));
        if let Some(kind) = event_type(ev.kind, old_ok, new_ok) {
            let written = match (kind, &ev.prev) {
                ("DELETED", Some(p)) => p.mod_revision,
                _ => ev.kv.mod_revision,
            };
            self.enc
                .event_at(out, kind, &event_object(ev, kind), written);
        }
    }
}

/// The type of a change as it happened, for a watch that selects everything (`None` for the
/// delete of an unknown previous value).
pub fn as_happened(ev: &Event) -> Option<&'static str> {
    event_type(ev.kind, ev.prev.is_some(), ev.kind == EventKind::Put)
}

/// The event a watch sends for a change, from whether the object was selected before
/// (`old_ok`) and after (`new_ok`): an object entering the selection is ADDED, one leaving it
/// (or deleted while selected) DELETED.
pub fn event_type(kind: EventKind, old_ok: bool, new_ok: bool) -> Option<&'static str> {
    match (kind, old_ok, new_ok) {
        (EventKind::Put, false, true) => Some("ADDED"),
        (EventKind::Put, true, true) => Some("MODIFIED"),
        (EventKind::Put, true, false) | (EventKind::Delete, true, _) => Some("DELETED"),
        _ => None,
    }
}

/// The stored bytes an event of type `kind` carries: the new object, or for DELETED the last
/// one with the deletion's revision.
pub fn event_object<'a>(ev: &'a Event, kind: &str) -> Cow<'a, [u8]> {
    match (kind, &ev.prev) {
        ("DELETED", Some(p)) => objects::with_resource_version(p.value(), ev.revision()).into(),
        _ => ev.kv.value().into(),
    }
}
