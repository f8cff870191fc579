//! The Policy file as written, before defaults and validation.
//!
//! Every object is decoded by `json_object!` rather than `#[derive(Deserialize)]`: derived
//! structs also accept JSON arrays, cannot match keys case-insensitively (extenders need it) and
//! report a duplicate key at the enclosing object instead of at the key. All fields are
//! `Option` so that "absent" stays distinguishable from "zero" until validation.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};

/// How object keys are compared with the field names.
#[derive(Clone, Copy)]
pub(crate) enum Keys {
    /// Exact match, as Kubernetes' JSON decoder does for most types.
    Exact,
    /// ASCII case-insensitive, as Go's `encoding/json` does for extenders.
    CaseInsensitive,
}

/// Declares a JSON object type: a struct of `Option` fields plus a strict `Deserialize`.
///
/// `argument struct` also gives `present_keys`, for objects of which exactly one field must be set.
macro_rules! json_object {
    (
        $(#[$meta:meta])*
        argument struct $name:ident ($keys:expr, $what:literal) {
            $( $field:ident : $ty:ty = $key:literal ),* $(,)?
        }
    ) => {
        json_object! {
            $(#[$meta])*
            struct $name ($keys, $what) { $( $field : $ty = $key ),* }
        }

        impl $name {
            /// The keys of the fields that are set, in declaration order.
            pub(crate) fn present_keys(&self) -> Vec<&'static str> {
                let mut keys = Vec::new();
                $( if self.$field.is_some() { keys.push($key); } )*
                keys
            }
        }
    };
    (
        $(#[$meta:meta])*
        struct $name:ident ($keys:expr, $what:literal) {
            $( $field:ident : $ty:ty = $key:literal ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Default)]
        pub(crate) struct $name {
            $( pub(crate) $field: Option<$ty>, )*
        }

        impl $name {
            /// The keys of this object in the file format.
            pub(crate) const KEYS: &'static [&'static str] = &[$($key),*];
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct ObjectVisitor;
                impl<'de> Visitor<'de> for ObjectVisitor {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str($what)
                    }
                    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<$name, A::Error> {
                        let mut seen = [false; $name::KEYS.len()];
                        let mut out = $name::default();
                        while let Some(key) = map.next_key_seed(KeySeed {
                            fields: $name::KEYS,
                            keys: $keys,
                            seen: &mut seen,
                        })? {
                            $( if key == $key { out.$field = map.next_value()?; continue; } )*
                        }
                        Ok(out)
                    }
                }
                deserializer.deserialize_map(ObjectVisitor)
            }
        }
    };
}

/// Decodes one object key into the field name it stands for, rejecting unknown and repeated keys.
///
/// Failing while the key is decoded (not after) makes serde_path_to_error put the key in the path.
struct KeySeed<'a> {
    fields: &'static [&'static str],
    keys: Keys,
    seen: &'a mut [bool],
}

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = &'static str;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for KeySeed<'_> {
    type Value = &'static str;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
        let found = self.fields.iter().position(|field| match self.keys {
            Keys::Exact => *field == key,
            Keys::CaseInsensitive => field.eq_ignore_ascii_case(key),
        });
        let note = match self.keys {
            Keys::Exact => "",
            Keys::CaseInsensitive => " (keys here ignore case)",
        };
        let Some(index) = found else {
            return Err(E::custom(format_args!(
                "unknown field `{key}`{note}, expected one of: {}",
                self.fields.join(", ")
            )));
        };
        let Some(seen) = self.seen.get_mut(index) else {
            return Err(E::custom("internal error: field table out of sync"));
        };
        if *seen {
            return Err(E::custom(format_args!(
                "duplicate field `{}`{note}: each key may appear once",
                self.fields[index]
            )));
        }
        *seen = true;
        Ok(self.fields[index])
    }
}

json_object! {
    /// The whole Policy file.
    struct RawPolicy(Keys::Exact, "a Policy object") {
        kind: String = "kind",
        api_version: String = "apiVersion",
        predicates: Vec<RawPredicate> = "predicates",
        priorities: Vec<RawPriority> = "priorities",
        extenders: Vec<RawExtender> = "extenders",
        hard_pod_affinity_symmetric_weight: i64 = "hardPodAffinitySymmetricWeight",
        always_check_all_predicates: bool = "alwaysCheckAllPredicates",
    }
}

json_object! {
    /// One entry of `predicates`.
    struct RawPredicate(Keys::Exact, "a predicate object {\"name\": ..., \"argument\": ...}") {
        name: String = "name",
        argument: RawPredicateArgument = "argument",
    }
}

