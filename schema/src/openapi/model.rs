//! A version-neutral model of the paths and operations of the served resources, built from
//! the resource list; `v2` and `v3` render it.

use serde_json::{json, Value};

use super::crd;
use super::params::{self, Param};
use crate::names::{capitalize, op_prefix, tag};
use crate::{ResourceDesc, Schemas};

pub(crate) const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
pub(crate) const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
pub(crate) const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
const WATCH_EVENT: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent";
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
const API_RESOURCE_LIST: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList";

/// The patch media types a PATCH operation consumes.
pub(crate) const PATCH_MEDIA: [&str; 4] = [
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

/// Schema of a body or response.
#[derive(Clone)]
pub(crate) enum Payload {
    /// A definition by name.
    Def(String),
    /// Plain text (`pods/log`).
    Text,
}

/// Which media types an operation produces.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Media {
    Object,
    /// Object media plus the watch stream forms.
    Stream,
    Text,
    /// A custom resource's operation: JSON and YAML only, for requests and responses.
    Custom,
}

pub(crate) struct Body {
    pub(crate) payload: Payload,
    pub(crate) required: bool,
    pub(crate) patch: bool,
}

pub(crate) struct Response {
    pub(crate) code: &'static str,
    pub(crate) description: &'static str,
    pub(crate) payload: Option<Payload>,
}

pub(crate) struct Op {
    pub(crate) method: &'static str,
    pub(crate) action: &'static str,
    pub(crate) id: String,
    pub(crate) description: String,
    pub(crate) tag: String,
    /// (group, version, kind) for `x-kubernetes-group-version-kind`.
    pub(crate) gvk: Option<(String, String, String)>,
    pub(crate) params: Vec<Param>,
    pub(crate) body: Option<Body>,
    pub(crate) responses: Vec<Response>,
    pub(crate) media: Media,
}

pub(crate) struct PathItem {
    pub(crate) path: String,
    pub(crate) params: Vec<Param>,
    pub(crate) ops: Vec<Op>,
}

/// A definition that is not embedded (custom resources), in both document forms.
pub(crate) struct ExtraDef {
    pub(crate) name: String,
    /// `#/definitions/` refs, as `/openapi/v2` publishes it.
    pub(crate) v2: Value,
    /// `#/components/schemas/` refs, as `/openapi/v3/...` publishes it.
    pub(crate) v3: Value,
}

/// Paths of one group/version plus definitions of kinds without embedded schema.
pub(crate) struct GroupVersion {
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) paths: Vec<PathItem>,
    pub(crate) extra_defs: Vec<ExtraDef>,
    /// Only custom resources: the v3 document is the CRD controller's (its own `info`, no
    /// security schemes).
    pub(crate) custom_only: bool,
}

/// Group the resources by group/version (sorted) and build their paths.
pub(crate) fn build(schemas: &Schemas, resources: &[ResourceDesc]) -> Vec<GroupVersion> {
    let mut gvs: Vec<(String, String)> = resources
        .iter()
        .map(|r| (r.group.clone(), r.version.clone()))
        .collect();
    gvs.sort();
    gvs.dedup();
    gvs.into_iter()
        .map(|(group, version)| {
            let mut gv = GroupVersion {
                paths: Vec::new(),
                extra_defs: Vec::new(),
                custom_only: false,
                group,
                version,
            };
            let members = || {
                resources
                    .iter()
                    .filter(|r| r.group == gv.group && r.version == gv.version)
            };
            // A group/version served only by CRDs has no discovery path in upstream's
            // documents (the CRD builder registers resource routes only).
            let mut paths = Vec::new();
            let mut extra_defs = Vec::new();
            let custom_only = members().all(|r| r.custom_schema.is_some());
            if !custom_only {
                paths.push(discovery_path(&gv.group, &gv.version));
            }
            for r in members() {
                match &r.custom_schema {
                    Some(schema) => {
                        crd::paths(r, &mut paths);
                        extra_defs.extend(crd::definitions(r, schema));
                    }
                    None => Resource::new(schemas, r, &mut extra_defs).paths(&mut paths),
                }
            }
            gv.paths = paths;
            gv.custom_only = custom_only;
            gv.extra_defs = extra_defs;
            gv.paths.sort_by(|a, b| a.path.cmp(&b.path));
            gv.paths.dedup_by(|a, b| a.path == b.path);
            gv
        })
        .collect()
}

