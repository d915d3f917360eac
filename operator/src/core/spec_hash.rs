//! The spec hash: what the operator stamps on every object it renders, so
//! that an apply that would change nothing is not sent.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;

/// Annotation carrying the hash of everything the operator rendered into an
/// object; equal hashes mean an apply would change nothing, so none is sent.
pub const ANNOTATION_SPEC_HASH: &str = "kubecombo.io/spec-hash";

/// The value of [`ANNOTATION_SPEC_HASH`] on an object, if any.
pub fn spec_hash_of(meta: &ObjectMeta) -> Option<&str> {
    meta.annotations
        .as_ref()?
        .get(ANNOTATION_SPEC_HASH)
        .map(String::as_str)
}

/// FNV-1a (64 bit) of the JSON form: stable across builds and releases,
/// unlike `std`'s hasher.
pub fn spec_hash<T: Serialize>(obj: &T) -> String {
    let json = serde_json::to_vec(obj).expect("rendered objects always serialise");
    combo_api::hash::fnv1a_hex(&json)
}

/// Stamps `obj` with the hash of its rendered form.
pub fn stamped<T: Serialize>(mut obj: T, meta: impl Fn(&mut T) -> &mut ObjectMeta) -> T {
    let hash = spec_hash(&obj);
    meta(&mut obj)
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(ANNOTATION_SPEC_HASH.into(), hash);
    obj
}
