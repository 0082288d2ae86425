//! CustomResourceDefinitions (`apiextensions.k8s.io/v1`): upstream's
//! `ValidateCustomResourceDefinition`, `ValidateCustomResourceDefinitionUpdate` and
//! `ValidateUpdateCustomResourceDefinitionStatus`, beyond ObjectMeta (checked with the
//! `PluralDotGroup` name rule elsewhere), and the storage-version bookkeeping of upstream's
//! update strategy.
//!
//! Upstream validates the *internal* type, which the v1 conversion builds by moving every
//! per-version `schema`, `subresources`, `additionalPrinterColumns` and `selectableFields`
//! that is identical across all versions to the top level (`spec.validation`,
//! `spec.subresources`, ...), and `versions[0].name` to `spec.version`. Field paths follow
//! that internal shape, so a CRD with one version reports schema errors under
//! `spec.validation.openAPIV3Schema`; [`Internal`] models it.
//!
//! Causes come in upstream's order. Where upstream walks a Go map (schema `properties`,
//! stored versions missing from `spec.versions`), the order is random upstream; here keys are
//! visited in sorted (or stored) order. A cause upstream lists twice is listed once (the
//! crate's merge keeps each text once). The openAPIV3Schema rules are in [`schema`], the
//! part of default validation done here in [`defaults`]; each says what it leaves out.
//! Also left out: a conversion webhook's `caBundle` is not parsed (upstream refuses an
//! invalid one only when an established CRD changes it).

use keel_api::jsonmap::JsonPointer;
mod celrules;
mod defaults;
mod gojson;
mod schema;

use crate::errors::{Bad, FieldErr};
use keel_api::names::{is_dns1035_label, is_dns1123_subdomain};
use serde_json::Value;

/// Deepest nesting of openAPIV3Schema this crate walks; deeper subschemas are not checked
/// (upstream has no limit of its own: its body size limit bounds the depth). Generated CRDs
/// that embed a whole PodSpec nest about 25 schema levels; this leaves room for several.
pub const SCHEMA_DEPTH_MAX: usize = 128;
/// Most selectable fields a version may declare (upstream's `MaxSelectableFields`).
pub const SELECTABLE_FIELDS_MAX: usize = 8;
/// Longest deprecation warning, in bytes.
pub const DEPRECATION_WARNING_LEN_MAX: usize = 256;

const SCOPES: &[&str] = &["Cluster", "Namespaced"];
const STRATEGIES: &[&str] = &["None", "Webhook"];
const PRINTER_TYPES: &str = "boolean,date,integer,number,string";
const PRINTER_TYPE_LIST: &[&str] = &["boolean", "date", "integer", "number", "string"];
const PRINTER_FORMATS: &str = "byte,date,date-time,double,float,int32,int64,password";
const PRINTER_FORMAT_LIST: &[&str] = &[
    "byte",
    "date",
    "date-time",
    "double",
    "float",
    "int32",
    "int64",
    "password",
];
/// The ConversionReview versions upstream understands (sorted, as its set prints them).
const REVIEW_VERSIONS: &[&str] = &["v1", "v1beta1"];
const APPROVAL_ANNOTATION: &str = "api-approved.kubernetes.io";
const URL_FORM: &str = "; desired format: https://host[/path]";

/// A member that is present and not null.
fn get<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn bool_of(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn arr_of<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// Members of the hoisted types that are Go pointers: set to `""`/`false` they are not Go's
/// zero value.
const POINTER_MEMBERS: &[&str] = &[
    "$ref",
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
    "x-kubernetes-preserve-unknown-fields",
    "reason",
    "optionalOldSelf",
    "labelSelectorPath",
];
/// Map-valued schema members: empty is Go's nil map.
const MAP_MEMBERS: &[&str] = &[
    "properties",
    "patternProperties",
    "definitions",
    "dependencies",
];

/// Whether a member holds Go's zero value for its field, which semantic equality treats
/// like an absent one (nil and empty slices and maps are equal too).
fn is_zero_member(key: &str, v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty() && MAP_MEMBERS.contains(&key),
        Value::String(t) => t.is_empty() && !POINTER_MEMBERS.contains(&key),
        Value::Bool(b) => !b && !POINTER_MEMBERS.contains(&key),
        Value::Number(n) => key == "priority" && n.as_i64() == Some(0),
    }
}

/// `v` without zero-valued members (recursively): what Go's semantic equality sees of a
/// decoded value.
fn normalized(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, x)| !is_zero_member(k, x))
                .map(|(k, x)| (k.clone(), normalized(x)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(normalized).collect()),
        other => other.clone(),
    }
}

/// Go's semantic equality of two optional decoded members.
fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    let empty_list = |x: &Option<&Value>| x.and_then(Value::as_array).is_some_and(Vec::is_empty);
    let a = a.filter(|_| !empty_list(&a));
    let b = b.filter(|_| !empty_list(&b));
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => normalized(x) == normalized(y),
        _ => false,
    }
}

/// The per-version members the v1 conversion moves to the top level when identical.
const HOISTED: [&str; 4] = [
    "schema",
    "subresources",
    "additionalPrinterColumns",
    "selectableFields",
];

/// The internal (hub) view of a v1 spec.
struct Internal<'a> {
    /// `spec.versions` (`None`: absent, a nil slice).
    versions: Option<&'a [Value]>,
    /// For each of [`HOISTED`]: whether it moved to the top level.
    hoisted: [bool; 4],
}

