//! Printers for cluster-management kinds: admission, RBAC bindings, API priority and fairness,
//! certificates, API services, component statuses, disruption budgets, lease candidates,
//! storage versions and their migrations, and the gang-scheduling kinds.

use keel_api::jsonmap::JsonPointer;
use std::cmp::Ordering;

use serde_json::{json, Value};

use super::infra::{int_or_string, NAME_AGE};
use super::time::{human_duration, since};
use super::util::{arr, created, format_labels, i, name, s};
use super::{col, field, sentence, wide, Col, Printer, Row, AGE, NAME};

pub(crate) fn printer(group: &str, kind: &str) -> Option<&'static Printer> {
    match (group, kind) {
        ("", "ComponentStatus") => Some(&COMPONENT_STATUS),
        ("policy", "PodDisruptionBudget") => Some(&POD_DISRUPTION_BUDGET),
        ("apiregistration.k8s.io", "APIService") => Some(&API_SERVICE),
        ("rbac.authorization.k8s.io", "RoleBinding") => Some(&ROLE_BINDING),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => Some(&CLUSTER_ROLE_BINDING),
        (
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration",
        ) => Some(&WEBHOOK_CONFIGURATION),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
            Some(&VALIDATING_ADMISSION_POLICY)
        }
        ("admissionregistration.k8s.io", "MutatingAdmissionPolicy") => {
            Some(&MUTATING_ADMISSION_POLICY)
        }
        (
            "admissionregistration.k8s.io",
            "ValidatingAdmissionPolicyBinding" | "MutatingAdmissionPolicyBinding",
        ) => Some(&ADMISSION_POLICY_BINDING),
        ("flowcontrol.apiserver.k8s.io", "FlowSchema") => Some(&FLOW_SCHEMA),
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration") => Some(&PRIORITY_LEVEL),
        ("certificates.k8s.io", "CertificateSigningRequest") => Some(&CSR),
        ("certificates.k8s.io", "ClusterTrustBundle") => Some(&CLUSTER_TRUST_BUNDLE),
        ("certificates.k8s.io", "PodCertificateRequest") => Some(&POD_CERTIFICATE_REQUEST),
        ("coordination.k8s.io", "LeaseCandidate") => Some(&LEASE_CANDIDATE),
        ("internal.apiserver.k8s.io", "StorageVersion") => Some(&STORAGE_VERSION),
        ("storagemigration.k8s.io", "StorageVersionMigration") => Some(&STORAGE_VERSION_MIGRATION),
        ("scheduling.k8s.io", "Workload") => Some(&NAME_AGE),
        ("scheduling.k8s.io", "PodGroup") => Some(&POD_GROUP),
        _ => None,
    }
}

/// The order upstream lists rows of a kind in, when it is not the storage order: flow schemas
/// by matching precedence, then name (the order the API server matches them in).
pub(crate) fn row_order(group: &str, kind: &str) -> Option<fn(&Value, &Value) -> Ordering> {
    match (group, kind) {
        ("flowcontrol.apiserver.k8s.io", "FlowSchema") => Some(|a, b| {
            i(a, "/spec/matchingPrecedence")
                .cmp(&i(b, "/spec/matchingPrecedence"))
                .then_with(|| name(a).cmp(name(b)))
        }),
        _ => None,
    }
}

/// The first condition of `type`, if any.
fn condition<'a>(obj: &'a Value, pointer: &str, ty: &str) -> Option<&'a Value> {
    arr(obj, pointer).iter().find(|c| s(c, "/type") == ty)
}

// ---- core, policy, apiregistration ----

const COMPONENT_STATUS: Printer = Printer {
    columns: &[
        NAME,
        col(
            "Status",
            "string",
            sentence("Status of the component conditions"),
        ),
        col(
            "Message",
            "string",
            sentence("Message of the component conditions"),
        ),
        col(
            "Error",
            "string",
            sentence("Error of the component conditions"),
        ),
    ],
    print: |cs, _| {
        let healthy = condition(cs, "/conditions", "Healthy");
        let status = match healthy {
            None => "Unknown",
            Some(c) if s(c, "/status") == "True" => "Healthy",
            Some(_) => "Unhealthy",
        };
        let field = |f: &str| healthy.map_or("", |c| s(c, f));
        Row::new(vec![
            json!(name(cs)),
            json!(status),
            json!(field("/message")),
            json!(field("/error")),
        ])
    },
};

