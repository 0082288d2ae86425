//! Create-time defaults of the cluster-scoped API kinds that have no richer policy here
//! (admission registration, CRDs, priority classes, API priority and fairness, storage, DRA
//! pool status requests, CSRs), plus a CSR's requester.
//!
//! A VolumeAttributesClass has no defaults; its `kubernetes.io/vac-protection` finalizer
//! (upstream's StorageObjectInUseProtection admission) is added with the volumes' and claims'
//! in `core_defaults::admit_create`, and released by the server's volume protection
//! controller once no claim or volume uses the class.
//!
//! Values and member order were observed on a v1.36.2 kube-apiserver, creating the same
//! objects side by side. Members a default adds are moved to their Go field position, so a
//! defaulted object prints with upstream's key order. keel stores each version as written,
//! so version-specific rules read the object's own `apiVersion`.

use crate::ctx::{Ctx, Requester};
use crate::json::{child, child_if, default, each_obj};
use serde_json::{json, Map, Value};

/// Default webhook call timeout, seconds (admissionregistration/v1).
pub const WEBHOOK_TIMEOUT_SECONDS_DEFAULT: i64 = 10;
/// Default port of a webhook's (or CRD conversion webhook's) service.
pub const SERVICE_PORT_DEFAULT: i64 = 443;
/// Default `matchingPrecedence` of a FlowSchema.
pub const MATCHING_PRECEDENCE_DEFAULT: i64 = 1000;
/// Default `nominalConcurrencyShares` of a Limited priority level.
pub const NOMINAL_CONCURRENCY_SHARES_DEFAULT: i64 = 30;
/// Default queuing of a priority level whose limit response is `Queue`.
pub const QUEUES_DEFAULT: i64 = 64;
pub const HAND_SIZE_DEFAULT: i64 = 8;
pub const QUEUE_LENGTH_LIMIT_DEFAULT: i64 = 50;
/// Default `spec.limit` of a ResourcePoolStatusRequest.
pub const POOL_STATUS_LIMIT_DEFAULT: i64 = 100;

const ADMISSION: &str = "admissionregistration.k8s.io";
const STORAGE: &str = "storage.k8s.io";
const FLOWCONTROL: &str = "flowcontrol.apiserver.k8s.io";

/// Whether this module defaults `group`/`resource`.
pub fn owns(group: &str, resource: &str) -> bool {
    matches!(
        (group, resource),
        (ADMISSION, _)
            | ("apiextensions.k8s.io", "customresourcedefinitions")
            | ("scheduling.k8s.io", "priorityclasses")
            | (FLOWCONTROL, "prioritylevelconfigurations" | "flowschemas")
            | (STORAGE, "storageclasses" | "csidrivers" | "csinodes")
            | ("resource.k8s.io", "resourcepoolstatusrequests")
    )
}