impl<'a> Internal<'a> {
    fn new(spec: &'a Value) -> Self {
        let versions = spec
            .get("versions")
            .and_then(Value::as_array)
            .map(Vec::as_slice);
        let list = versions.unwrap_or(&[]);
        let mut hoisted = [false; 4];
        if let Some(first) = list.first() {
            for (h, key) in hoisted.iter_mut().zip(HOISTED) {
                *h = list.iter().all(|v| same(get(v, key), get(first, key)));
            }
        }
        Internal { versions, hoisted }
    }

    fn list(&self) -> &'a [Value] {
        self.versions.unwrap_or(&[])
    }

    /// A per-version member as the internal type holds it (`None` when moved up).
    fn per_version(&self, v: &'a Value, which: usize) -> Option<&'a Value> {
        if self.hoisted[which] {
            None
        } else {
            get(v, HOISTED[which])
        }
    }

    /// A top-level member as the internal type holds it.
    fn top(&self, which: usize) -> Option<&'a Value> {
        if self.hoisted[which] {
            self.list().first().and_then(|v| get(v, HOISTED[which]))
        } else {
            None
        }
    }

    /// `spec.versions` as upstream prints it in a message.
    fn render_versions(&self) -> String {
        let views: Option<Vec<gojson::VersionView<'_>>> = self.versions.map(|list| {
            list.iter()
                .map(|v| gojson::VersionView {
                    version: v,
                    schema: self.per_version(v, 0),
                    subresources: self.per_version(v, 1),
                    columns: self.per_version(v, 2),
                    selectable: self.per_version(v, 3),
                })
                .collect()
        });
        gojson::versions(views.as_deref())
    }

    /// Whether any schema of the spec satisfies `pred` somewhere.
    fn any_schema(&self, pred: &dyn Fn(&Value) -> bool) -> bool {
        self.list().iter().any(|v| {
            get(v, "schema")
                .and_then(|s| get(s, "openAPIV3Schema"))
                .is_some_and(|s| schema::has(s, pred, 0))
        })
    }
}

/// What an update relaxes for CRDs whose stored spec already breaks a rule added later
/// (upstream's `validationOptions`).
#[derive(Clone, Debug)]
pub(crate) struct Opts {
    pub require_recognized_review_version: bool,
    pub require_immutable_names: bool,
    pub require_openapi_schema: bool,
    pub require_valid_property_type: bool,
    pub require_structural: bool,
    pub require_atomic_set_type: bool,
    pub require_map_list_keys_map_set: bool,
    pub require_pruned_defaults: bool,
    /// Versions whose selectable fields may stay above [`SELECTABLE_FIELDS_MAX`]
    /// (`""`: the top level).
    pub too_many_selectable_allowed: Vec<String>,
    /// Versions whose schema an update leaves as it was: their rules are not refused for
    /// their own estimated cost (upstream's `suppressPerExpressionCost`), so a control plane
    /// that estimates differently keeps accepting what it stored.
    pub unchanged_schemas: Vec<String>,
}

impl Opts {
    fn create() -> Self {
        Opts {
            require_recognized_review_version: true,
            require_immutable_names: false,
            require_openapi_schema: true,
            require_valid_property_type: true,
            require_structural: true,
            require_atomic_set_type: true,
            require_map_list_keys_map_set: true,
            require_pruned_defaults: true,
            too_many_selectable_allowed: Vec::new(),
            unchanged_schemas: Vec::new(),
        }
    }

    /// Whether one expression's own cost limit applies to the schema of `version`.
    pub(crate) fn per_expression_cost(&self, version: &str) -> bool {
        !self.unchanged_schemas.iter().any(|v| v == version)
    }

    fn update(new: &Value, old: &Value) -> Self {
        let null = Value::Null;
        let old_spec = old.get("spec").unwrap_or(&null);
        let new_spec = new.get("spec").unwrap_or(&null);
        let old_int = Internal::new(old_spec);
        let review = arr_of(
            get(old_spec, "conversion")
                .and_then(|c| get(c, "webhook"))
                .unwrap_or(&null),
            "conversionReviewVersions",
        );
        let all_schemas = old_int.list().iter().all(|v| {
            get(v, "schema")
                .and_then(|s| get(s, "openAPIV3Schema"))
                .is_some()
        });
        Opts {
            require_recognized_review_version: review.is_empty()
                || review
                    .iter()
                    .any(|v| REVIEW_VERSIONS.contains(&v.as_str().unwrap_or(""))),
            require_immutable_names: condition_true(old, "Established"),
            require_openapi_schema: all_schemas,
            require_valid_property_type: !old_int.any_schema(&schema::has_invalid_type),
            require_structural: !old_int.list().iter().any(|v| {
                get(v, "schema")
                    .and_then(|s| get(s, "openAPIV3Schema"))
                    .is_some_and(schema::is_non_structural)
            }),
            require_atomic_set_type: !old_int.any_schema(&schema::has_non_atomic_set),
            require_map_list_keys_map_set: !old_int.any_schema(&schema::has_bad_map_list_keys),
            require_pruned_defaults: !old_int.list().iter().any(|v| {
                get(v, "schema")
                    .and_then(|s| get(s, "openAPIV3Schema"))
                    .is_some_and(|s| !schema::is_non_structural(s) && defaults::has_unpruned(s))
            }),
            too_many_selectable_allowed: too_many_selectable_allowed(new_spec, old_spec),
            unchanged_schemas: unchanged_schemas(new_spec, old_spec),
        }
    }
}