const POD_DISRUPTION_BUDGET: Printer = Printer {
    columns: &[
        NAME,
        col(
            "Min Available",
            "string",
            sentence("The minimum number of pods that must be available."),
        ),
        col(
            "Max Unavailable",
            "string",
            sentence("The maximum number of pods that may be unavailable."),
        ),
        col(
            "Allowed Disruptions",
            "integer",
            sentence("Calculated number of pods that may be disrupted at this time."),
        ),
        AGE,
    ],
    print: |pdb, now| {
        let bound = |p: &str| {
            pdb.at(p)
                .filter(|v| !v.is_null())
                .map_or_else(|| "N/A".to_owned(), int_or_string)
        };
        Row::new(vec![
            json!(name(pdb)),
            json!(bound("/spec/minAvailable")),
            json!(bound("/spec/maxUnavailable")),
            json!(i(pdb, "/status/disruptionsAllowed")),
            json!(since(created(pdb), now)),
        ])
    },
};

const API_SERVICE: Printer = Printer {
    columns: &[
        NAME,
        col(
            "Service",
            "string",
            sentence("The reference to the service that hosts this API endpoint."),
        ),
        col(
            "Available",
            "string",
            sentence("Whether this service is available."),
        ),
        AGE,
    ],
    print: |svc, now| {
        let service = match svc.at("/spec/service").filter(|v| v.is_object()) {
            Some(r) => format!("{}/{}", s(r, "/namespace"), s(r, "/name")),
            None => "Local".to_owned(),
        };
        let available = match condition(svc, "/status/conditions", "Available") {
            None => "Unknown".to_owned(),
            Some(c) if s(c, "/status") == "True" || s(c, "/reason").is_empty() => {
                s(c, "/status").to_owned()
            }
            Some(c) => format!("{} ({})", s(c, "/status"), s(c, "/reason")),
        };
        Row::new(vec![
            json!(name(svc)),
            json!(service),
            json!(available),
            json!(since(created(svc), now)),
        ])
    },
};

// ---- rbac ----

/// Users, groups and service accounts (`namespace/name`) of a binding, each `, `-joined.
fn subjects(binding: &Value) -> [String; 3] {
    let (mut users, mut groups, mut sas) = (Vec::new(), Vec::new(), Vec::new());
    for subject in arr(binding, "/subjects") {
        match s(subject, "/kind") {
            "User" => users.push(s(subject, "/name").to_owned()),
            "Group" => groups.push(s(subject, "/name").to_owned()),
            "ServiceAccount" => sas.push(format!(
                "{}/{}",
                s(subject, "/namespace"),
                s(subject, "/name")
            )),
            _ => {}
        }
    }
    [users.join(", "), groups.join(", "), sas.join(", ")]
}

/// Role, age, users, groups and service accounts of a binding.
fn print_binding(rb: &Value, now: i64) -> Row {
    let [users, groups, sas] = subjects(rb);
    Row::new(vec![
        json!(name(rb)),
        json!(format!(
            "{}/{}",
            s(rb, "/roleRef/kind"),
            s(rb, "/roleRef/name")
        )),
        json!(since(created(rb), now)),
        json!(users),
        json!(groups),
        json!(sas),
    ])
}

const ROLE_BINDING: Printer = Printer {
    columns: &[
        NAME,
        col("Role", "string", sentence("RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.")),
        AGE,
        wide("Users", "string", sentence("Users in the roleBinding")),
        wide("Groups", "string", sentence("Groups in the roleBinding")),
        wide("ServiceAccounts", "string", sentence("ServiceAccounts in the roleBinding")),
    ],
    print: print_binding,
};