fn discovery_path(group: &str, version: &str) -> PathItem {
    let path = if group.is_empty() {
        format!("/api/{version}/")
    } else {
        format!("/apis/{group}/{version}/")
    };
    let op = Op {
        method: "get",
        action: "",
        id: format!("get{}APIResources", op_prefix(group, version)),
        description: "get available resources".to_owned(),
        tag: tag(group, version),
        gvk: None,
        params: Vec::new(),
        body: None,
        responses: vec![
            ok(Payload::Def(API_RESOURCE_LIST.to_owned())),
            unauthorized(),
        ],
        media: Media::Object,
    };
    PathItem {
        path,
        params: Vec::new(),
        ops: vec![op],
    }
}

fn ok(payload: Payload) -> Response {
    Response {
        code: "200",
        description: "OK",
        payload: Some(payload),
    }
}

fn created(payload: Payload) -> Response {
    Response {
        code: "201",
        description: "Created",
        payload: Some(payload),
    }
}

fn accepted(payload: Payload) -> Response {
    Response {
        code: "202",
        description: "Accepted",
        payload: Some(payload),
    }
}

fn unauthorized() -> Response {
    Response {
        code: "401",
        description: "Unauthorized",
        payload: None,
    }
}

/// One resource with everything needed to name its operations.
struct Resource<'a> {
    schemas: &'a Schemas,
    r: &'a ResourceDesc,
    def: String,
    list_def: Option<String>,
    prefix: String,
    scope: &'static str,
    tag: String,
    root: String,
}

impl<'a> Resource<'a> {
    fn new(schemas: &'a Schemas, r: &'a ResourceDesc, extra: &mut Vec<ExtraDef>) -> Self {
        let gvk = crate::Gvk {
            group: &r.group,
            version: &r.version,
            kind: &r.kind,
        };
        let def = match schemas.definition_name(&gvk) {
            Some(def) => def.to_owned(),
            None => synthesize(r, extra),
        };
        let list_kind = format!("{}List", r.kind);
        let list_gvk = crate::Gvk {
            kind: &list_kind,
            ..gvk
        };
        let list_def = schemas
            .definition_name(&list_gvk)
            .map(str::to_owned)
            .or_else(|| {
                extra
                    .iter()
                    .find(|d| d.name.ends_with(&list_kind))
                    .map(|d| d.name.clone())
            });
        let base = if r.group.is_empty() {
            format!("/api/{}", r.version)
        } else {
            format!("/apis/{}/{}", r.group, r.version)
        };
        Resource {
            schemas,
            r,
            def,
            list_def,
            prefix: op_prefix(&r.group, &r.version),
            scope: if r.namespaced { "Namespaced" } else { "" },
            tag: tag(&r.group, &r.version),
            root: base,
        }
    }

    fn can(&self, verb: &str) -> bool {
        self.r.verbs.iter().any(|v| v == verb)
    }

    fn gvk(&self) -> Option<(String, String, String)> {
        Some((
            self.r.group.clone(),
            self.r.version.clone(),
            self.r.kind.clone(),
        ))
    }

