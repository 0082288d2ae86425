//! The set algebra against a model: a set is the `BTreeSet` of its member paths. Random
//! sets from a seeded generator; a failure names its seed.

use keel_smd::{Path, PathElement, Set};
use serde_json::json;
use std::collections::BTreeSet;

/// xorshift64*: enough randomness for shapes, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn element(rng: &mut Rng) -> PathElement {
    // A small alphabet so that random sets overlap.
    match rng.below(6) {
        0..=2 => PathElement::field(["a", "b", "c"][rng.below(3) as usize]),
        3 => PathElement::key([("name", json!(["x", "y"][rng.below(2) as usize]))]),
        4 => PathElement::value(if rng.below(2) == 0 {
            json!(1)
        } else {
            json!("s")
        }),
        _ => PathElement::Index(rng.below(2) as usize),
    }
}

fn random_paths(rng: &mut Rng) -> BTreeSet<Path> {
    (0..rng.below(12))
        .map(|_| Path((0..1 + rng.below(4)).map(|_| element(rng)).collect()))
        .collect()
}

fn model(s: &Set) -> BTreeSet<Path> {
    s.paths().into_iter().collect()
}

fn is_proper_prefix(p: &Path, q: &Path) -> bool {
    p.0.len() < q.0.len() && q.0[..p.0.len()] == p.0[..]
}

#[test]
fn set_algebra_matches_model() {
    for seed in 1..=2000u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let (ma, mb) = (random_paths(&mut rng), random_paths(&mut rng));
        let (a, b) = (
            Set::from_paths(ma.iter().cloned()),
            Set::from_paths(mb.iter().cloned()),
        );
        assert_eq!(model(&a), ma, "seed {seed}: insert/paths");
        assert_eq!(model(&a.union(&b)), &ma | &mb, "seed {seed}: union");
        assert_eq!(
            model(&a.intersection(&b)),
            &ma & &mb,
            "seed {seed}: intersection"
        );
        assert_eq!(
            model(&a.difference(&b)),
            &ma - &mb,
            "seed {seed}: difference"
        );
        let rdiff: BTreeSet<Path> = ma
            .iter()
            .filter(|p| !mb.iter().any(|q| q == *p || is_proper_prefix(q, p)))
            .cloned()
            .collect();
        assert_eq!(
            model(&a.recursive_difference(&b)),
            rdiff,
            "seed {seed}: recursive difference"
        );
        // The in-place forms agree with the model and keep the structural invariant.
        let mut in_place = a.clone();
        in_place.remove_recursive(&b);
        assert_eq!(model(&in_place), rdiff, "seed {seed}: remove_recursive");
        assert_eq!(
            in_place,
            a.recursive_difference(&b),
            "seed {seed}: remove_recursive tree"
        );
        let mut in_place = a.clone();
        in_place.remove(&b);
        assert_eq!(model(&in_place), &ma - &mb, "seed {seed}: remove");
        assert_eq!(in_place, a.difference(&b), "seed {seed}: remove tree");
        let mut in_place = a.clone();
        in_place.union_with(&b);
        assert_eq!(in_place, a.union(&b), "seed {seed}: union_with");
        assert_eq!(
            a.intersects(&b),
            !(&ma & &mb).is_empty(),
            "seed {seed}: intersects"
        );
        let leaves: BTreeSet<Path> = ma
            .iter()
            .filter(|p| !ma.iter().any(|q| is_proper_prefix(p, q)))
            .cloned()
            .collect();
        assert_eq!(model(&a.leaves()), leaves, "seed {seed}: leaves");
        let fa_value = a.to_fields_v1_value();
        for p in ma.iter().chain(&mb) {
            assert_eq!(a.has(&p.0), ma.contains(p), "seed {seed}: has {p}");
            assert_eq!(
                keel_smd::fieldsv1::fields_v1_has(fa_value.as_object().unwrap(), &p.0).unwrap(),
                ma.contains(p),
                "seed {seed}: fields_v1_has {p}"
            );
            if let Some(keel_smd::PathElement::Field(name)) = p.0.first() {
                assert_eq!(
                    a.has_field(name),
                    a.has(&p.0[..1]),
                    "seed {seed}: has_field {name}"
                );
                assert_eq!(
                    a.field_child(name),
                    a.child(&p.0[0]),
                    "seed {seed}: field_child {name}"
                );
            }
        }
        assert_eq!(a.is_empty(), ma.is_empty(), "seed {seed}: is_empty");
        assert_eq!(a.len(), ma.len(), "seed {seed}: len");
        // Structural invariant: a difference that empties a subtree leaves no empty node,
        // so equal models mean equal sets.
        assert_eq!(a.difference(&a), Set::new(), "seed {seed}: a - a");
        let text = a.to_fields_v1();
        assert_eq!(
            Set::from_fields_v1(&text).unwrap(),
            a,
            "seed {seed}: FieldsV1 {text}"
        );
        // In-place edits of the FieldsV1 value agree with the set algebra, byte for byte.
        let edited = |op: fn(
            &mut serde_json::Map<String, serde_json::Value>,
            &Set,
        ) -> Result<(), keel_smd::FieldsV1Error>| {
            let serde_json::Value::Object(mut m) = a.to_fields_v1_value() else {
                unreachable!()
            };
            op(&mut m, &b).unwrap();
            serde_json::to_string(&m).unwrap()
        };
        assert_eq!(
            edited(keel_smd::fieldsv1::remove_from_fields_v1),
            serde_json::to_string(&a.difference(&b).to_fields_v1_value()).unwrap(),
            "seed {seed}: remove_from_fields_v1"
        );
        assert_eq!(
            edited(keel_smd::fieldsv1::add_to_fields_v1),
            serde_json::to_string(&a.union(&b).to_fields_v1_value()).unwrap(),
            "seed {seed}: add_to_fields_v1"
        );
        let (fa, fb) = (a.to_fields_v1_value(), b.to_fields_v1_value());
        let (fa, fb) = (fa.as_object().unwrap(), fb.as_object().unwrap());
        assert_eq!(
            keel_smd::fieldsv1::fields_v1_intersects(fa, &b).unwrap(),
            a.intersects(&b),
            "seed {seed}: fields_v1_intersects"
        );
        assert_eq!(
            keel_smd::fieldsv1::fields_v1_contains(fa, fb),
            mb.is_subset(&ma),
            "seed {seed}: fields_v1_contains"
        );
        let u = a.union(&b).to_fields_v1_value();
        assert!(keel_smd::fieldsv1::fields_v1_contains(
            u.as_object().unwrap(),
            fb
        ));
        // The value form holds the same keys in the same order as the text form.
        let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            serde_json::to_string(&a.to_fields_v1_value()).unwrap(),
            serde_json::to_string(&parsed).unwrap(),
            "seed {seed}: FieldsV1 value of {text}"
        );
    }
}