/// The versions of `new` whose schema is the same in `old` (upstream's
/// `findVersionsWithUnchangedSchemas`).
fn unchanged_schemas(new: &Value, old: &Value) -> Vec<String> {
    let schema_of = |spec: &Value, name: &str| {
        arr_of(spec, "versions")
            .iter()
            .find(|v| str_of(v, "name") == name)
            .map(|v| get(v, "schema").cloned())
    };
    arr_of(new, "versions")
        .iter()
        .map(|v| str_of(v, "name"))
        .filter(|name| {
            let (n, o) = (schema_of(new, name), schema_of(old, name));
            n.is_some() && n == o
        })
        .map(str::to_string)
        .collect()
}

fn condition_true(crd: &Value, kind: &str) -> bool {
    crd.at("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| str_of(c, "type") == kind && str_of(c, "status") == "True")
}

fn too_many_selectable_allowed(new: &Value, old: &Value) -> Vec<String> {
    let (new_int, old_int) = (Internal::new(new), Internal::new(old));
    let mut out = Vec::new();
    let count = |v: Option<&Value>| v.and_then(Value::as_array).map_or(0, Vec::len);
    let old_top = old_int.top(3);
    if count(old_top) > SELECTABLE_FIELDS_MAX && same(new_int.top(3), old_top) {
        out.push(String::new());
    }
    for v in new_int.list() {
        let name = str_of(v, "name");
        let Some(old_v) = old_int.list().iter().find(|o| str_of(o, "name") == name) else {
            continue;
        };
        let old_fields = old_int.per_version(old_v, 3);
        if count(old_fields) > SELECTABLE_FIELDS_MAX && same(new_int.per_version(v, 3), old_fields)
        {
            out.push(name.to_string());
        }
    }
    out
}

/// The rules of a new CRD (after defaulting and the create strategy's status), without
/// ObjectMeta.
pub fn validate(obj: &Value) -> Vec<FieldErr> {
    let mut errs = spec_rules(obj, &Opts::create());
    errs.extend(status_and_stored_versions(obj));
    errs.extend(api_approval(obj, None));
    errs.extend(preserve_unknown_fields(obj, None));
    errs
}

/// The rules of an update of a CRD (the new object after the update strategy), without
/// ObjectMeta.
pub fn validate_update(new: &Value, old: &Value) -> Vec<FieldErr> {
    let opts = Opts::update(new, old);
    let mut errs = spec_rules(new, &opts);
    errs.extend(immutable(new, old, &opts));
    errs.extend(status_and_stored_versions(new));
    errs.extend(api_approval(new, Some(old)));
    errs.extend(preserve_unknown_fields(new, Some(old)));
    errs
}

/// The rules of a write to `customresourcedefinitions/status`, without ObjectMeta.
pub fn validate_status_update(new: &Value) -> Vec<FieldErr> {
    let null = Value::Null;
    let accepted = new.at("/status/acceptedNames").unwrap_or(&null);
    names(accepted, "status.acceptedNames")
}

/// Upstream's update strategy: the storage version joins `status.storedVersions` when it is
/// not there yet (status itself is kept from the stored object before this runs).
pub fn prepare_update(new: &mut Value) {
    let storage = arr_of(new.get("spec").unwrap_or(&Value::Null), "versions")
        .iter()
        .find(|v| bool_of(v, "storage"))
        .map(|v| str_of(v, "name").to_string());
    let Some(storage) = storage else {
        return;
    };
    let Some(status) = new.get_mut("status").and_then(Value::as_object_mut) else {
        return;
    };
    let stored = status
        .entry("storedVersions")
        .or_insert_with(|| Value::Array(Vec::new()));
    if stored.is_null() {
        *stored = Value::Array(Vec::new());
    }
    if let Some(list) = stored.as_array_mut() {
        if !list.iter().any(|v| v.as_str() == Some(storage.as_str())) {
            list.push(Value::String(storage));
        }
    }
}

fn spec_rules(obj: &Value, opts: &Opts) -> Vec<FieldErr> {
    let null = Value::Null;
    let spec = obj.get("spec").unwrap_or(&null);
    let int = Internal::new(spec);
    let mut opts = opts.clone();
    let mut errs = Vec::new();

    let group = str_of(spec, "group");
    if group.is_empty() {
        errs.push(FieldErr::required("spec.group", ""));
    } else {
        let bad = is_dns1123_subdomain(group);
        if !bad.is_empty() {
            errs.push(FieldErr::invalid("spec.group", group, &bad.join(",")));
        } else if !group.contains('.') {
            errs.push(FieldErr::invalid(
                "spec.group",
                group,
                "should be a domain with at least one dot",
            ));
        }
    }
    errs.extend(enum_string("spec.scope", str_of(spec, "scope"), SCOPES));

    let preserve = bool_of(spec, "preserveUnknownFields");
    if !preserve {
        opts.require_structural = true;
    }
    let top_schema = int.top(0).and_then(|s| get(s, "openAPIV3Schema"));
    if opts.require_openapi_schema {
        if top_schema.is_none() {
            for (i, v) in int.list().iter().enumerate() {
                let has = int
                    .per_version(v, 0)
                    .and_then(|s| get(s, "openAPIV3Schema"))
                    .is_some();
                if !has {
                    errs.push(FieldErr::required(
                        &format!("spec.versions[{i}].schema.openAPIV3Schema"),
                        "",
                    ));
                }
            }
        }
    } else if !preserve && top_schema.is_none() {
        for (i, v) in int.list().iter().enumerate() {
            let has = int
                .per_version(v, 0)
                .and_then(|s| get(s, "openAPIV3Schema"))
                .is_some();
            if bool_of(v, "served") && !has {
                errs.push(FieldErr::required(
                    &format!("spec.versions[{i}].schema.openAPIV3Schema"),
                    "because otherwise all fields are pruned",
                ));
            }
        }
    }
    if int.any_schema(&|s: &Value| get(s, "default").is_some()) {
        opts.require_structural = true;
        if preserve {
            errs.push(FieldErr::invalid(
                "spec.preserveUnknownFields",
                true,
                "must be false in order to use defaults in the schema",
            ));
        }
    }
    if int.any_schema(&schema::has_kubernetes_extensions) {
        opts.require_structural = true;
    }

    let mut storage_count = 0;
    let mut seen: Vec<&str> = Vec::new();
    let mut unique = true;
    for (i, v) in int.list().iter().enumerate() {
        if bool_of(v, "storage") {
            storage_count += 1;
        }
        let name = str_of(v, "name");
        if seen.contains(&name) {
            unique = false;
        } else {
            seen.push(name);
        }
        let path = format!("spec.versions[{i}]");
        let bad = is_dns1035_label(name);
        if !bad.is_empty() {
            errs.push(FieldErr::invalid(
                &format!("{path}.name"),
                name,
                &bad.join(","),
            ));
        }
        let status_enabled = get(v, "subresources")
            .and_then(|s| get(s, "status"))
            .is_some();
        errs.extend(version_rules(&int, v, &path, status_enabled, &opts));
    }
    if !unique {
        errs.push(FieldErr::invalid(
            "spec.versions",
            Bad::Raw(int.render_versions()),
            "must contain unique version names",
        ));
    }
    if storage_count != 1 {
        errs.push(FieldErr::invalid(
            "spec.versions",
            Bad::Raw(int.render_versions()),
            "must have exactly one version marked as storage version",
        ));
    }
    // The internal `spec.version` is the first version's name.
    let first = int.list().first().map_or("", |v| str_of(v, "name"));
    if !first.is_empty() {
        let bad = is_dns1035_label(first);
        if !bad.is_empty() {
            errs.push(FieldErr::invalid("spec.version", first, &bad.join(",")));
        }
    }

    let names_v = spec.get("names").unwrap_or(&null);
    for key in ["plural", "singular", "kind", "listKind"] {
        if str_of(names_v, key).is_empty() {
            errs.push(FieldErr::required(&format!("spec.names.{key}"), ""));
        }
    }
    errs.extend(names(names_v, "spec.names"));

    let any_status = int.list().iter().any(|v| {
        get(v, "subresources")
            .and_then(|s| get(s, "status"))
            .is_some()
    });
    if let Some(validation) = int.top(0) {
        // The top level holds the first version's schema (upstream checks `spec.version`).
        let first = arr_of(spec, "versions")
            .first()
            .map_or("", |v| str_of(v, "name"));
        errs.extend(schema::validation_rules(
            validation,
            any_status,
            &opts,
            "spec.validation",
            opts.per_expression_cost(first),
        ));
    }
    if let Some(sub) = int.top(1) {
        errs.extend(subresources(sub, "spec.subresources"));
    }
    for (i, col) in int.top(2).map_or(&[][..], as_slice).iter().enumerate() {
        errs.extend(column(col, &format!("spec.additionalPrinterColumns[{i}]")));
    }
    if let Some(fields) = int.top(3).filter(|f| !as_slice(f).is_empty()) {
        if top_schema.is_none() && int.top(0).is_none() {
            errs.push(FieldErr::invalid(
                "spec.selectableFields",
                "",
                "may only be set when validations.schema is included",
            ));
        } else {
            errs.extend(selectable_fields(
                fields,
                top_schema,
                "spec.schema.openAPIV3Schema",
                "spec.selectableFields",
                "",
                &opts,
            ));
        }
    }

    let conversion = get(spec, "conversion");
    let strategy = conversion.map_or("", |c| str_of(c, "strategy"));
    if conversion.is_some() && strategy != "None" && preserve {
        errs.push(FieldErr::invalid(
            "spec.conversion.strategy",
            Bad::Raw(crate::gojson::string(strategy)),
            "must be None if spec.preserveUnknownFields is true",
        ));
    }
    if let Some(c) = conversion {
        errs.extend(conversion_rules(c, &opts));
    }
    errs
}

fn as_slice(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or(&[])
}

fn enum_string(path: &str, value: &str, accepted: &[&str]) -> Vec<FieldErr> {
    if value.is_empty() {
        return vec![FieldErr::required(path, "")];
    }
    if accepted.contains(&value) {
        return Vec::new();
    }
    vec![FieldErr::not_supported(path, value, accepted)]
}

fn version_rules(
    int: &Internal<'_>,
    v: &Value,
    path: &str,
    status_enabled: bool,
    opts: &Opts,
) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    let warning = get(v, "deprecationWarning").and_then(Value::as_str);
    for msg in deprecation_warning(bool_of(v, "deprecated"), warning) {
        errs.push(FieldErr::invalid(
            &format!("{path}.deprecationWarning"),
            Bad::Raw(warning.map_or("null".into(), crate::gojson::string)),
            &msg,
        ));
    }
    if let Some(validation) = int.per_version(v, 0) {
        errs.extend(schema::validation_rules(
            validation,
            status_enabled,
            opts,
            &format!("{path}.schema"),
            opts.per_expression_cost(str_of(v, "name")),
        ));
    }
    if let Some(sub) = int.per_version(v, 1) {
        errs.extend(subresources(sub, &format!("{path}.subresources")));
    }
    let cols = int.per_version(v, 2).map_or(&[][..], as_slice);
    for (i, col) in cols.iter().enumerate() {
        errs.extend(column(
            col,
            &format!("{path}.additionalPrinterColumns[{i}]"),
        ));
    }
    if let Some(fields) = int.per_version(v, 3).filter(|f| !as_slice(f).is_empty()) {
        let has_schema = int
            .per_version(v, 0)
            .and_then(|s| get(s, "openAPIV3Schema"))
            .is_some();
        if !has_schema {
            errs.push(FieldErr::invalid(
                &format!("{path}.selectableFields"),
                "",
                "may only be set when `version.schema.openAPIV3Schema` is not included",
            ));
        } else {
            errs.extend(selectable_fields(
                fields,
                int.per_version(v, 0)
                    .and_then(|s| get(s, "openAPIV3Schema")),
                &format!("{path}.schema.openAPIV3Schema"),
                &format!("{path}.selectableFields"),
                str_of(v, "name"),
                opts,
            ));
        }
    }
    errs
}