// The same cells; the descriptions name the kind.
const CLUSTER_ROLE_BINDING: Printer = Printer {
    columns: &[
        NAME,
        col("Role", "string", sentence("RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.")),
        AGE,
        wide("Users", "string", sentence("Users in the clusterRoleBinding")),
        wide("Groups", "string", sentence("Groups in the clusterRoleBinding")),
        wide("ServiceAccounts", "string", sentence("ServiceAccounts in the clusterRoleBinding")),
    ],
    print: print_binding,
};

// ---- admission ----

const WEBHOOK_CONFIGURATION: Printer = Printer {
    columns: &[
        NAME,
        col(
            "Webhooks",
            "integer",
            sentence("Webhooks indicates the number of webhooks registered in this configuration"),
        ),
        AGE,
    ],
    print: |w, now| {
        Row::new(vec![
            json!(name(w)),
            json!(arr(w, "/webhooks").len()),
            json!(since(created(w), now)),
        ])
    },
};

fn param_kind(policy: &Value) -> String {
    match policy.at("/spec/paramKind").filter(|v| v.is_object()) {
        Some(k) => format!("{}/{}", s(k, "/apiVersion"), s(k, "/kind")),
        None => "<unset>".to_owned(),
    }
}

fn print_admission_policy(policy: &Value, now: i64, rules: &str) -> Row {
    Row::new(vec![
        json!(name(policy)),
        json!(arr(policy, rules).len()),
        json!(param_kind(policy)),
        json!(since(created(policy), now)),
    ])
}

const VALIDATING_ADMISSION_POLICY: Printer = Printer {
    columns: &[
        NAME,
        col("Validations", "integer", sentence("Validations indicates the number of validation rules defined in this configuration")),
        col("ParamKind", "string", sentence("ParamKind specifies the kind of resources used to parameterize this policy")),
        AGE,
    ],
    print: |p, now| print_admission_policy(p, now, "/spec/validations"),
};

const MUTATING_ADMISSION_POLICY: Printer = Printer {
    columns: &[
        NAME,
        col(
            "Mutations",
            "integer",
            sentence(
                "Mutation indicates the number of mutations rules defined in this configuration",
            ),
        ),
        col(
            "ParamKind",
            "string",
            sentence("ParamKind specifies the kind of resources used to parameterize this policy"),
        ),
        AGE,
    ],
    print: |p, now| print_admission_policy(p, now, "/spec/mutations"),
};

/// A label selector in Go's generated `String()` form, which upstream prints for a binding's
/// `paramRef.selector`: `&LabelSelector{MatchLabels:map[string]string{a: b,},...}`.
fn go_label_selector(sel: &Value) -> String {
    let mut labels: Vec<(&String, &Value)> = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .map(|m| m.iter().collect())
        .unwrap_or_default();
    labels.sort_by(|a, b| a.0.cmp(b.0));
    let labels: String = labels
        .iter()
        .map(|(k, v)| format!("{k}: {},", v.as_str().unwrap_or("")))
        .collect();
    let requirements: String = arr(sel, "/matchExpressions")
        .iter()
        .map(|r| {
            let values: Vec<&str> = arr(r, "/values").iter().filter_map(Value::as_str).collect();
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                s(r, "/key"),
                s(r, "/operator"),
                values.join(" ")
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{requirements}}},}}"
    )
}

fn param_ref(binding: &Value) -> String {
    let Some(pr) = binding.at("/spec/paramRef").filter(|v| v.is_object()) else {
        return "<unset>".to_owned();
    };
    let (ns, param) = (s(pr, "/namespace"), s(pr, "/name"));
    if !param.is_empty() {
        // A name without a namespace may be cluster-scoped or in every namespace.
        let ns = if ns.is_empty() { "*" } else { ns };
        return format!("{ns}/{param}");
    }
    match pr.get("selector").filter(|v| v.is_object()) {
        Some(sel) => go_label_selector(sel),
        None => "<unset>".to_owned(),
    }
}

