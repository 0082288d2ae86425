//! Validation of a whole object: its `ObjectMeta` (keel-api's validator, with the type's name
//! check) followed by the type's own rules, as the causes of a 422.

use crate::errors::FieldErr;
use crate::json::str_at;
use crate::kind::Kind;
use crate::registry::{NameCheck, Strategy};
use crate::{
    autoscaling, config, core_defaults, crd, dra, endpoints, flowcontrol, ipaddress, node, pod,
    podspec_validation, service, workload_validation,
};
use keel_api::names::{self, NameRule};
use keel_api::status::StatusCause;
use serde_json::Value;

/// Upstream's message when a CustomResourceDefinition's name is not `<plural>.<group>`.
const CRD_NAME_MSG: &str = "must be spec.names.plural+\".\"+spec.group";

/// A name check: `(name, is_generate_name_prefix) -> messages`.
type NameCheckFn = Box<dyn Fn(&str, bool) -> Vec<String>>;

/// The name check of a type, bound to the object whose name it checks (some names are
/// derived from the object's spec).
fn name_check(s: &Strategy, obj: &Value) -> NameCheckFn {
    match s.names {
        NameCheck::Rule(rule) => Box::new(move |name, prefix| rule.check(name, prefix)),
        NameCheck::PluralDotGroup => {
            let required = format!(
                "{}.{}",
                str_at(obj, "spec.names.plural"),
                str_at(obj, "spec.group")
            );
            // Upstream appends the mismatch for a generateName prefix too: a prefix never
            // equals the required name.
            Box::new(move |name, prefix| {
                let mut msgs = NameRule::Dns1123Subdomain.check(name, prefix);
                if name != required {
                    msgs.push(CRD_NAME_MSG.to_string());
                }
                msgs
            })
        }
        NameCheck::VersionDotGroup => {
            let required = format!(
                "{}.{}",
                str_at(obj, "spec.version"),
                str_at(obj, "spec.group")
            );
            // Upstream checks a path segment first and reports only that when it fails, and
            // ignores the prefix flag.
            Box::new(move |name, _prefix| {
                let minimal = names::is_valid_path_segment_name(name);
                if !minimal.is_empty() {
                    return minimal;
                }
                if name == required {
                    return Vec::new();
                }
                vec![format!(
                    "must be `spec.version+\".\"+spec.group`: {}",
                    keel_api::gofmt::quote(&required)
                )]
            })
        }
        NameCheck::CanonicalIp => Box::new(ipaddress::name_errors),
    }
}

/// `ObjectMeta` causes of an object of this type (create rules, also applied to the new
/// object of an update).
pub fn meta_causes(s: &Strategy, obj: &Value) -> Vec<StatusCause> {
    let meta = obj.get("metadata").unwrap_or(&Value::Null);
    let check = name_check(s, obj);
    names::validate_object_meta_with(meta, s.traits.namespaced, &*check)
}

/// `ObjectMeta` causes of the new object of an update. A CustomResourceDefinition's name is
/// not derived from its spec again: upstream's update validation checks no name rule (the
/// name cannot change), and a spec whose group or plural changed is reported by the spec's
/// immutability rules instead.
pub fn meta_causes_on_update(s: &Strategy, obj: &Value) -> Vec<StatusCause> {
    if !matches!(s.names, NameCheck::PluralDotGroup) {
        return meta_causes(s, obj);
    }
    let meta = obj.get("metadata").unwrap_or(&Value::Null);
    let rule = NameRule::Dns1123Subdomain;
    names::validate_object_meta_with(meta, s.traits.namespaced, &move |name, prefix| {
        rule.check(name, prefix)
    })
}

/// The type's own rules for a new object, without its metadata.
pub fn type_rules(kind: Kind, obj: &Value) -> Vec<FieldErr> {
    match kind {
        Kind::Pod => {
            let spec = obj.get("spec").unwrap_or(&Value::Null);
            podspec_validation::validate_pod_spec(spec, "spec")
        }
        Kind::Service => service::validate(obj),
        Kind::Node => node::validate(obj),
        Kind::ConfigMap => config::validate_config_map(obj),
        Kind::Secret => config::validate_secret(obj),
        Kind::IpAddress => ipaddress::validate(obj),
        Kind::HorizontalPodAutoscaler => autoscaling::validate(obj),
        Kind::ServiceCidr => ipaddress::validate_service_cidr(obj),
        Kind::Event => core_defaults::validate_event(obj, false),
        Kind::EventV1 => core_defaults::validate_event(obj, true),
        Kind::Endpoints => endpoints::validate(obj),
        Kind::PersistentVolume => core_defaults::validate_persistent_volume(obj),
        Kind::PriorityLevelConfiguration => flowcontrol::validate_priority_level(obj),
        Kind::CustomResourceDefinition => crd::validate(obj),
        Kind::Namespace
        | Kind::Other
        | Kind::PersistentVolumeClaim
        | Kind::VolumeAttributesClass
        | Kind::PodTemplate
        | Kind::EndpointSlice => Vec::new(),
        kind if dra::owns(kind) => dra::validate_create(kind, obj),
        workload => workload_validation::validate(workload, obj),
    }
}

/// The type's rules for the new object of an update: those of a new object, except that an
/// events.k8s.io event is not held to the strict create rules again (upstream checks instead
/// that what they fixed does not change, in [`update_rules`]).
pub fn type_rules_on_update(kind: Kind, new: &Value) -> Vec<FieldErr> {
    match kind {
        // A CRD's update rules repeat the create rules with relaxations, in one list.
        Kind::EventV1 | Kind::CustomResourceDefinition => Vec::new(),
        kind => type_rules(kind, new),
    }
}

/// The type's rules on what an update may change.
pub fn update_rules(kind: Kind, new: &Value, old: &Value) -> Vec<FieldErr> {
    match kind {
        Kind::EventV1 => core_defaults::validate_event_v1_update(new, old),
        Kind::Pod => pod::validate_update(new, old),
        Kind::Service => service::validate_update(new, old),
        Kind::ConfigMap => config::validate_update(new, old, &["data", "binaryData"]),
        Kind::Secret => {
            let mut errs = config::validate_update(new, old, &["data"]);
            errs.extend(config::validate_secret_type_update(new, old));
            errs
        }
        Kind::IpAddress => ipaddress::validate_update(new, old),
        Kind::ServiceCidr => ipaddress::validate_service_cidr_update(new, old),
        Kind::CustomResourceDefinition => crd::validate_update(new, old),
        kind => workload_validation::validate_update(kind, new, old),
    }
}

/// Metadata causes followed by the type's, each text once (a type rule that repeats a
/// metadata check does not report it twice).
pub fn merge(mut causes: Vec<StatusCause>, type_errs: Vec<FieldErr>) -> Vec<StatusCause> {
    for e in type_errs {
        let cause = e.into_cause();
        if !causes.contains(&cause) {
            causes.push(cause);
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;
    use keel_api::status::field;

    /// A type rule that repeats a metadata check is reported once; distinct ones all are.
    #[test]
    fn merge_keeps_each_text_once_in_order() {
        let meta = vec![field::required(
            "metadata.name",
            "name or generateName is required",
        )];
        let errs = vec![
            FieldErr::required("metadata.name", "name or generateName is required"),
            FieldErr::required("spec.ports", ""),
            FieldErr::required("spec.ports", ""),
        ];
        let got: Vec<String> = merge(meta, errs).iter().map(field::error_text).collect();
        assert_eq!(
            got,
            [
                "metadata.name: Required value: name or generateName is required",
                "spec.ports: Required value"
            ]
        );
    }
}