json_object! {
    /// A predicate's argument; exactly one field must be set.
    ///
    /// A new argument kind is one more line here plus its arm in `build::predicate_argument`.
    argument struct RawPredicateArgument(Keys::Exact, "a predicate argument object") {
        service_affinity: RawServiceAffinity = "serviceAffinity",
        labels_presence: RawLabelsPresence = "labelsPresence",
        namespace_node_selector: RawNamespaceNodeSelector = "namespaceNodeSelector",
        toleration_restriction: RawTolerationRestriction = "tolerationRestriction",
        pod_ip_capacity: RawPodIpCapacity = "podIPCapacity",
        circuit_breaker: RawCircuitBreaker = "circuitBreaker",
        workload_quarantine: RawWorkloadQuarantine = "workloadQuarantine",
        wasm: RawWasm = "wasm",
    }
}

json_object! {
    /// Berth's `tolerationRestriction{taints}`.
    struct RawTolerationRestriction(
        Keys::Exact,
        "a tolerationRestriction object {\"taints\": [{\"taint\": \"key[=value][:effect]\", \
         \"namespaces\": [...]}]}"
    ) {
        taints: Vec<RawTaintGuard> = "taints",
    }
}

json_object! {
    /// One guarded taint of `tolerationRestriction`.
    struct RawTaintGuard(
        Keys::Exact,
        "a guarded taint {\"taint\": \"key[=value][:effect]\", \"namespaces\": [...]}"
    ) {
        taint: String = "taint",
        namespaces: Vec<String> = "namespaces",
    }
}

json_object! {
    /// Berth's `circuitBreaker{...}`: every field optional, defaulted.
    struct RawCircuitBreaker(
        Keys::Exact,
        "a circuitBreaker object {\"failureThreshold\": 3, \"minWorkloads\": 2, \
         \"windowSeconds\": 600, \"coolDownSeconds\": 300, \"startTimeoutSeconds\": 120}"
    ) {
        failure_threshold: i64 = "failureThreshold",
        min_workloads: i64 = "minWorkloads",
        window_seconds: i64 = "windowSeconds",
        cool_down_seconds: i64 = "coolDownSeconds",
        start_timeout_seconds: i64 = "startTimeoutSeconds",
    }
}

json_object! {
    /// Berth's `workloadQuarantine{...}`: every field optional, defaulted.
    struct RawWorkloadQuarantine(
        Keys::Exact,
        "a workloadQuarantine object {\"nodeThreshold\": 3, \"windowSeconds\": 3600, \
         \"notReadyWithinSeconds\": 600, \"coolDownSeconds\": 3600, \
         \"quarantineNodeLabel\": \"key[=value]\"}"
    ) {
        node_threshold: i64 = "nodeThreshold",
        window_seconds: i64 = "windowSeconds",
        not_ready_within_seconds: i64 = "notReadyWithinSeconds",
        cool_down_seconds: i64 = "coolDownSeconds",
        quarantine_node_label: String = "quarantineNodeLabel",
    }
}

json_object! {
    /// Berth's `podIPCapacity{nodeLabel | nodeAnnotation | resource, whenMissing}`.
    struct RawPodIpCapacity(
        Keys::Exact,
        "a podIPCapacity object {\"nodeLabel\" or \"nodeAnnotation\" or \"resource\": \
         ..., \"whenMissing\": \"Reject\" or \"PodCIDR\"}"
    ) {
        node_label: String = "nodeLabel",
        node_annotation: String = "nodeAnnotation",
        resource: String = "resource",
        when_missing: String = "whenMissing",
    }
}

json_object! {
    /// `serviceAffinity{labels}`.
    struct RawServiceAffinity(Keys::Exact, "a serviceAffinity object {\"labels\": [...]}") {
        labels: Vec<String> = "labels",
    }
}

json_object! {
    /// `labelsPresence{labels, presence}`.
    struct RawLabelsPresence(
        Keys::Exact,
        "a labelsPresence object {\"labels\": [...], \"presence\": ...}"
    ) {
        labels: Vec<String> = "labels",
        presence: bool = "presence",
    }
}

json_object! {
    /// Berth's `namespaceNodeSelector{defaultNodeSelector}`.
    struct RawNamespaceNodeSelector(
        Keys::Exact,
        "a namespaceNodeSelector object {\"defaultNodeSelector\": \"k=v,...\"}"
    ) {
        default_node_selector: String = "defaultNodeSelector",
    }
}