const ADMISSION_POLICY_BINDING: Printer = Printer {
    columns: &[
        NAME,
        col(
            "PolicyName",
            "string",
            sentence(
                "PolicyName indicates the policy definition which the policy binding binded to",
            ),
        ),
        col(
            "ParamRef",
            "string",
            sentence("ParamRef indicates the param resource which sets the configuration param"),
        ),
        AGE,
    ],
    print: |b, now| {
        Row::new(vec![
            json!(name(b)),
            json!(s(b, "/spec/policyName")),
            json!(param_ref(b)),
            json!(since(created(b), now)),
        ])
    },
};

// ---- flow control ----

const FLOW_SCHEMA: Printer = Printer {
    columns: &[
        NAME,
        col(
            "PriorityLevel",
            "string",
            field(
                "io.k8s.api.flowcontrol.v1.PriorityLevelConfigurationReference",
                "name",
            ),
        ),
        col(
            "MatchingPrecedence",
            "string",
            field(
                "io.k8s.api.flowcontrol.v1.FlowSchemaSpec",
                "matchingPrecedence",
            ),
        ),
        col(
            "DistinguisherMethod",
            "string",
            field(
                "io.k8s.api.flowcontrol.v1.FlowSchemaSpec",
                "distinguisherMethod",
            ),
        ),
        AGE,
        col(
            "MissingPL",
            "string",
            sentence("references a broken or non-existent PriorityLevelConfiguration"),
        ),
    ],
    print: |fs, now| {
        let method = fs
            .at("/spec/distinguisherMethod/type")
            .and_then(Value::as_str)
            .unwrap_or("<none>");
        let dangling =
            condition(fs, "/status/conditions", "Dangling").map_or("?", |c| s(c, "/status"));
        Row::new(vec![
            json!(name(fs)),
            json!(s(fs, "/spec/priorityLevelConfiguration/name")),
            json!(i(fs, "/spec/matchingPrecedence")),
            json!(method),
            json!(since(created(fs), now)),
            json!(dangling),
        ])
    },
};

const PRIORITY_LEVEL: Printer = Printer {
    columns: &[
        NAME,
        col(
            "Type",
            "string",
            field(
                "io.k8s.api.flowcontrol.v1.PriorityLevelConfigurationSpec",
                "type",
            ),
        ),
        col(
            "NominalConcurrencyShares",
            "string",
            field(
                "io.k8s.api.flowcontrol.v1.LimitedPriorityLevelConfiguration",
                "nominalConcurrencyShares",
            ),
        ),
        col(
            "Queues",
            "string",
            field("io.k8s.api.flowcontrol.v1.QueuingConfiguration", "queues"),
        ),
        col(
            "HandSize",
            "string",
            field("io.k8s.api.flowcontrol.v1.QueuingConfiguration", "handSize"),
        ),
        col(
            "QueueLengthLimit",
            "string",
            field(
                "io.k8s.api.flowcontrol.v1.QueuingConfiguration",
                "queueLengthLimit",
            ),
        ),
        AGE,
    ],
    print: |pl, now| {
        let none = || json!("<none>");
        let (mut shares, mut queues, mut hand, mut length) = (none(), none(), none(), none());
        if let Some(limited) = pl.at("/spec/limited").filter(|v| v.is_object()) {
            shares = json!(i(limited, "/nominalConcurrencyShares"));
            if let Some(q) = limited
                .at("/limitResponse/queuing")
                .filter(|v| v.is_object())
            {
                queues = json!(i(q, "/queues"));
                hand = json!(i(q, "/handSize"));
                length = json!(i(q, "/queueLengthLimit"));
            }
        }
        Row::new(vec![
            json!(name(pl)),
            json!(s(pl, "/spec/type")),
            shares,
            queues,
            hand,
            length,
            json!(since(created(pl), now)),
        ])
    },
};

// ---- certificates ----

fn csr_condition(csr: &Value) -> String {
    let has = |ty: &str| condition(csr, "/status/conditions", ty).is_some();
    let mut status = if has("Denied") {
        "Denied"
    } else if has("Approved") {
        "Approved"
    } else {
        "Pending"
    }
    .to_owned();
    if has("Failed") {
        status.push_str(",Failed");
    }
    if !s(csr, "/status/certificate").is_empty() {
        status.push_str(",Issued");
    }
    status
}

