//! The methods of a [`Strategy`]: everything per-type a write, a read with selectors, or a
//! subresource needs, as pure functions over objects. (Deletion is in `deletion.rs`.)

use crate::kind::Kind as K;
use crate::registry::{Strategy, Traits};
use crate::service_alloc::{self, ServiceHeld, ServiceNeeds};
use crate::{
    api_defaults, autoscaling, binding, config, core_defaults, crd, dra, fields, generic,
    namespace, node, pod, scale, service, validation, workload_defaults, Ctx,
};
use keel_api::jsonmap::JsonPointer;
use keel_api::status::StatusCause;
use serde_json::Value;

fn set_status(obj: &mut Value, status: Value) {
    if let Some(m) = obj.as_object_mut() {
        m.insert("status".into(), status);
    }
}

impl Strategy {
    /// API group of the resource (`""` for core; also `""` for the generic strategies).
    pub fn group(&self) -> &'static str {
        self.group
    }

    /// Plural resource name (`""` for the generic strategies).
    pub fn resource(&self) -> &'static str {
        self.resource
    }

    /// Which type-specific policy applies.
    pub fn kind(&self) -> crate::Kind {
        self.kind
    }

    /// The per-type flags (status subresource, generation, create on update, ...).
    pub fn traits(&self) -> Traits {
        self.traits
    }

    /// Upstream `AllowCreateOnUpdate`: whether PUT to a missing object creates it.
    pub fn allow_create_on_update(&self) -> bool {
        self.traits.create_on_update
    }

    /// Upstream's `ReturnDeletedObject`: whether a DELETE that removes the object at once
    /// answers with the object (these types) or with a `Status` of `Success` naming it (all
    /// others, custom resources included). An object only marked for deletion (finalizers, a
    /// grace period) is answered with itself either way.
    pub fn returns_deleted_object(&self) -> bool {
        const TYPES: [(&str, &str); 19] = [
            ("", "namespaces"),
            ("", "persistentvolumeclaims"),
            ("", "persistentvolumes"),
            ("", "pods"),
            ("", "podtemplates"),
            ("", "resourcequotas"),
            ("", "serviceaccounts"),
            ("", "services"),
            ("resource.k8s.io", "deviceclasses"),
            ("resource.k8s.io", "devicetaintrules"),
            ("resource.k8s.io", "resourceclaims"),
            ("resource.k8s.io", "resourceclaimtemplates"),
            ("resource.k8s.io", "resourcepoolstatusrequests"),
            ("resource.k8s.io", "resourceslices"),
            ("storage.k8s.io", "csidrivers"),
            ("storage.k8s.io", "csinodes"),
            ("storage.k8s.io", "storageclasses"),
            ("storage.k8s.io", "volumeattachments"),
            ("storage.k8s.io", "volumeattributesclasses"),
        ];
        TYPES.contains(&(self.group, self.resource))
    }

    /// Upstream `AllowUnconditionalUpdate`: whether PUT without `metadata.resourceVersion`
    /// is allowed.
    pub fn allow_unconditional_update(&self) -> bool {
        self.traits.unconditional_update
    }

    /// What upstream does while converting a request body to its internal form: a Secret's
    /// `stringData` is merged into `data`; a Node's spec loses the zero values Go omits. Call
    /// on every decoded or patched object before field validation; idempotent (the
    /// `prepare_*` methods call it too).
    pub fn canonicalize_input(&self, obj: &mut Value) {
        match self.kind {
            K::Secret => config::merge_string_data(obj),
            K::Node => node::drop_zero_spec_members(obj),
            _ => {}
        }
    }

    /// The schema defaults of the type (what upstream applies when decoding any body).
    fn apply_defaults(&self, obj: &mut Value) {
        match self.kind {
            K::Pod => pod::default_pod(obj),
            K::Namespace => namespace::default_namespace(obj),
            K::Service => service::default_service(obj),
            K::Node => node::default_node(obj),
            K::Secret => config::default_secret(obj),
            K::HorizontalPodAutoscaler => autoscaling::apply_defaults(obj),
            kind if dra::owns(kind) => dra::apply_defaults(kind, obj),
            kind if core_defaults::owns(kind) => core_defaults::apply(kind, obj),
            K::Other | K::PriorityLevelConfiguration | K::CustomResourceDefinition
                if api_defaults::owns(self.group, self.resource) =>
            {
                api_defaults::apply(self.group, self.resource, obj)
            }
            kind => workload_defaults::apply(kind, obj),
        }
    }

    /// Prepares a new object for creation: defaults, admission-plugin additions (pods),
    /// initial status, `metadata.generation`. Call after the server assigned name and uid.
    pub fn prepare_for_create(&self, obj: &mut Value, ctx: &Ctx) {
        let tr = self.traits;
        self.canonicalize_input(obj);
        generic::prepare_create(
            obj,
            tr.status_subresource && !tr.keep_status_on_create,
            tr.tracks_generation,
        );
        self.apply_defaults(obj);
        core_defaults::admit_create(self.kind, obj);
        api_defaults::prepare_create(self.group, self.resource, obj, ctx);
        match self.kind {
            K::Pod => {
                pod::admit_pod(obj);
                let status = pod::initial_status(obj, &ctx.now_rfc3339);
                set_status(obj, status);
            }
            K::Namespace => namespace::prepare_create(obj),
            K::Service => set_status(obj, service::initial_status()),
            kind if dra::owns(kind) => dra::prepare_create(kind, obj, &ctx.now_rfc3339),
            K::Job => {
                workload_defaults::job_generate_selector(obj);
                // Upstream re-defaults when the stored object is read back: Job labels then
                // come from the (now labelled) template.
                self.apply_defaults(obj);
            }
            _ => {}
        }
        if let Some(status) = workload_defaults::initial_status(self.kind) {
            set_status(obj, status);
        }
        if tr.empty_status_on_create {
            set_status(obj, Value::Object(Default::default()));
        }
        if let Some(initial) = self.initial_status {
            let status = initial(obj, ctx);
            set_status(obj, status);
        }
    }

    /// Validates a new object: its `ObjectMeta` with the type's name rule, then the type's
    /// own rules; the causes of a 422 (messages without the field path), each text once.
    pub fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        validation::merge(
            validation::meta_causes(self, obj),
            validation::type_rules(self.kind, obj),
        )
    }

    /// Prepares an update of the main resource: defaults the new object, keeps the stored
    /// status (types with a status subresource) and generation, bumps the generation on spec
    /// changes, and carries over what only the server may change (namespace finalizers,
    /// allocated service values).
    pub fn prepare_for_update(&self, new: &mut Value, old: &Value, ctx: &Ctx) {
        let tr = self.traits;
        self.canonicalize_input(new);
        self.apply_defaults(new);
        match self.kind {
            K::Namespace => namespace::prepare_update(new, old),
            K::Service => {
                service::drop_type_dependent_fields(new, old);
                service_alloc::keep_allocated(new, old);
            }
            kind if dra::owns(kind) => dra::prepare_update(kind, new, old, &ctx.now_rfc3339),
            K::Other => api_defaults::prepare_update(self.group, self.resource, new, old),
            _ => {}
        }
        generic::prepare_update(new, old, tr.status_subresource, tr.tracks_generation);
        if self.kind == K::CustomResourceDefinition {
            crd::prepare_update(new);
        }
        core_defaults::prepare_update(self.kind, new, old);
        if self.kind == K::Service {
            service::drop_type_dependent_status(new);
        }
        let old_gen = old
            .at("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let bumped = new.at("/metadata/generation").and_then(Value::as_i64) != Some(old_gen);
        let annotations_changed =
            new.at("/metadata/annotations") != old.at("/metadata/annotations");
        // Upstream's deployment strategy also bumps on annotation changes (rollback and
        // pause annotations used to drive the controller).
        if self.kind == K::Deployment && !bumped && annotations_changed {
            generic::bump_generation(new, old_gen);
        }
    }

    /// Prepares a write to a subresource: `status` (everything but status from the stored
    /// object), `finalize` (namespaces: everything but status from the new object),
    /// `ephemeralcontainers` (pods: only `spec.ephemeralContainers`), `resize` (pods: only the
    /// containers' `resources` and `resizePolicy`). Unknown subresources
    /// leave `new` unchanged.
    pub fn prepare_for_subresource_update(&self, subresource: &str, new: &mut Value, old: &Value) {
        self.canonicalize_input(new);
        match (self.kind, subresource) {
            (_, "status") => {
                self.apply_defaults(new);
                generic::prepare_status_update(new, old);
                dra::prepare_status_update(self.kind, new, old);
                core_defaults::prepare_status_update(self.kind, new, old);
            }
            (K::Namespace, "finalize") => {
                self.apply_defaults(new);
                namespace::prepare_finalize(new, old);
            }
            (K::Pod, "resize") => {
                self.apply_defaults(new);
                pod::prepare_resize(new, old);
            }
            (K::Pod, "ephemeralcontainers") => {
                self.apply_defaults(new);
                let ephemeral = new.at("/spec/ephemeralContainers").cloned();
                let mut merged = old.clone();
                if let Some(spec) = merged.get_mut("spec").and_then(Value::as_object_mut) {
                    match ephemeral {
                        Some(e) => spec.insert("ephemeralContainers".into(), e),
                        None => spec.remove("ephemeralContainers"),
                    };
                }
                *new = merged;
            }
            _ => {}
        }
    }

    /// Validates an update (of the resource or a subresource): the new object as for create,
    /// plus the type's rules on what may change.
    pub fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        self.validate_subresource_update("", new, old)
    }

    /// As [`Strategy::validate_update`] for a write to `subresource` (empty: the resource):
    /// `pods/resize` has its own rules on what may change.
    pub fn validate_subresource_update(
        &self,
        subresource: &str,
        new: &Value,
        old: &Value,
    ) -> Vec<StatusCause> {
        if dra::owns(self.kind) {
            let type_errs = dra::validate_update(self.kind, subresource, new, old);
            return validation::merge(validation::meta_causes(self, new), type_errs);
        }
        let mut type_errs = validation::type_rules_on_update(self.kind, new);
        match (self.kind, subresource) {
            (K::Pod, "resize") => type_errs.extend(pod::validate_resize(new, old)),
            (K::CustomResourceDefinition, "status") => {
                type_errs.extend(crd::validate_status_update(new))
            }
            _ => type_errs.extend(validation::update_rules(self.kind, new, old)),
        }
        validation::merge(validation::meta_causes_on_update(self, new), type_errs)
    }

    /// Where a write asks for admin access to devices, which needs the namespace's
    /// `resource.kubernetes.io/admin-access: "true"` label (the caller reads the namespace):
    /// see [`dra::admin_access_field`]. `old` is the stored object of an update.
    pub fn admin_access_field(
        &self,
        subresource: &str,
        new: &Value,
        old: Option<&Value>,
    ) -> Option<String> {
        if dra::owns(self.kind) {
            dra::admin_access_field(self.kind, subresource, new, old)
        } else {
            None
        }
    }

    /// The field-selector fields upstream accepts for this resource.
    pub fn selectable_fields(&self) -> &'static [&'static str] {
        self.fields
    }

    /// The value of a selectable field (`None` when the type does not support the field).
    pub fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
        self.fields
            .contains(&field)
            .then(|| fields::value(self.kind, obj, field))
    }

    /// The autoscaling/v1 `Scale` of a deployment, replicaset, statefulset or
    /// replicationcontroller; `None` for types without a scale subresource.
    pub fn scale_from(&self, obj: &Value) -> Option<Value> {
        scale::scale_from(self.kind, obj)
    }

    /// Sets `spec.replicas` (then [`Strategy::prepare_for_update`] as for any update).
    pub fn apply_scale(&self, obj: &mut Value, replicas: i64) {
        scale::apply_scale(obj, replicas);
    }

    /// Upstream's `ValidateScale` for a Scale body (after the caller filled its namespace as
    /// upstream's handler does): causes of a 422 on `Scale.autoscaling`.
    pub fn validate_scale(&self, scale: &Value) -> Vec<StatusCause> {
        scale::validate_scale(scale)
    }

    /// Validates a `Binding` body (`pods/binding`; see [`Strategy::bind`]).
    pub fn validate_binding(&self, binding: &Value) -> Vec<StatusCause> {
        binding::validate_binding(binding)
    }

    /// Assigns `pod` to the node a `Binding` names (`pods/binding`). `Err` is the detail of a
    /// 409 Conflict on `pods/binding`; only the pods strategy binds.
    pub fn bind(&self, pod: &mut Value, binding: &Value, ctx: &Ctx) -> Result<(), String> {
        if self.kind != K::Pod {
            return Err(format!("{} cannot be bound to a node", self.resource));
        }
        binding::bind(pod, binding, ctx)
    }

    /// What a Service about to be stored needs from the allocators; `None` for other types.
    /// On update, call it after [`Strategy::prepare_for_update`] (which keeps the values
    /// already allocated): what it asks for beyond [`Strategy::service_held`] of the stored
    /// object is new, and what the stored object held beyond it is released.
    pub fn service_allocation(&self, svc: &Value) -> Option<ServiceNeeds> {
        (self.kind == K::Service).then(|| service_alloc::needs(svc))
    }

    /// The allocated values a stored Service holds (what its deletion releases); `None` for
    /// other types.
    pub fn service_held(&self, svc: &Value) -> Option<ServiceHeld> {
        (self.kind == K::Service).then(|| service_alloc::held(svc))
    }

    /// Defaults and checks a Service's IP families against the families the cluster serves
    /// (`cluster`, primary first) before allocation, on create (`old` `None`) and update:
    /// the causes of a 422 when the cluster cannot serve what it asks. Other types: nothing.
    pub fn service_init_families(
        &self,
        svc: &mut Value,
        old: Option<&Value>,
        cluster: &[&str],
    ) -> Vec<keel_api::status::StatusCause> {
        if self.kind != K::Service {
            return Vec::new();
        }
        crate::service_families::init_ip_families(svc, old, cluster)
            .into_iter()
            .map(crate::errors::FieldErr::into_cause)
            .collect()
    }

    /// What an update of a Service from `old` to `new` (prepared and validated) needs from
    /// the allocators beyond what `old` holds; `None` for other types.
    pub fn service_update_allocation(&self, new: &Value, old: &Value) -> Option<ServiceNeeds> {
        (self.kind == K::Service).then(|| service_alloc::update_needs(new, old))
    }

    /// What a stored update of a Service from `old` to `new` gives back; `None` for other
    /// types.
    pub fn service_released(&self, new: &Value, old: &Value) -> Option<ServiceHeld> {
        (self.kind == K::Service).then(|| service_alloc::released(new, old))
    }
}
