//! The built-in resource types, enumerated from the `k8s-openapi` (Kubernetes v1.36) bindings.
//!
//! Group, version, kind, plural and scope come from each type's `k8s_openapi::Resource` impl, so
//! nothing here is typed by hand except the list of types itself (the compiler checks every name,
//! and a test checks the list against the discovery data table).

use std::collections::HashSet;
use std::sync::LazyLock;

use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope, Resource};

/// Identity of one built-in resource as the type bindings define it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BuiltinType {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub namespaced: bool,
}

/// Maps a `Resource::Scope` type to "is this resource namespaced".
trait ScopeNamespaced {
    const NAMESPACED: bool;
}
impl ScopeNamespaced for NamespaceResourceScope {
    const NAMESPACED: bool = true;
}
impl ScopeNamespaced for ClusterResourceScope {
    const NAMESPACED: bool = false;
}

fn builtin<T>() -> BuiltinType
where
    T: Resource,
    T::Scope: ScopeNamespaced,
{
    BuiltinType {
        group: T::GROUP,
        version: T::VERSION,
        kind: T::KIND,
        plural: T::URL_PATH_SEGMENT,
        namespaced: <T::Scope as ScopeNamespaced>::NAMESPACED,
    }
}

/// Whether `group/plural` is a built-in resource (in any version, served or not): its storage
/// key space belongs to the built-in type.
pub(crate) fn is_builtin(group: &str, plural: &str) -> bool {
    static BUILTIN: LazyLock<HashSet<(&'static str, &'static str)>> = LazyLock::new(|| {
        builtin_types()
            .iter()
            .map(|t| (t.group, t.plural))
            .collect()
    });
    BUILTIN.contains(&(group, plural))
}

macro_rules! builtin_types {
    ($($path:path),* $(,)?) => {
        /// Every top-level (non-subresource) resource type of Kubernetes v1.36, all stabilities.
        pub(crate) fn builtin_types() -> Vec<BuiltinType> {
            use k8s_openapi::*;
            vec![$(builtin::<$path>()),*]
        }
    };
}

builtin_types!(
    api::admissionregistration::v1::MutatingAdmissionPolicy,
    api::admissionregistration::v1::MutatingAdmissionPolicyBinding,
    api::admissionregistration::v1::MutatingWebhookConfiguration,
    api::admissionregistration::v1::ValidatingAdmissionPolicy,
    api::admissionregistration::v1::ValidatingAdmissionPolicyBinding,
    api::admissionregistration::v1::ValidatingWebhookConfiguration,
    api::admissionregistration::v1alpha1::MutatingAdmissionPolicy,
    api::admissionregistration::v1alpha1::MutatingAdmissionPolicyBinding,
    api::admissionregistration::v1beta1::MutatingAdmissionPolicy,
    api::admissionregistration::v1beta1::MutatingAdmissionPolicyBinding,
    api::apiserverinternal::v1alpha1::StorageVersion,
    api::apps::v1::ControllerRevision,
    api::apps::v1::DaemonSet,
    api::apps::v1::Deployment,
    api::apps::v1::ReplicaSet,
    api::apps::v1::StatefulSet,
    api::authentication::v1::SelfSubjectReview,
    api::authentication::v1::TokenReview,
    api::authorization::v1::LocalSubjectAccessReview,
    api::authorization::v1::SelfSubjectAccessReview,
    api::authorization::v1::SelfSubjectRulesReview,
    api::authorization::v1::SubjectAccessReview,
    api::autoscaling::v1::HorizontalPodAutoscaler,
    api::autoscaling::v2::HorizontalPodAutoscaler,
    api::batch::v1::CronJob,
    api::batch::v1::Job,
    api::certificates::v1::CertificateSigningRequest,
    api::certificates::v1alpha1::ClusterTrustBundle,
    api::certificates::v1beta1::ClusterTrustBundle,
    api::certificates::v1beta1::PodCertificateRequest,
    api::coordination::v1::Lease,
    api::coordination::v1alpha2::LeaseCandidate,
    api::coordination::v1beta1::LeaseCandidate,
    api::core::v1::Binding,
    api::core::v1::ComponentStatus,
    api::core::v1::ConfigMap,
    api::core::v1::Endpoints,
    api::core::v1::Event,
    api::core::v1::LimitRange,
    api::core::v1::Namespace,
    api::core::v1::Node,
    api::core::v1::PersistentVolume,
    api::core::v1::PersistentVolumeClaim,
    api::core::v1::Pod,
    api::core::v1::PodTemplate,
    api::core::v1::ReplicationController,
    api::core::v1::ResourceQuota,
    api::core::v1::Secret,
    api::core::v1::Service,
    api::core::v1::ServiceAccount,
    api::discovery::v1::EndpointSlice,
    api::events::v1::Event,
    api::flowcontrol::v1::FlowSchema,
    api::flowcontrol::v1::PriorityLevelConfiguration,
    api::networking::v1::IPAddress,
    api::networking::v1::Ingress,
    api::networking::v1::IngressClass,
    api::networking::v1::NetworkPolicy,
    api::networking::v1::ServiceCIDR,
    api::networking::v1beta1::IPAddress,
    api::networking::v1beta1::ServiceCIDR,
    api::node::v1::RuntimeClass,
    api::policy::v1::PodDisruptionBudget,
    api::rbac::v1::ClusterRole,
    api::rbac::v1::ClusterRoleBinding,
    api::rbac::v1::Role,
    api::rbac::v1::RoleBinding,
    api::resource::v1::DeviceClass,
    api::resource::v1::ResourceClaim,
    api::resource::v1::ResourceClaimTemplate,
    api::resource::v1::ResourceSlice,
    api::resource::v1alpha3::DeviceTaintRule,
    api::resource::v1alpha3::ResourcePoolStatusRequest,
    api::resource::v1beta1::DeviceClass,
    api::resource::v1beta1::ResourceClaim,
    api::resource::v1beta1::ResourceClaimTemplate,
    api::resource::v1beta1::ResourceSlice,
    api::resource::v1beta2::DeviceClass,
    api::resource::v1beta2::DeviceTaintRule,
    api::resource::v1beta2::ResourceClaim,
    api::resource::v1beta2::ResourceClaimTemplate,
    api::resource::v1beta2::ResourceSlice,
    api::scheduling::v1::PriorityClass,
    api::scheduling::v1alpha2::PodGroup,
    api::scheduling::v1alpha2::Workload,
    api::storage::v1::CSIDriver,
    api::storage::v1::CSINode,
    api::storage::v1::CSIStorageCapacity,
    api::storage::v1::StorageClass,
    api::storage::v1::VolumeAttachment,
    api::storage::v1::VolumeAttributesClass,
    api::storage::v1beta1::VolumeAttributesClass,
    api::storagemigration::v1beta1::StorageVersionMigration,
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    kube_aggregator::pkg::apis::apiregistration::v1::APIService,
);
