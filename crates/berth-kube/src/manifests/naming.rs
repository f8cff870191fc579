//! Names and UIDs of the objects controllers would create, made deterministic: the same
//! manifests give the same names on every run, so outputs can be compared and pinned.
//!
//! Upstream draws pod name suffixes at random (`utilrand.String(5)`) and hashes a pod
//! template through Go's spew printer; neither can be reproduced, so Berth hashes the
//! template's JSON and the pod's ordinal instead, with upstream's alphabet and lengths.

use k8s_openapi::api::core::v1::PodTemplateSpec;

/// The alphabet of generated names (`k8s.io/apimachinery/pkg/util/rand`): no vowels, so
/// no words, and no characters that read alike (0/o, 1/l, 3/e).
const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// Length of the random part of a `generateName`d object.
pub(crate) const SUFFIX_LEN: usize = 5;

/// 64-bit FNV-1a over the parts, each followed by a zero byte so ("ab", "c") and
/// ("a", "bc") differ.
fn fnv64(parts: &[&[u8]]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &byte in part.iter().chain(&[0u8]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}

/// `SUFFIX_LEN` characters of the alphabet drawn from the parts' hash.
pub(crate) fn suffix(parts: &[&[u8]]) -> String {
    let mut hash = fnv64(parts);
    let base = ALPHANUMS.len() as u64;
    (0..SUFFIX_LEN)
        .map(|_| {
            let digit = usize::try_from(hash % base).unwrap_or(0);
            hash /= base;
            char::from(ALPHANUMS[digit])
        })
        .collect()
}

/// The `pod-template-hash` of a Deployment's ReplicaSet: a 32-bit hash of the template
/// written in the alphabet as upstream's `rand.SafeEncodeString` writes its decimal digits.
pub(crate) fn template_hash(template: &PodTemplateSpec) -> String {
    // Serialising a typed object cannot fail (no maps with non-string keys).
    let json = serde_json::to_vec(template).unwrap_or_default();
    let hash = fnv64(&[&json]) as u32;
    hash.to_string()
        .bytes()
        .map(|b| char::from(ALPHANUMS[usize::from(b) % ALPHANUMS.len()]))
        .collect()
}

/// A UID in the UUID text form, derived from the object's kind, namespace and name, so
/// owner references and selectors that name it stay the same from run to run.
pub(crate) fn uid(kind: &str, namespace: &str, name: &str) -> String {
    let high = fnv64(&[
        b"uid",
        kind.as_bytes(),
        namespace.as_bytes(),
        name.as_bytes(),
    ]);
    let low = fnv64(&[name.as_bytes(), namespace.as_bytes(), kind.as_bytes()]);
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        high >> 32,
        (high >> 16) & 0xffff,
        high & 0xfff,
        low >> 52,
        low & 0xffff_ffff_ffff
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes_use_the_alphabet_and_differ_by_ordinal() {
        let a = suffix(&[b"web-abc", b"0"]);
        let b = suffix(&[b"web-abc", b"1"]);
        assert_eq!(a.len(), SUFFIX_LEN);
        assert!(a.bytes().all(|c| ALPHANUMS.contains(&c)), "{a}");
        assert_ne!(a, b);
        assert_eq!(a, suffix(&[b"web-abc", b"0"]), "deterministic");
        assert_ne!(suffix(&[b"ab", b"c"]), suffix(&[b"a", b"bc"]));
    }

    #[test]
    fn template_hash_follows_the_template() {
        let mut template = PodTemplateSpec::default();
        let first = template_hash(&template);
        assert!(!first.is_empty());
        assert!(first.bytes().all(|c| ALPHANUMS.contains(&c)), "{first}");
        template.metadata = Some(Default::default());
        template.metadata.as_mut().unwrap().labels =
            Some([("app".to_owned(), "web".to_owned())].into());
        assert_ne!(template_hash(&template), first);
    }

    #[test]
    fn uids_look_like_uuids() {
        let id = uid("Deployment", "default", "web");
        assert_eq!(id.len(), 36, "{id}");
        assert_eq!(id.matches('-').count(), 4);
        assert_eq!(&id[14..15], "4");
        assert_ne!(id, uid("Deployment", "default", "api"));
        assert_ne!(id, uid("ReplicaSet", "default", "web"));
    }
}
