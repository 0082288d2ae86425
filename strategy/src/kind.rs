//! The built-in types that have type-specific policy in this crate.

/// Built-in types with type-specific policy here; every other resource gets only the generic
/// rules of its [`crate::Strategy`] (flags, name rule, field selectors).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// core/v1 pods
    Pod,
    /// core/v1 namespaces
    Namespace,
    /// core/v1 services
    Service,
    /// core/v1 nodes
    Node,
    /// core/v1 configmaps
    ConfigMap,
    /// core/v1 secrets
    Secret,
    /// core/v1 events
    Event,
    /// events.k8s.io/v1 events (core events validated strictly, in their own field names)
    EventV1,
    /// core/v1 endpoints
    Endpoints,
    /// core/v1 persistentvolumes
    PersistentVolume,
    /// core/v1 persistentvolumeclaims
    PersistentVolumeClaim,
    /// storage.k8s.io volumeattributesclasses (every version: the protection finalizer)
    VolumeAttributesClass,
    /// core/v1 podtemplates
    PodTemplate,
    /// discovery.k8s.io/v1 endpointslices
    EndpointSlice,
    /// core/v1 replicationcontrollers
    ReplicationController,
    /// apps/v1 deployments
    Deployment,
    /// apps/v1 replicasets
    ReplicaSet,
    /// apps/v1 statefulsets
    StatefulSet,
    /// apps/v1 daemonsets
    DaemonSet,
    /// batch/v1 jobs
    Job,
    /// batch/v1 cronjobs
    CronJob,
    /// autoscaling/v1 and v2 horizontalpodautoscalers
    HorizontalPodAutoscaler,
    /// networking.k8s.io/v1 ipaddresses
    IpAddress,
    /// networking.k8s.io/v1 servicecidrs
    ServiceCidr,
    /// flowcontrol.apiserver.k8s.io/v1 prioritylevelconfigurations
    PriorityLevelConfiguration,
    /// resource.k8s.io deviceclasses
    DeviceClass,
    /// resource.k8s.io resourceclaims
    ResourceClaim,
    /// resource.k8s.io resourceclaimtemplates
    ResourceClaimTemplate,
    /// resource.k8s.io resourceslices
    ResourceSlice,
    /// resource.k8s.io devicetaintrules
    DeviceTaintRule,
    /// apiextensions.k8s.io/v1 customresourcedefinitions
    CustomResourceDefinition,
    /// Any other resource: only the generic rules apply.
    Other,
}
