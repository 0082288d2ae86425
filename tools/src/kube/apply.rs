//! `apply`: server-side apply of ~10 KiB `apps/v1` Deployments, repeated with changing values,
//! and the same writes as plain unconditional PUTs (`--update`), the baseline an apply's cost
//! is compared with.

use super::{create_if_absent, ensure_namespaces, json_body, one_object};
use crate::driver::{self, Plan};
use crate::objects::{self, Naming};
use crate::report::Report;
use keel_client::Method;
use keel_client::{KubeClient, JSON};
use std::sync::Arc;

/// The media type of a server-side apply patch (keel and upstream accept JSON in it).
pub const APPLY_PATCH: &str = "application/apply-patch+yaml";

/// What `apply` writes.
#[derive(Clone, Debug)]
pub struct ApplySpec {
    /// Names and namespaces of the Deployments (its kind is not used).
    pub naming: Naming,
    /// First object index: objects are `first + i mod count`.
    pub first: u64,
    pub count: u64,
    /// Operation i writes round `first_round + i / count` of its object.
    pub first_round: u64,
    /// `fieldManager` of the applies.
    pub field_manager: String,
    /// PUT the same Deployments instead of applying them.
    pub update: bool,
    /// With `update`: do not POST the objects first (they exist, e.g. from an earlier apply).
    pub assume_exist: bool,
}

impl ApplySpec {
    /// Index and round of operation i.
    pub fn target(&self, i: u64) -> (u64, u64) {
        let count = self.count.max(1);
        (self.first + i % count, self.first_round + i / count)
    }

    /// `/apis/apps/v1/namespaces/<ns>/deployments`.
    pub fn collection_path(&self, ns: &str) -> String {
        format!("/apis/apps/v1/namespaces/{ns}/deployments")
    }

    /// The Deployment object `idx` as `round` writes it.
    pub fn object(&self, idx: u64, round: u64) -> serde_json::Value {
        objects::deployment(&self.naming.namespace(idx), &self.naming.name(idx), round)
    }

    pub fn item_path(&self, idx: u64) -> String {
        format!(
            "{}/{}",
            self.collection_path(&self.naming.namespace(idx)),
            self.naming.name(idx)
        )
    }
}

/// Applies (or, with `update`, PUTs) round `first_round + i / count` of Deployment
/// `first + i mod count` for each of the plan's operations. Namespaces are created first; in
/// update mode so are missing Deployments (POST of the first round, an existing one is
/// left alone), unless `assume_exist`. Neither is counted in the report.
pub async fn apply(c: &KubeClient, spec: &ApplySpec, plan: &Plan) -> Result<Report, String> {
    ensure_namespaces(c, &spec.naming.all_namespaces()).await?;
    if spec.update && !spec.assume_exist {
        for idx in spec.first..spec.first + spec.count.max(1) {
            let obj = spec.object(idx, spec.first_round);
            let coll = spec.collection_path(&spec.naming.namespace(idx));
            create_if_absent(c, &coll, &obj).await?;
        }
    }
    let name = if spec.update {
        "apply-as-update"
    } else {
        "apply"
    };
    let query = format!(
        "?fieldManager={}&force=true",
        urlencoding_min(&spec.field_manager)
    );
    let (c2, spec2, query) = (c.clone(), Arc::new(spec.clone()), Arc::new(query));
    let sum = driver::run(name, plan, move |i| {
        let (c, spec, query) = (c2.clone(), spec2.clone(), query.clone());
        async move {
            let (idx, round) = spec.target(i);
            let body = json_body(&spec.object(idx, round)).1;
            let path = spec.item_path(idx);
            let resp = if spec.update {
                c.request(Method::PUT, &path, Some((JSON, body))).await?
            } else {
                let path = format!("{path}{query}");
                c.request(Method::PATCH, &path, Some((APPLY_PATCH, body)))
                    .await?
            };
            Ok(one_object(&resp.ok()?))
        }
    })
    .await?;
    let mut r = Report::new("apply", "kube");
    r.ops.push(sum);
    r.details.insert("objects".into(), spec.count.into());
    r.details
        .insert("first_round".into(), spec.first_round.into());
    Ok(r)
}

/// `s` percent-encoded for a query value (field manager names are mostly plain already).
fn urlencoding_min(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::Kind;

    #[test]
    fn ops_walk_rounds_of_each_object() {
        let spec = ApplySpec {
            naming: Naming {
                kind: Kind::Configmaps,
                prefix: "d".into(),
                ns_prefix: "ns".into(),
                namespaces: 2,
            },
            first: 10,
            count: 3,
            first_round: 5,
            field_manager: "lg x".into(),
            update: false,
            assume_exist: false,
        };
        assert_eq!(spec.target(0), (10, 5));
        assert_eq!(spec.target(2), (12, 5));
        assert_eq!(spec.target(3), (10, 6));
        assert_eq!(
            spec.item_path(11),
            "/apis/apps/v1/namespaces/ns-1/deployments/d-11"
        );
        assert_eq!(urlencoding_min(&spec.field_manager), "lg%20x");
    }
}