/// Upstream's scheme defaults for `group`/`resource` (applied on create and update alike).
pub fn apply(group: &str, resource: &str, obj: &mut Value) {
    let version = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .and_then(|gv| gv.rsplit_once('/'))
        .map_or("", |(_, v)| v)
        .to_string();
    let Some(o) = obj.as_object_mut() else {
        return;
    };
    match (group, resource) {
        (ADMISSION, "mutatingwebhookconfigurations") => webhooks(o, true),
        (ADMISSION, "validatingwebhookconfigurations") => webhooks(o, false),
        (ADMISSION, "validatingadmissionpolicies" | "mutatingadmissionpolicies") => {
            admission_policy(o, resource == "mutatingadmissionpolicies")
        }
        (ADMISSION, "validatingadmissionpolicybindings" | "mutatingadmissionpolicybindings") => {
            policy_binding(o, resource == "mutatingadmissionpolicybindings", &version)
        }
        ("apiextensions.k8s.io", "customresourcedefinitions") => crd(o),
        ("scheduling.k8s.io", "priorityclasses") => {
            default(o, "preemptionPolicy", json!("PreemptLowerPriority"));
            order(
                o,
                &["value", "globalDefault", "description", "preemptionPolicy"],
            );
        }
        (FLOWCONTROL, "prioritylevelconfigurations") => priority_level(o),
        (FLOWCONTROL, "flowschemas") => {
            if let Some(spec) = child(o, "spec") {
                if spec
                    .get("matchingPrecedence")
                    .and_then(Value::as_i64)
                    .unwrap_or(0)
                    == 0
                {
                    spec.insert(
                        "matchingPrecedence".into(),
                        json!(MATCHING_PRECEDENCE_DEFAULT),
                    );
                }
                order(
                    spec,
                    &[
                        "priorityLevelConfiguration",
                        "matchingPrecedence",
                        "distinguisherMethod",
                        "rules",
                    ],
                );
            }
        }
        (STORAGE, "storageclasses") => {
            default(o, "reclaimPolicy", json!("Delete"));
            default(o, "volumeBindingMode", json!("Immediate"));
            order(
                o,
                &[
                    "provisioner",
                    "parameters",
                    "reclaimPolicy",
                    "mountOptions",
                    "allowVolumeExpansion",
                    "volumeBindingMode",
                    "allowedTopologies",
                ],
            );
        }
        (STORAGE, "csidrivers") => csi_driver(o),
        (STORAGE, "csinodes") => {
            // `topologyKeys` has no omitempty upstream: an absent list prints as null.
            for driver in child_if(o, "spec")
                .into_iter()
                .flat_map(|s| each_obj(s, "drivers"))
            {
                driver.entry("topologyKeys").or_insert(Value::Null);
                order(driver, &["name", "nodeID", "topologyKeys", "allocatable"]);
            }
        }
        ("resource.k8s.io", "resourcepoolstatusrequests") => {
            if let Some(spec) = child(o, "spec") {
                default(spec, "limit", json!(POOL_STATUS_LIMIT_DEFAULT));
                order(spec, &["driver", "poolName", "limit"]);
            }
        }
        _ => {}
    }
}

/// What upstream adds to a new object beyond its scheme defaults: the requester of a CSR.
pub fn prepare_create(group: &str, resource: &str, obj: &mut Value, ctx: &Ctx) {
    if (group, resource) != ("certificates.k8s.io", "certificatesigningrequests") {
        return;
    }
    if let Some(spec) = obj.as_object_mut().and_then(|o| child(o, "spec")) {
        set_requester(spec, ctx.requester.as_ref());
    }
}

/// What upstream's update strategies keep from the stored object: a CSR's spec (who asked
/// for what) never changes after create.
pub fn prepare_update(group: &str, resource: &str, new: &mut Value, old: &Value) {
    if (group, resource) == ("certificates.k8s.io", "certificatesigningrequests") {
        if let (Some(n), Some(spec)) = (new.as_object_mut(), old.get("spec")) {
            n.insert("spec".into(), spec.clone());
        }
    }
}

/// A CSR's `username`, `uid`, `groups` and `extra` are who asked for it, whatever the body
/// said (empty members are omitted, as upstream's `omitempty`).
fn set_requester(spec: &mut Map<String, Value>, user: Option<&Requester>) {
    for key in ["username", "uid", "groups", "extra"] {
        spec.shift_remove(key);
    }
    let Some(user) = user else {
        return;
    };
    if !user.name.is_empty() {
        spec.insert("username".into(), json!(user.name));
    }
    if !user.uid.is_empty() {
        spec.insert("uid".into(), json!(user.uid));
    }
    if !user.groups.is_empty() {
        spec.insert("groups".into(), json!(user.groups));
    }
    order(
        spec,
        &[
            "request",
            "signerName",
            "expirationSeconds",
            "usages",
            "username",
            "uid",
            "groups",
        ],
    );
}

/// Moves the present `keys` to the end of `map` in the order given; other members keep
/// their places before them. With `keys` a struct's Go field order (and only its members
/// in `map`), the map prints in Go's order.
fn order(map: &mut Map<String, Value>, keys: &[&str]) {
    for key in keys {
        if let Some(v) = map.shift_remove(*key) {
            map.insert((*key).to_string(), v);
        }
    }
}