/// Go's `unicode.IsPrint`, approximately: ASCII space is printable; control, other space,
/// private-use and the common format characters (soft hyphen, zero-width and bidi marks,
/// BOM) are not.
fn is_print(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    let format = matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
        | '\u{2060}'..='\u{2064}' | '\u{feff}');
    !(c.is_control() || c.is_whitespace() || format || ('\u{e000}'..='\u{f8ff}').contains(&c))
}

fn deprecation_warning(deprecated: bool, warning: Option<&str>) -> Vec<String> {
    if !deprecated && warning.is_some() {
        return vec!["can only be set for deprecated versions".into()];
    }
    let Some(w) = warning else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if w.len() > DEPRECATION_WARNING_LEN_MAX {
        out.push(format!(
            "must be <= {DEPRECATION_WARNING_LEN_MAX} characters long"
        ));
    }
    if w.is_empty() {
        out.push("must not be an empty string".into());
    }
    for (i, c) in w.char_indices() {
        if !is_print(c) {
            out.push(format!(
                "must only contain printable UTF-8 characters; non-printable character found at index {i}"
            ));
            break;
        }
    }
    out
}

/// `ValidateCustomResourceDefinitionNames` (spec names and accepted names alike).
fn names(n: &Value, path: &str) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    for key in ["plural", "singular"] {
        let v = str_of(n, key);
        let bad = is_dns1035_label(v);
        if !v.is_empty() && !bad.is_empty() {
            errs.push(FieldErr::invalid(
                &format!("{path}.{key}"),
                v,
                &bad.join(","),
            ));
        }
    }
    for key in ["kind", "listKind"] {
        let v = str_of(n, key);
        let bad = is_dns1035_label(&v.to_lowercase());
        if !v.is_empty() && !bad.is_empty() {
            errs.push(FieldErr::invalid(
                &format!("{path}.{key}"),
                v,
                &format!(
                    "may have mixed case, but should otherwise match: {}",
                    bad.join(",")
                ),
            ));
        }
    }
    for (i, s) in arr_of(n, "shortNames").iter().enumerate() {
        let s = s.as_str().unwrap_or("");
        let bad = is_dns1035_label(s);
        if !bad.is_empty() {
            errs.push(FieldErr::invalid(
                &format!("{path}.shortNames[{i}]"),
                s,
                &bad.join(","),
            ));
        }
    }
    let kind = str_of(n, "kind");
    if !kind.is_empty() && kind == str_of(n, "listKind") {
        errs.push(FieldErr::invalid(
            &format!("{path}.listKind"),
            kind,
            "kind and listKind may not be the same",
        ));
    }
    for (i, c) in arr_of(n, "categories").iter().enumerate() {
        let c = c.as_str().unwrap_or("");
        let bad = is_dns1035_label(c);
        if !bad.is_empty() {
            errs.push(FieldErr::invalid(
                &format!("{path}.categories[{i}]"),
                c,
                &bad.join(","),
            ));
        }
    }
    errs
}

