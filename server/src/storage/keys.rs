//! Where a resource's objects live in the store: `/<group or core>/<plural>/[<namespace>/]<name>`.

use keel_catalog::ResourceInfo;

/// Names the storage location of one resource type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// `/<group>/<plural>/`, shared by every version of the resource.
    pub prefix: String,
    pub namespaced: bool,
}

impl Location {
    pub fn of(catalog: &keel_catalog::Catalog, info: &ResourceInfo) -> Location {
        Location {
            prefix: catalog.storage_prefix(info),
            namespaced: info.namespaced,
        }
    }

    pub fn key(&self, namespace: &str, name: &str) -> Vec<u8> {
        let mut k = String::with_capacity(self.prefix.len() + namespace.len() + name.len() + 1);
        k.push_str(&self.prefix);
        if self.namespaced {
            k.push_str(namespace);
            k.push('/');
        }
        k.push_str(name);
        k.into_bytes()
    }

    /// The list prefix: one namespace, or all of them when `namespace` is empty.
    pub fn list_prefix(&self, namespace: &str) -> Vec<u8> {
        let mut k = self.prefix.clone();
        if self.namespaced && !namespace.is_empty() {
            k.push_str(namespace);
            k.push('/');
        }
        k.into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_prefixes() {
        let ns = Location {
            prefix: "/core/pods/".into(),
            namespaced: true,
        };
        assert_eq!(ns.key("a", "p"), b"/core/pods/a/p");
        assert_eq!(ns.list_prefix("a"), b"/core/pods/a/");
        assert_eq!(ns.list_prefix(""), b"/core/pods/");
        let cluster = Location {
            prefix: "/core/nodes/".into(),
            namespaced: false,
        };
        assert_eq!(cluster.key("ignored", "n"), b"/core/nodes/n");
        assert_eq!(cluster.list_prefix("ignored"), b"/core/nodes/");
    }
}