json_object! {
    /// One entry of `priorities`.
    struct RawPriority(
        Keys::Exact,
        "a priority object {\"name\": ..., \"weight\": ..., \"argument\": ...}"
    ) {
        name: String = "name",
        weight: i64 = "weight",
        argument: RawPriorityArgument = "argument",
    }
}

json_object! {
    /// A priority's argument; exactly one field must be set.
    ///
    /// A new argument kind is one more line here plus its arm in `build::priority_argument`.
    argument struct RawPriorityArgument(Keys::Exact, "a priority argument object") {
        service_anti_affinity: RawServiceAntiAffinity = "serviceAntiAffinity",
        label_preference: RawLabelPreference = "labelPreference",
        requested_to_capacity_ratio: RawRequestedToCapacityRatio =
            "requestedToCapacityRatioArguments",
        wasm: RawWasm = "wasm",
    }
}

json_object! {
    /// Berth's `wasm{module, config, failurePolicy, timeoutMillis, memoryLimitMiB}`: a WASM
    /// plugin as a predicate or priority.
    struct RawWasm(
        Keys::Exact,
        "a wasm object {\"module\": \"name.wasm\", \"config\": {...}, \"failurePolicy\": \"Fail\"}"
    ) {
        module: String = "module",
        config: serde_json::Value = "config",
        failure_policy: String = "failurePolicy",
        timeout_millis: i64 = "timeoutMillis",
        memory_limit_mib: i64 = "memoryLimitMiB",
    }
}

json_object! {
    /// `serviceAntiAffinity{label}`.
    struct RawServiceAntiAffinity(Keys::Exact, "a serviceAntiAffinity object {\"label\": ...}") {
        label: String = "label",
    }
}

json_object! {
    /// `labelPreference{label, presence}`.
    struct RawLabelPreference(
        Keys::Exact,
        "a labelPreference object {\"label\": ..., \"presence\": ...}"
    ) {
        label: String = "label",
        presence: bool = "presence",
    }
}

json_object! {
    /// `requestedToCapacityRatioArguments{shape, resources}`.
    struct RawRequestedToCapacityRatio(
        Keys::Exact,
        "a requestedToCapacityRatioArguments object {\"shape\": [...], \"resources\": [...]}"
    ) {
        shape: Vec<RawShapePoint> = "shape",
        resources: Vec<RawResource> = "resources",
    }
}

json_object! {
    /// One point of the shape.
    struct RawShapePoint(Keys::Exact, "a shape point {\"utilization\": ..., \"score\": ...}") {
        utilization: i64 = "utilization",
        score: i64 = "score",
    }
}

json_object! {
    /// One resource of requestedToCapacityRatioArguments.
    struct RawResource(Keys::Exact, "a resource {\"name\": ..., \"weight\": ...}") {
        name: String = "name",
        weight: i64 = "weight",
    }
}

json_object! {
    /// One entry of `extenders`; keys match case-insensitively, as they did upstream.
    struct RawExtender(Keys::CaseInsensitive, "an extender object") {
        url_prefix: String = "urlPrefix",
        filter_verb: String = "filterVerb",
        preempt_verb: String = "preemptVerb",
        prioritize_verb: String = "prioritizeVerb",
        weight: i64 = "weight",
        bind_verb: String = "bindVerb",
        enable_https: bool = "enableHttps",
        tls_config: RawTlsConfig = "tlsConfig",
        http_timeout: i64 = "httpTimeout",
        node_cache_capable: bool = "nodeCacheCapable",
        managed_resources: Vec<RawManagedResource> = "managedResources",
        ignorable: bool = "ignorable",
    }
}

json_object! {
    /// An extender's `tlsConfig`; the `*Data` fields are base64, as Go encodes `[]byte`.
    struct RawTlsConfig(Keys::CaseInsensitive, "a tlsConfig object") {
        insecure: bool = "insecure",
        server_name: String = "serverName",
        cert_file: String = "certFile",
        key_file: String = "keyFile",
        ca_file: String = "caFile",
        cert_data: String = "certData",
        key_data: String = "keyData",
        ca_data: String = "caData",
    }
}

json_object! {
    /// One entry of an extender's `managedResources`.
    struct RawManagedResource(
        Keys::CaseInsensitive,
        "a managed resource {\"name\": ..., \"ignoredByScheduler\": ...}"
    ) {
        name: String = "name",
        ignored_by_scheduler: bool = "ignoredByScheduler",
    }
}