fn simple_json_path(s: &str, path: &str) -> Vec<FieldErr> {
    if s.is_empty() {
        return vec![FieldErr::invalid(path, s, "must not be empty")];
    }
    if !s.starts_with('.') {
        return vec![FieldErr::invalid(
            path,
            s,
            "must be a simple json path starting with .",
        )];
    }
    Vec::new()
}

fn subresources(sub: &Value, path: &str) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    let Some(scale) = get(sub, "scale") else {
        return errs;
    };
    let replicas = [
        (
            "specReplicasPath",
            ".spec.",
            "should be a json path under .spec",
        ),
        (
            "statusReplicasPath",
            ".status.",
            "should be a json path under .status",
        ),
    ];
    for (key, prefix, msg) in replicas {
        let p = format!("{path}.scale.{key}");
        let v = str_of(scale, key);
        if v.is_empty() {
            errs.push(FieldErr::required(&p, ""));
            continue;
        }
        let bad = simple_json_path(v, &p);
        if !bad.is_empty() {
            errs.extend(bad);
        } else if !v.starts_with(prefix) {
            errs.push(FieldErr::invalid(&p, v, msg));
        }
    }
    let selector = str_of(scale, "labelSelectorPath");
    if !selector.is_empty() {
        let p = format!("{path}.scale.labelSelectorPath");
        let bad = simple_json_path(selector, &p);
        if !bad.is_empty() {
            errs.extend(bad);
        } else if !selector.starts_with(".spec.") && !selector.starts_with(".status.") {
            // Upstream passes the pointer: JSON-encoded, not Go-quoted.
            errs.push(FieldErr::invalid(
                &p,
                Bad::Raw(crate::gojson::string(selector)),
                "should be a json path under either .spec or .status",
            ));
        }
    }
    errs
}

