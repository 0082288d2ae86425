//! A small slice of the Kubernetes apps/v1 Deployment schema, with the markers that matter
//! to apply: labels and annotations granular maps, finalizers a set, the selector atomic,
//! containers, env and volumes list-maps by name, ports a list-map by containerPort and
//! protocol (protocol defaulting to TCP), args an atomic list, nodeSelector an atomic map.
#![allow(dead_code)]

use keel_smd::schema::{Atom, ElementRelationship, Schema, StructField, TypeRef};
use serde_json::json;

pub const DEPLOYMENT: &str = "io.k8s.api.apps.v1.Deployment";

fn f(name: &str, tr: TypeRef) -> StructField {
    StructField::new(name, tr)
}

fn s(name: &str) -> StructField {
    StructField::new(name, TypeRef::scalar())
}

fn n(name: &str) -> TypeRef {
    TypeRef::named(name)
}

pub fn schema() -> Schema {
    let granular_strings =
        || TypeRef::inline(Atom::map(TypeRef::scalar(), ElementRelationship::Separable));
    Schema::new()
        .with_type(
            DEPLOYMENT,
            Atom::structure(vec![
                s("apiVersion"),
                s("kind"),
                f("metadata", n("ObjectMeta")),
                f("spec", n("DeploymentSpec")),
                f("status", TypeRef::deduced()),
            ]),
        )
        .with_type(
            "ObjectMeta",
            Atom::structure(vec![
                s("name"),
                s("namespace"),
                s("uid"),
                s("resourceVersion"),
                f("labels", granular_strings()),
                f("annotations", granular_strings()),
                f(
                    "finalizers",
                    TypeRef::inline(Atom::set_list(TypeRef::scalar())),
                ),
            ]),
        )
        .with_type(
            "DeploymentSpec",
            Atom::structure(vec![
                s("replicas"),
                s("paused"),
                s("progressDeadlineSeconds"),
                s("revisionHistoryLimit"),
                f(
                    "selector",
                    n("LabelSelector").with_relationship(ElementRelationship::Atomic),
                ),
                f("strategy", n("DeploymentStrategy")),
                f("template", n("PodTemplateSpec")),
            ]),
        )
        .with_type(
            "LabelSelector",
            Atom::structure(vec![
                f("matchLabels", granular_strings()),
                f(
                    "matchExpressions",
                    TypeRef::inline(Atom::atomic_list(TypeRef::deduced())),
                ),
            ]),
        )
        .with_type(
            "DeploymentStrategy",
            Atom::structure(vec![
                s("type"),
                f(
                    "rollingUpdate",
                    TypeRef::inline(Atom::structure(vec![s("maxSurge"), s("maxUnavailable")])),
                ),
            ]),
        )
        .with_type(
            "PodTemplateSpec",
            Atom::structure(vec![
                f("metadata", n("ObjectMeta")),
                f("spec", n("PodSpec")),
            ]),
        )
        .with_type(
            "PodSpec",
            Atom::structure(vec![
                f(
                    "containers",
                    TypeRef::inline(Atom::map_list(n("Container"), &["name"])),
                ),
                f(
                    "volumes",
                    TypeRef::inline(Atom::map_list(TypeRef::deduced(), &["name"])),
                ),
                f(
                    "nodeSelector",
                    TypeRef::inline(Atom::map(TypeRef::scalar(), ElementRelationship::Atomic)),
                ),
                s("dnsPolicy"),
                s("restartPolicy"),
                s("schedulerName"),
                f("securityContext", TypeRef::deduced()),
                s("terminationGracePeriodSeconds"),
            ]),
        )
        .with_type(
            "Container",
            Atom::structure(vec![
                s("name"),
                s("image"),
                s("imagePullPolicy"),
                f(
                    "args",
                    TypeRef::inline(Atom::atomic_list(TypeRef::scalar())),
                ),
                f(
                    "ports",
                    TypeRef::inline(Atom::map_list(
                        n("ContainerPort"),
                        &["containerPort", "protocol"],
                    )),
                ),
                f(
                    "env",
                    TypeRef::inline(Atom::map_list(n("EnvVar"), &["name"])),
                ),
                f("resources", TypeRef::deduced()),
                s("terminationMessagePath"),
                s("terminationMessagePolicy"),
            ]),
        )
        .with_type(
            "ContainerPort",
            Atom::structure(vec![
                s("name"),
                s("containerPort"),
                f("protocol", TypeRef::scalar()).with_default(json!("TCP")),
            ]),
        )
        .with_type("EnvVar", Atom::structure(vec![s("name"), s("value")]))
}

pub fn root() -> TypeRef {
    TypeRef::named(DEPLOYMENT)
}