fn webhooks(o: &mut Map<String, Value>, mutating: bool) {
    for hook in each_obj(o, "webhooks") {
        default(hook, "failurePolicy", json!("Fail"));
        default(hook, "matchPolicy", json!("Equivalent"));
        default(hook, "namespaceSelector", json!({}));
        default(hook, "objectSelector", json!({}));
        default(
            hook,
            "timeoutSeconds",
            json!(WEBHOOK_TIMEOUT_SECONDS_DEFAULT),
        );
        if mutating {
            default(hook, "reinvocationPolicy", json!("Never"));
        }
        if let Some(client) = child_if(hook, "clientConfig") {
            client_config(client);
        }
        rules(hook, "rules");
        order(
            hook,
            &[
                "name",
                "clientConfig",
                "rules",
                "failurePolicy",
                "matchPolicy",
                "namespaceSelector",
                "objectSelector",
                "sideEffects",
                "timeoutSeconds",
                "admissionReviewVersions",
                "reinvocationPolicy",
                "matchConditions",
            ],
        );
    }
}

/// A webhook client configuration: its service's port defaults to 443.
fn client_config(client: &mut Map<String, Value>) {
    if let Some(svc) = child_if(client, "service") {
        default(svc, "port", json!(SERVICE_PORT_DEFAULT));
        order(svc, &["namespace", "name", "path", "port"]);
    }
}

/// Every rule of `map[key]` gets `scope: "*"`.
fn rules(map: &mut Map<String, Value>, key: &str) {
    for rule in each_obj(map, key) {
        default(rule, "scope", json!("*"));
        order(
            rule,
            &[
                "resourceNames",
                "operations",
                "apiGroups",
                "apiVersions",
                "resources",
                "scope",
            ],
        );
    }
}

/// `MatchResources` (a policy's `matchConstraints`, a binding's `matchResources`).
fn match_resources(m: &mut Map<String, Value>) {
    default(m, "namespaceSelector", json!({}));
    default(m, "objectSelector", json!({}));
    default(m, "matchPolicy", json!("Equivalent"));
    rules(m, "resourceRules");
    rules(m, "excludeResourceRules");
    order(
        m,
        &[
            "namespaceSelector",
            "objectSelector",
            "resourceRules",
            "excludeResourceRules",
            "matchPolicy",
        ],
    );
}

fn admission_policy(o: &mut Map<String, Value>, mutating: bool) {
    let Some(spec) = child(o, "spec") else {
        return;
    };
    default(spec, "failurePolicy", json!("Fail"));
    if let Some(m) = child_if(spec, "matchConstraints") {
        match_resources(m);
    }
    let go_order: &[&str] = if mutating {
        &[
            "paramKind",
            "matchConstraints",
            "variables",
            "mutations",
            "failurePolicy",
            "matchConditions",
            "reinvocationPolicy",
        ]
    } else {
        &[
            "paramKind",
            "matchConstraints",
            "validations",
            "failurePolicy",
            "auditAnnotations",
            "matchConditions",
            "variables",
        ]
    };
    order(spec, go_order);
}

fn policy_binding(o: &mut Map<String, Value>, mutating: bool, version: &str) {
    let Some(spec) = child_if(o, "spec") else {
        return;
    };
    if let Some(m) = child_if(spec, "matchResources") {
        match_resources(m);
    }
    // Only v1alpha1 defaults a parameter reference's missing-parameter action.
    if version == "v1alpha1" {
        if let Some(p) = child_if(spec, "paramRef") {
            default(p, "parameterNotFoundAction", json!("Deny"));
            order(
                p,
                &["name", "namespace", "selector", "parameterNotFoundAction"],
            );
        }
    }
    if mutating {
        order(spec, &["policyName", "paramRef", "matchResources"]);
    } else {
        order(
            spec,
            &[
                "policyName",
                "paramRef",
                "matchResources",
                "validationActions",
            ],
        );
    }
}