fn or_none_str(v: &str) -> &str {
    if v.is_empty() {
        "<none>"
    } else {
        v
    }
}

const CSR: Printer = Printer {
    columns: &[
        NAME,
        AGE,
        col("SignerName", "string", sentence("Requested signer for the request. It is a qualified name in the form: `scope-hostname.io/name`. If empty, it will be defaulted:\n 1. If it's a kubelet client certificate, it is assigned\n    \"kubernetes.io/kube-apiserver-client-kubelet\".\n 2. If it's a kubelet serving certificate, it is assigned\n    \"kubernetes.io/kubelet-serving\".\n 3. Otherwise, it is assigned \"kubernetes.io/legacy-unknown\".\nDistribution of trust for signers happens out of band. You can select on this field using `spec.signerName`.")),
        col("Requestor", "string", sentence("Base64-encoded PKCS#10 CSR data")),
        col("RequestedDuration", "string", field("io.k8s.api.certificates.v1.CertificateSigningRequestSpec", "expirationSeconds")),
        col("Condition", "string", sentence("Conditions applied to the request, such as approval or denial.")),
    ],
    print: |csr, now| {
        let duration = csr
            .at("/spec/expirationSeconds")
            .and_then(Value::as_i64)
            .map_or_else(|| "<none>".to_owned(), human_duration);
        Row::new(vec![
            json!(name(csr)),
            json!(since(created(csr), now)),
            json!(or_none_str(s(csr, "/spec/signerName"))),
            json!(s(csr, "/spec/username")),
            json!(duration),
            json!(csr_condition(csr)),
        ])
    },
};

const CLUSTER_TRUST_BUNDLE: Printer = Printer {
    columns: &[
        NAME,
        col(
            "SignerName",
            "string",
            field(
                "io.k8s.api.certificates.v1beta1.ClusterTrustBundleSpec",
                "signerName",
            ),
        ),
    ],
    print: |b, _| {
        Row::new(vec![
            json!(name(b)),
            json!(or_none_str(s(b, "/spec/signerName"))),
        ])
    },
};

const POD_CERTIFICATE_REQUEST: Printer = Printer {
    columns: &[
        NAME,
        col(
            "PodName",
            "string",
            field(
                "io.k8s.api.certificates.v1beta1.PodCertificateRequestSpec",
                "podName",
            ),
        ),
        col(
            "ServiceAccountName",
            "string",
            field(
                "io.k8s.api.certificates.v1beta1.PodCertificateRequestSpec",
                "serviceAccountName",
            ),
        ),
        col(
            "NodeName",
            "string",
            field(
                "io.k8s.api.certificates.v1beta1.PodCertificateRequestSpec",
                "nodeName",
            ),
        ),
        col(
            "SignerName",
            "string",
            field(
                "io.k8s.api.certificates.v1beta1.PodCertificateRequestSpec",
                "signerName",
            ),
        ),
        col(
            "State",
            "string",
            sentence("Is the request Pending, Issued, Denied, or Failed?"),
        ),
        col(
            "UnverifiedUserAnnotations",
            "string",
            field(
                "io.k8s.api.certificates.v1beta1.PodCertificateRequestSpec",
                "unverifiedUserAnnotations",
            ),
        ),
    ],
    print: |r, _| {
        // Issued, Denied and Failed are exclusive; the last one listed wins.
        let state = arr(r, "/status/conditions")
            .iter()
            .filter_map(|c| match s(c, "/type") {
                t @ ("Issued" | "Denied" | "Failed") => Some(t),
                _ => None,
            })
            .next_back()
            .unwrap_or("Pending");
        Row::new(vec![
            json!(name(r)),
            json!(s(r, "/spec/podName")),
            json!(s(r, "/spec/serviceAccountName")),
            json!(s(r, "/spec/nodeName")),
            json!(s(r, "/spec/signerName")),
            json!(state),
            json!(format_labels(r.at("/spec/unverifiedUserAnnotations"))),
        ])
    },
};

// ---- coordination, apiserver internals ----