fn column(col: &Value, path: &str) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    if str_of(col, "name").is_empty() {
        errs.push(FieldErr::required(&format!("{path}.name"), ""));
    }
    let ty = str_of(col, "type");
    let type_msg = format!("must be one of {PRINTER_TYPES}");
    if ty.is_empty() {
        errs.push(FieldErr::required(&format!("{path}.type"), &type_msg));
    } else if !PRINTER_TYPE_LIST.contains(&ty) {
        errs.push(FieldErr::invalid(&format!("{path}.type"), ty, &type_msg));
    }
    let format = str_of(col, "format");
    if !format.is_empty() && !PRINTER_FORMAT_LIST.contains(&format) {
        errs.push(FieldErr::invalid(
            &format!("{path}.format"),
            format,
            &format!("must be one of {PRINTER_FORMATS}"),
        ));
    }
    let json_path = str_of(col, "jsonPath");
    if json_path.is_empty() {
        errs.push(FieldErr::required(&format!("{path}.JSONPath"), ""));
    } else {
        errs.extend(simple_json_path(json_path, &format!("{path}.JSONPath")));
    }
    errs
}

/// `ValidateCustomResourceSelectableFields` against the schema at `schema_path` (`None`:
/// no schema).
fn selectable_fields(
    fields: &Value,
    schema_v: Option<&Value>,
    schema_path: &str,
    path: &str,
    version: &str,
    opts: &Opts,
) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    let mut root = schema_v;
    if let Some(e) = schema_v.and_then(schema::structural_init_error) {
        errs.push(FieldErr::invalid(schema_path, "", &e));
        root = None;
    }
    let mut unique: Vec<String> = Vec::new();
    for (i, f) in as_slice(fields).iter().enumerate() {
        let p = format!("{path}[{i}].jsonPath");
        let jp = str_of(f, "jsonPath");
        if jp.is_empty() {
            errs.push(FieldErr::required(&p, ""));
            continue;
        }
        let (field_path, found) = match schema::valid_field_path(jp, root, false) {
            Ok(x) => x,
            Err(e) => {
                errs.push(FieldErr::invalid(
                    &p,
                    jp,
                    &format!("is an invalid path: {e}"),
                ));
                continue;
            }
        };
        let first = field_path.split(['.', '[']).next().unwrap_or("");
        if first == "metadata" {
            errs.push(FieldErr::invalid(
                &p,
                jp,
                "must not point to fields in metadata",
            ));
        }
        let scalar =
            found.is_some_and(|s| matches!(str_of(s, "type"), "string" | "boolean" | "integer"));
        if !scalar {
            errs.push(FieldErr::invalid(
                &p,
                jp,
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            ));
        }
        if unique.contains(&field_path) {
            errs.push(FieldErr::duplicate(&p, jp));
        } else {
            unique.push(field_path);
        }
    }
    let allowed = opts
        .too_many_selectable_allowed
        .iter()
        .any(|v| v == version);
    if unique.len() > SELECTABLE_FIELDS_MAX && !allowed {
        errs.push(FieldErr::from_cause(keel_api::status::field::too_many(
            path,
            unique.len(),
            SELECTABLE_FIELDS_MAX,
        )));
    }
    errs
}