fn crd(o: &mut Map<String, Value>) {
    let Some(spec) = child(o, "spec") else {
        return;
    };
    if let Some(names) = child_if(spec, "names") {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if names
            .get("singular")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
        {
            names.insert("singular".into(), json!(kind.to_lowercase()));
        }
        if names
            .get("listKind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
            && !kind.is_empty()
        {
            names.insert("listKind".into(), json!(format!("{kind}List")));
        }
        order(
            names,
            &[
                "plural",
                "singular",
                "shortNames",
                "kind",
                "listKind",
                "categories",
            ],
        );
    }
    default(spec, "conversion", json!({"strategy": "None"}));
    if let Some(client) = child_if(spec, "conversion")
        .and_then(|c| child_if(c, "webhook"))
        .and_then(|w| child_if(w, "clientConfig"))
    {
        client_config(client);
    }
    order(
        spec,
        &[
            "group",
            "names",
            "scope",
            "versions",
            "conversion",
            "preserveUnknownFields",
        ],
    );
}

fn priority_level(o: &mut Map<String, Value>) {
    let Some(spec) = child(o, "spec") else {
        return;
    };
    if let Some(limited) = child_if(spec, "limited") {
        default(
            limited,
            "nominalConcurrencyShares",
            json!(NOMINAL_CONCURRENCY_SHARES_DEFAULT),
        );
        default(limited, "lendablePercent", json!(0));
        if let Some(response) = child_if(limited, "limitResponse") {
            order(response, &["type", "queuing"]);
        }
        if let Some(queuing) =
            child_if(limited, "limitResponse").and_then(|r| child_if(r, "queuing"))
        {
            for (key, value) in [
                ("queues", QUEUES_DEFAULT),
                ("handSize", HAND_SIZE_DEFAULT),
                ("queueLengthLimit", QUEUE_LENGTH_LIMIT_DEFAULT),
            ] {
                if queuing.get(key).and_then(Value::as_i64).unwrap_or(0) == 0 {
                    queuing.insert(key.into(), json!(value));
                }
            }
            order(queuing, &["queues", "handSize", "queueLengthLimit"]);
        }
        order(
            limited,
            &[
                "nominalConcurrencyShares",
                "limitResponse",
                "lendablePercent",
                "borrowingLimitPercent",
            ],
        );
    }
    if let Some(exempt) = child_if(spec, "exempt") {
        default(exempt, "nominalConcurrencyShares", json!(0));
        default(exempt, "lendablePercent", json!(0));
        order(exempt, &["nominalConcurrencyShares", "lendablePercent"]);
    }
    order(spec, &["type", "limited", "exempt"]);
}

fn csi_driver(o: &mut Map<String, Value>) {
    let Some(spec) = child(o, "spec") else {
        return;
    };
    default(spec, "attachRequired", json!(true));
    default(spec, "podInfoOnMount", json!(false));
    default(spec, "storageCapacity", json!(false));
    default(spec, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
    let no_modes = spec
        .get("volumeLifecycleModes")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if no_modes {
        spec.insert("volumeLifecycleModes".into(), json!(["Persistent"]));
    }
    default(spec, "requiresRepublish", json!(false));
    // SELinuxMountReadWriteOncePod is on in v1.36 (VolumeLimitScaling, which would default
    // `preventPodSchedulingIfMissing`, is not).
    default(spec, "seLinuxMount", json!(false));
    order(
        spec,
        &[
            "attachRequired",
            "podInfoOnMount",
            "volumeLifecycleModes",
            "storageCapacity",
            "fsGroupPolicy",
            "tokenRequests",
            "requiresRepublish",
            "seLinuxMount",
            "nodeAllocatableUpdatePeriodSeconds",
            "serviceAccountTokenInSecrets",
            "preventPodSchedulingIfMissing",
        ],
    );
}

#[cfg(test)]
mod tests;