    fn ns(&self) -> &'static str {
        if self.r.namespaced {
            "/namespaces/{namespace}"
        } else {
            ""
        }
    }

    fn scope_params(&self, with_name: bool) -> Vec<Param> {
        let mut out = Vec::new();
        if with_name {
            out.push(params::name(&self.r.kind));
        }
        if self.r.namespaced {
            out.push(params::namespace());
        }
        out.push(params::pretty());
        out
    }

    fn op(
        &self,
        method: &'static str,
        action: &'static str,
        id: String,
        description: String,
    ) -> Op {
        Op {
            method,
            action,
            id,
            description,
            tag: self.tag.clone(),
            gvk: self.gvk(),
            params: Vec::new(),
            body: None,
            responses: Vec::new(),
            media: Media::Object,
        }
    }

    fn paths(&self, out: &mut Vec<PathItem>) {
        let collection = format!("{}{}/{}", self.root, self.ns(), self.r.plural);
        let item = format!("{collection}/{{name}}");
        push(
            out,
            collection,
            self.scope_params(false),
            self.collection_ops(),
        );
        push(out, item.clone(), self.scope_params(true), self.item_ops());
        if self.r.namespaced && self.can("list") {
            let all = format!("{}/{}", self.root, self.r.plural);
            let mut op = self.list_op(format!(
                "list{}{}ForAllNamespaces",
                self.prefix, self.r.kind
            ));
            op.params.clear();
            push(out, all, all_params(), vec![op]);
        }
        if self.can("watch") {
            self.watch_paths(out);
        }
        for (sub, kind, verbs) in &self.r.subresources {
            let ops = self.sub_ops(sub, kind, verbs);
            push(out, format!("{item}/{sub}"), self.scope_params(true), ops);
        }
    }

    fn list_op(&self, id: String) -> Op {
        let mut op = self.op(
            "get",
            "list",
            id,
            format!("list or watch objects of kind {}", self.r.kind),
        );
        op.params = params::list();
        let list = self.list_def.clone().unwrap_or_else(|| self.def.clone());
        op.responses = vec![ok(Payload::Def(list)), unauthorized()];
        op.media = Media::Stream;
        op
    }

    fn collection_ops(&self) -> Vec<Op> {
        let (k, p, s) = (&self.r.kind, &self.prefix, self.scope);
        let obj = Payload::Def(self.def.clone());
        let mut ops = Vec::new();
        if self.can("list") {
            ops.push(self.list_op(format!("list{p}{s}{k}")));
        }
        if self.can("create") {
            let mut op = self.op(
                "post",
                "post",
                format!("create{p}{s}{k}"),
                format!("create a {k}"),
            );
            op.params = params::create();
            op.body = Some(Body {
                payload: obj.clone(),
                required: true,
                patch: false,
            });
            op.responses = vec![
                ok(obj.clone()),
                created(obj.clone()),
                accepted(obj),
                unauthorized(),
            ];
            ops.push(op);
        }
        if self.can("deletecollection") {
            let mut op = self.op(
                "delete",
                "deletecollection",
                format!("delete{p}Collection{s}{k}"),
                format!("delete collection of {k}"),
            );
            op.params = params::delete_collection();
            op.body = Some(Body {
                payload: Payload::Def(DELETE_OPTIONS.to_owned()),
                required: false,
                patch: false,
            });
            op.responses = vec![ok(Payload::Def(STATUS.to_owned())), unauthorized()];
            ops.push(op);
        }
        ops
    }

    fn item_ops(&self) -> Vec<Op> {
        self.object_ops("", &self.def, &self.r.verbs, self.gvk())
    }

    /// get/update/patch/delete (and create for subresources like eviction) of an object or
    /// subresource whose payload is `def`.
    fn object_ops(
        &self,
        sub: &str,
        def: &str,
        verbs: &[String],
        gvk: Option<(String, String, String)>,
    ) -> Vec<Op> {
        let (p, s, parent) = (&self.prefix, self.scope, &self.r.kind);
        let sub_cap = capitalize(sub);
        let what = |verb: &str| match sub {
            "" => format!("{verb} the specified {parent}"),
            _ => format!("{verb} {sub} of the specified {parent}"),
        };
        let obj = if sub == "log" {
            Payload::Text
        } else {
            Payload::Def(def.to_owned())
        };
        let mut ops = Vec::new();
        for verb in verbs {
            let mut op = match verb.as_str() {
                "get" => {
                    let mut op = self.op(
                        "get",
                        "get",
                        format!("read{p}{s}{parent}{sub_cap}"),
                        what("read"),
                    );
                    op.responses = vec![ok(obj.clone()), unauthorized()];
                    if sub == "log" {
                        op.media = Media::Text;
                    }
                    op
                }
                "update" => {
                    let mut op = self.op(
                        "put",
                        "put",
                        format!("replace{p}{s}{parent}{sub_cap}"),
                        what("replace"),
                    );
                    op.params = params::update();
                    op.body = Some(Body {
                        payload: obj.clone(),
                        required: true,
                        patch: false,
                    });
                    op.responses = vec![ok(obj.clone()), created(obj.clone()), unauthorized()];
                    op
                }
                "patch" => {
                    let mut op = self.op(
                        "patch",
                        "patch",
                        format!("patch{p}{s}{parent}{sub_cap}"),
                        what("partially update"),
                    );
                    op.params = params::patch();
                    op.body = Some(Body {
                        payload: Payload::Def(PATCH.to_owned()),
                        required: true,
                        patch: true,
                    });
                    op.responses = vec![ok(obj.clone()), created(obj.clone()), unauthorized()];
                    op
                }
                "delete" if sub.is_empty() => {
                    let mut op = self.op(
                        "delete",
                        "delete",
                        format!("delete{p}{s}{parent}"),
                        format!("delete a {parent}"),
                    );
                    op.params = params::delete();
                    op.body = Some(Body {
                        payload: Payload::Def(DELETE_OPTIONS.to_owned()),
                        required: false,
                        patch: false,
                    });
                    op.responses = vec![
                        ok(Payload::Def(STATUS.to_owned())),
                        accepted(Payload::Def(STATUS.to_owned())),
                        unauthorized(),
                    ];
                    op
                }
                "create" if !sub.is_empty() => {
                    let mut op = self.op(
                        "post",
                        "post",
                        format!("create{p}{s}{parent}{sub_cap}"),
                        format!("create {sub} of a {parent}"),
                    );
                    op.params = params::create();
                    op.body = Some(Body {
                        payload: obj.clone(),
                        required: true,
                        patch: false,
                    });
                    op.responses = vec![
                        ok(obj.clone()),
                        created(obj.clone()),
                        accepted(obj.clone()),
                        unauthorized(),
                    ];
                    op
                }
                _ => continue,
            };
            op.gvk = gvk.clone();
            ops.push(op);
        }
        ops
    }

    fn sub_ops(&self, sub: &str, kind: &str, verbs: &[String]) -> Vec<Op> {
        let (gvk, def) = self.sub_kind(kind);
        if def.is_none() && kind.ends_with("Options") {
            return self.connect_ops(sub, gvk, verbs);
        }
        let def = def.unwrap_or_else(|| self.def.clone());
        self.object_ops(sub, &def, verbs, Some(gvk))
    }

    /// Resolve a subresource kind (`Scale`, `autoscaling/v1/Scale`) to its GVK and definition.
    fn sub_kind(&self, kind: &str) -> ((String, String, String), Option<String>) {
        let parts: Vec<&str> = kind.split('/').collect();
        if let [group, version, kind] = parts[..] {
            let gvk = crate::Gvk {
                group,
                version,
                kind,
            };
            let def = self.schemas.definition_name(&gvk).map(str::to_owned);
            return ((group.to_owned(), version.to_owned(), kind.to_owned()), def);
        }
        let own = crate::Gvk {
            group: &self.r.group,
            version: &self.r.version,
            kind,
        };
        if let Some(def) = self.schemas.definition_name(&own) {
            return (
                (
                    self.r.group.clone(),
                    self.r.version.clone(),
                    kind.to_owned(),
                ),
                Some(def.to_owned()),
            );
        }
        match self.schemas.find_kind(kind) {
            Some((g, v, def)) => ((g, v, kind.to_owned()), Some(def)),
            None => (
                (
                    self.r.group.clone(),
                    self.r.version.clone(),
                    kind.to_owned(),
                ),
                None,
            ),
        }
    }

    /// exec/attach/portforward/proxy: `connect` operations, one per HTTP method.
    fn connect_ops(&self, sub: &str, gvk: (String, String, String), verbs: &[String]) -> Vec<Op> {
        let (p, s, parent) = (&self.prefix, self.scope, &self.r.kind);
        let methods: &[&'static str] =
            if verbs.iter().any(|v| v == "create") && verbs.iter().any(|v| v == "get") {
                &["get", "post"]
            } else if verbs.iter().any(|v| v == "create") {
                &["post"]
            } else {
                &["get"]
            };
        methods
            .iter()
            .map(|m| {
                let id = format!("connect{p}{}{s}{parent}{}", capitalize(m), capitalize(sub));
                let mut op = self.op(
                    m,
                    "connect",
                    id,
                    format!("connect {} requests to {sub} of {parent}", m.to_uppercase()),
                );
                op.gvk = Some(gvk.clone());
                op.responses = vec![ok(Payload::Text), unauthorized()];
                op.media = Media::Text;
                op
            })
            .collect()
    }

    fn watch_paths(&self, out: &mut Vec<PathItem>) {
        let (k, p, s) = (&self.r.kind, &self.prefix, self.scope);
        let watch_op = |action: &'static str, id: String, description: String| {
            let mut op = self.op("get", action, id, description);
            op.responses = vec![ok(Payload::Def(WATCH_EVENT.to_owned())), unauthorized()];
            op.media = Media::Stream;
            op
        };
        let deprecated = "deprecated: use the 'watch' parameter with a list operation instead";
        let base = format!("{}/watch{}/{}", self.root, self.ns(), self.r.plural);
        let with_list = |mut params: Vec<Param>| {
            params.extend(params::list());
            params.sort_by_key(|p| p.name);
            params
        };
        let list = watch_op(
            "watchlist",
            format!("watch{p}{s}{k}List"),
            format!("watch individual changes to a list of {k}. {deprecated}."),
        );
        push(
            out,
            base.clone(),
            with_list(self.scope_params(false)),
            vec![list],
        );
        let one = watch_op("watch", format!("watch{p}{s}{k}"), format!("watch changes to an object of kind {k}. {deprecated}, filtered to a single item with the 'fieldSelector' parameter."));
        push(
            out,
            format!("{base}/{{name}}"),
            with_list(self.scope_params(true)),
            vec![one],
        );
        if self.r.namespaced {
            let all = watch_op(
                "watchlist",
                format!("watch{p}{k}ListForAllNamespaces"),
                format!("watch individual changes to a list of {k}. {deprecated}."),
            );
            push(
                out,
                format!("{}/watch/{}", self.root, self.r.plural),
                with_list(vec![params::pretty()]),
                vec![all],
            );
        }
    }
}