const LEASE_CANDIDATE: Printer = Printer {
    columns: &[
        NAME,
        col(
            "LeaseName",
            "string",
            field(
                "io.k8s.api.coordination.v1alpha2.LeaseCandidateSpec",
                "leaseName",
            ),
        ),
        col("BinaryVersion", "string", sentence("")),
        col("EmulationVersion", "string", sentence("")),
        AGE,
    ],
    print: |lc, now| {
        Row::new(vec![
            json!(name(lc)),
            json!(s(lc, "/spec/leaseName")),
            json!(s(lc, "/spec/binaryVersion")),
            json!(s(lc, "/spec/emulationVersion")),
            json!(since(created(lc), now)),
        ])
    },
};

const STORAGE_VERSION: Printer = Printer {
    columns: &[
        NAME,
        col(
            "CommonEncodingVersion",
            "string",
            field(
                "io.k8s.api.apiserverinternal.v1alpha1.StorageVersionStatus",
                "commonEncodingVersion",
            ),
        ),
        col(
            "StorageVersions",
            "string",
            field(
                "io.k8s.api.apiserverinternal.v1alpha1.StorageVersionStatus",
                "storageVersions",
            ),
        ),
        AGE,
    ],
    print: |sv, now| {
        let common = sv
            .at("/status/commonEncodingVersion")
            .and_then(Value::as_str)
            .unwrap_or("<unset>");
        let versions: Vec<String> = arr(sv, "/status/storageVersions")
            .iter()
            .map(|v| format!("{}={}", s(v, "/apiServerID"), s(v, "/encodingVersion")))
            .collect();
        Row::new(vec![
            json!(name(sv)),
            json!(common),
            json!(super::infra::list_with_more(&versions)),
            json!(since(created(sv), now)),
        ])
    },
};

const STORAGE_VERSION_MIGRATION: Printer = Printer {
    columns: &[
        // Upstream's printer gives this Name column no `name` format.
        Col { format: "", ..NAME },
        col("Resource", "string", sentence("GroupResource to migrate")),
        col("Status", "string", sentence("Status of the migration")),
    ],
    print: |m, _| {
        let (resource, group) = (
            s(m, "/spec/resource/resource"),
            s(m, "/spec/resource/group"),
        );
        let target = if group.is_empty() {
            resource.to_owned()
        } else {
            format!("{resource}.{group}")
        };
        let status = arr(m, "/status/conditions")
            .iter()
            .filter(|c| s(c, "/status") == "True")
            .filter_map(|c| match s(c, "/type") {
                t @ ("Running" | "Failed" | "Succeeded") => Some(t),
                _ => None,
            })
            .next_back()
            .unwrap_or("Unknown");
        Row::new(vec![json!(name(m)), json!(target), json!(status)])
    },
};

// ---- scheduling ----

const POD_GROUP: Printer = Printer {
    columns: &[
        NAME,
        col(
            "Policy",
            "string",
            field(
                "io.k8s.api.scheduling.v1alpha2.PodGroupSpec",
                "schedulingPolicy",
            ),
        ),
        col(
            "Workload",
            "string",
            sentence("Name of the referenced Workload object"),
        ),
        col("Status", "string", sentence("Status of the PodGroup")),
        AGE,
    ],
    print: |pg, now| {
        let policy = if pg
            .at("/spec/schedulingPolicy/gang")
            .is_some_and(|g| !g.is_null())
        {
            "Gang"
        } else {
            "Basic"
        };
        let mut status = match condition(pg, "/status/conditions", "PodGroupScheduled") {
            None => "Pending".to_owned(),
            Some(c) if s(c, "/status") == "True" => "Scheduled".to_owned(),
            Some(_) => "Unschedulable".to_owned(),
        };
        if let Some(c) = condition(pg, "/status/conditions", "DisruptionTarget") {
            status = s(c, "/reason").to_owned();
        }
        let workload = pg
            .at("/spec/podGroupTemplateRef/workload/workloadName")
            .and_then(Value::as_str)
            .unwrap_or("<none>");
        Row::new(vec![
            json!(name(pg)),
            json!(policy),
            json!(workload),
            json!(status),
            json!(since(created(pg), now)),
        ])
    },
};