fn conversion_rules(c: &Value, opts: &Opts) -> Vec<FieldErr> {
    let null = Value::Null;
    let mut errs = Vec::new();
    let strategy = str_of(c, "strategy");
    errs.extend(enum_string(
        "spec.conversion.strategy",
        strategy,
        STRATEGIES,
    ));
    let webhook = get(c, "webhook");
    let client = webhook.and_then(|w| get(w, "clientConfig"));
    let review = arr_of(webhook.unwrap_or(&null), "conversionReviewVersions");
    if strategy == "Webhook" {
        const CC: &str = "spec.conversion.webhookClientConfig";
        match client {
            None => errs.push(FieldErr::required(
                CC,
                "required when strategy is set to Webhook",
            )),
            Some(cc) => {
                let url = get(cc, "url");
                let service = get(cc, "service");
                match (url, service) {
                    (Some(_), Some(_)) | (None, None) => errs.push(FieldErr::required(
                        CC,
                        "exactly one of url or service is required",
                    )),
                    (Some(u), None) => {
                        errs.extend(webhook_url(u.as_str().unwrap_or(""), &format!("{CC}.url")))
                    }
                    (None, Some(s)) => errs.extend(webhook_service(s, &format!("{CC}.service"))),
                }
            }
        }
        errs.extend(review_versions(
            webhook.and_then(|w| get(w, "conversionReviewVersions")),
            review,
            opts.require_recognized_review_version,
        ));
    } else {
        if client.is_some() {
            errs.push(FieldErr::forbidden(
                "spec.conversion.webhookClientConfig",
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if !review.is_empty() {
            errs.push(FieldErr::forbidden(
                "spec.conversion.conversionReviewVersions",
                "should not be set when strategy is not set to Webhook",
            ));
        }
    }
    errs
}

fn review_versions(raw: Option<&Value>, versions: &[Value], require: bool) -> Vec<FieldErr> {
    const P: &str = "spec.conversion.conversionReviewVersions";
    if versions.is_empty() {
        return vec![FieldErr::required(P, "")];
    }
    let mut errs = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    let mut accepted = false;
    for (i, v) in versions.iter().enumerate() {
        let v = v.as_str().unwrap_or("");
        if seen.contains(&v) {
            errs.push(FieldErr::invalid(
                &format!("{P}[{i}]"),
                v,
                "duplicate version",
            ));
            continue;
        }
        seen.push(v);
        for msg in is_dns1035_label(v) {
            errs.push(FieldErr::invalid(&format!("{P}[{i}]"), v, &msg));
        }
        accepted |= REVIEW_VERSIONS.contains(&v);
    }
    if require && !accepted {
        let mut rendered = String::new();
        gojson::any(raw.unwrap_or(&Value::Null), &mut rendered);
        errs.push(FieldErr::invalid(
            P,
            Bad::Raw(rendered),
            &format!(
                "must include at least one of {}",
                REVIEW_VERSIONS.join(", ")
            ),
        ));
    }
    errs
}

/// The parts of a URL upstream's checks look at (Go's `url.Parse`, reduced).
struct UrlParts<'a> {
    scheme: &'a str,
    user: Option<&'a str>,
    host: &'a str,
    query: &'a str,
    fragment: &'a str,
}

fn parse_url(s: &str) -> Result<UrlParts<'_>, String> {
    let (rest, fragment) = s.split_once('#').unwrap_or((s, ""));
    let scheme_end = rest.find(':').filter(|&i| {
        rest[..i].chars().enumerate().all(|(j, c)| {
            c.is_ascii_alphabetic() || (j > 0 && (c.is_ascii_digit() || "+-.".contains(c)))
        })
    });
    if rest.starts_with(':') {
        return Err(format!(
            "parse {}: missing protocol scheme",
            crate::errors::quote(s)
        ));
    }
    let (scheme, after) = match scheme_end {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => ("", rest),
    };
    let (after, query) = after.split_once('?').unwrap_or((after, ""));
    let (mut user, mut host) = (None, "");
    if let Some(auth_and_path) = after.strip_prefix("//") {
        let auth = auth_and_path
            .find('/')
            .map_or(auth_and_path, |i| &auth_and_path[..i]);
        match auth.rsplit_once('@') {
            Some((u, h)) => {
                user = Some(u);
                host = h;
            }
            None => host = auth,
        }
    }
    Ok(UrlParts {
        scheme,
        user,
        host,
        query,
        fragment,
    })
}

fn webhook_url(url: &str, path: &str) -> Vec<FieldErr> {
    let u = match parse_url(url) {
        Ok(u) => u,
        Err(e) => {
            return vec![FieldErr::required(
                path,
                &format!("url must be a valid URL: {e}{URL_FORM}"),
            )]
        }
    };
    let mut errs = Vec::new();
    if u.scheme != "https" {
        errs.push(FieldErr::invalid(
            path,
            u.scheme,
            &format!("'https' is the only allowed URL scheme{URL_FORM}"),
        ));
    }
    if u.host.is_empty() {
        errs.push(FieldErr::invalid(
            path,
            u.host,
            &format!("host must be specified{URL_FORM}"),
        ));
    }
    if let Some(user) = u.user {
        errs.push(FieldErr::invalid(
            path,
            user,
            "user information is not permitted in the URL",
        ));
    }
    if !u.fragment.is_empty() {
        errs.push(FieldErr::invalid(
            path,
            u.fragment,
            "fragments are not permitted in the URL",
        ));
    }
    if !u.query.is_empty() {
        errs.push(FieldErr::invalid(
            path,
            u.query,
            "query parameters are not permitted in the URL",
        ));
    }
    errs
}

fn webhook_service(s: &Value, path: &str) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    if str_of(s, "name").is_empty() {
        errs.push(FieldErr::required(&format!("{path}.name"), ""));
    }
    if str_of(s, "namespace").is_empty() {
        errs.push(FieldErr::required(&format!("{path}.namespace"), ""));
    }
    let port = s
        .get("port")
        .and_then(Value::as_i64)
        .unwrap_or(crate::api_defaults::SERVICE_PORT_DEFAULT);
    if !(1..=65535).contains(&port) {
        errs.push(FieldErr::invalid(
            &format!("{path}.port"),
            port,
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    let Some(url_path) = get(s, "path").and_then(Value::as_str) else {
        return errs;
    };
    let p = format!("{path}.path");
    if url_path == "/" || url_path.is_empty() {
        return errs;
    }
    if url_path == "//" {
        errs.push(FieldErr::invalid(
            &p,
            url_path,
            "segment[0] may not be empty",
        ));
        return errs;
    }
    if !url_path.starts_with('/') {
        errs.push(FieldErr::invalid(&p, url_path, "must start with a '/'"));
    }
    // Upstream drops the first byte whatever it is.
    let mut check = url_path.get(1..).unwrap_or("");
    check = check.strip_suffix('/').unwrap_or(check);
    for (i, step) in check.split('/').enumerate() {
        if step.is_empty() {
            errs.push(FieldErr::invalid(
                &p,
                url_path,
                &format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for failure in is_dns1123_subdomain(step) {
            errs.push(FieldErr::invalid(
                &p,
                url_path,
                &format!("segment[{i}]: {failure}"),
            ));
        }
    }
    errs
}

fn immutable(new: &Value, old: &Value, opts: &Opts) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    let mut check = |path: &str, pointer: &str, named_type: bool| {
        let n = new.at(pointer).and_then(Value::as_str).unwrap_or("");
        let o = old.at(pointer).and_then(Value::as_str).unwrap_or("");
        if n != o {
            // A named string type (ResourceScope) prints as JSON, a plain string with %q.
            let bad = if named_type {
                Bad::Raw(crate::gojson::string(n))
            } else {
                Bad::from(n)
            };
            errs.push(FieldErr::invalid(path, bad, "field is immutable"));
        }
    };
    if opts.require_immutable_names {
        check("spec.scope", "/spec/scope", true);
        check("spec.names.kind", "/spec/names/kind", false);
    }
    check("spec.group", "/spec/group", false);
    check("spec.names.plural", "/spec/names/plural", false);
    errs
}

fn status_and_stored_versions(obj: &Value) -> Vec<FieldErr> {
    let mut errs = validate_status_update(obj);
    let null = Value::Null;
    let stored_raw = obj.at("/status/storedVersions").filter(|v| !v.is_null());
    let stored = stored_raw.map_or(&[][..], as_slice);
    // An empty list here is the nil slice upstream's create strategy leaves when no version
    // is marked for storage.
    let mut rendered = String::new();
    match stored_raw.filter(|v| !as_slice(v).is_empty()) {
        Some(v) => gojson::any(v, &mut rendered),
        None => gojson::any(&null, &mut rendered),
    }
    const P: &str = "status.storedVersions";
    if stored.is_empty() {
        errs.push(FieldErr::invalid(
            P,
            Bad::Raw(rendered),
            "must have at least one stored version",
        ));
        return errs;
    }
    // Index of each stored version (its last position, as upstream's map keeps).
    let mut left: Vec<(&str, usize)> = Vec::new();
    for (i, v) in stored.iter().enumerate() {
        let v = v.as_str().unwrap_or("");
        match left.iter_mut().find(|(n, _)| *n == v) {
            Some(e) => e.1 = i,
            None => left.push((v, i)),
        }
    }
    let versions = obj.at("/spec/versions").map_or(&[][..], as_slice);
    for v in versions {
        let name = str_of(v, "name");
        let found = left.iter().position(|(n, _)| *n == name);
        if bool_of(v, "storage") && found.is_none() {
            errs.push(FieldErr::invalid(
                P,
                Bad::Raw(rendered.clone()),
                &format!("must have the storage version {name}"),
            ));
        }
        if let Some(at) = found {
            left.remove(at);
        }
    }
    // Upstream walks a map here (random order); these come in stored order.
    for (v, i) in left {
        errs.push(FieldErr::invalid(
            &format!("{P}[{i}]"),
            v,
            &format!(
                "missing from spec.versions; {v} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {v} and removes {v} from status.storedVersions"
            ),
        ));
    }
    errs
}

fn is_protected_group(group: &str) -> bool {
    group == "k8s.io"
        || group.ends_with(".k8s.io")
        || group == "kubernetes.io"
        || group.ends_with(".kubernetes.io")
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum Approval {
    Invalid,
    Approved,
    Bypassed,
    Missing,
}

fn approval_state(crd: &Value) -> (Approval, String) {
    let a = crd
        .at("/metadata/annotations")
        .and_then(|m| m.get(APPROVAL_ANNOTATION))
        .and_then(Value::as_str)
        .unwrap_or("");
    let q = crate::errors::quote(APPROVAL_ANNOTATION);
    if a.is_empty() {
        return (
            Approval::Missing,
            format!("protected groups must have approval annotation {q}, see https://github.com/kubernetes/enhancements/pull/1111"),
        );
    }
    if a.starts_with("unapproved") {
        return (
            Approval::Bypassed,
            format!("not approved: {}", crate::errors::quote(a)),
        );
    }
    // `url.ParseRequestURI` with a scheme and a host.
    if let Ok(u) = parse_url(a) {
        if !u.scheme.is_empty() && !u.host.is_empty() && u.fragment.is_empty() {
            return (Approval::Approved, format!("approved in {a}"));
        }
    }
    (
        Approval::Invalid,
        format!("protected groups must have approval annotation {q} with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"),
    )
}

fn api_approval(new: &Value, old: Option<&Value>) -> Vec<FieldErr> {
    if !is_protected_group(crate::json::str_at(new, "spec.group")) {
        return Vec::new();
    }
    let (state, reason) = approval_state(new);
    if old.is_some_and(|o| approval_state(o).0 == state) {
        return Vec::new();
    }
    let path = format!("metadata.annotations[{APPROVAL_ANNOTATION}]");
    let value = new
        .at("/metadata/annotations")
        .and_then(|m| m.get(APPROVAL_ANNOTATION))
        .and_then(Value::as_str)
        .unwrap_or("");
    match state {
        Approval::Approved | Approval::Bypassed => Vec::new(),
        Approval::Missing => vec![FieldErr::required(&path, &reason)],
        Approval::Invalid => vec![FieldErr::invalid(&path, value, &reason)],
    }
}

fn preserve_unknown_fields(new: &Value, old: Option<&Value>) -> Vec<FieldErr> {
    let on = |o: &Value| {
        o.at("/spec/preserveUnknownFields")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    };
    if old.is_some_and(on) || !on(new) {
        return Vec::new();
    }
    vec![FieldErr::invalid(
        "spec.preserveUnknownFields",
        true,
        "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
    )]
}

#[cfg(test)]
mod cost_tests;
#[cfg(test)]
mod tests;