fn all_params() -> Vec<Param> {
    let mut params = params::list();
    params.push(params::pretty());
    params.sort_by_key(|p| p.name);
    params
}

fn push(out: &mut Vec<PathItem>, path: String, params: Vec<Param>, ops: Vec<Op>) {
    if !ops.is_empty() {
        out.push(PathItem { path, params, ops });
    }
}

/// A minimal open schema for a kind without embedded definition (custom resources): its
/// definition name follows upstream (`com.example.stable.v1.CronTab`), it keeps unknown fields,
/// and carries the GVK so clients find it. A matching `...List` is added too.
fn synthesize(r: &ResourceDesc, extra: &mut Vec<ExtraDef>) -> String {
    let mut group: Vec<&str> = r.group.split('.').collect();
    group.reverse();
    let base = if r.group.is_empty() {
        "core".to_owned()
    } else {
        group.join(".")
    };
    let name = format!("{base}.{}.{}", r.version, r.kind);
    let list_name = format!("{name}List");
    let gvk = |kind: &str| json!([{"group": r.group, "version": r.version, "kind": kind}]);
    let type_meta = |kind: &str| {
        json!({
            "apiVersion": {"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."},
            "kind": {"type": "string", "description": format!("Kind is {kind}.")},
        })
    };
    let mut props = type_meta(&r.kind);
    props["metadata"] = json!({"$ref": format!("#/definitions/{OBJECT_META}")});
    extra.push(extra_def(
        name.clone(),
        json!({
            "type": "object",
            "properties": props,
            "x-kubernetes-preserve-unknown-fields": true,
            "x-kubernetes-group-version-kind": gvk(&r.kind),
        }),
    ));
    let mut list_props = type_meta(&format!("{}List", r.kind));
    list_props["metadata"] = json!({"$ref": format!("#/definitions/{LIST_META}")});
    list_props["items"] =
        json!({"type": "array", "items": {"$ref": format!("#/definitions/{name}")}});
    extra.push(extra_def(
        list_name,
        json!({
            "type": "object",
            "properties": list_props,
            "required": ["items"],
            "x-kubernetes-group-version-kind": gvk(&format!("{}List", r.kind)),
        }),
    ));
    name
}

fn extra_def(name: String, v2: Value) -> ExtraDef {
    let v3 = super::v3::to_v3(&v2);
    ExtraDef { name, v2, v3 }
}
