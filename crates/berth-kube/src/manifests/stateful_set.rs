//! StatefulSets: `replicas` pods (default 1) named `<set>-0` .. `<set>-<n-1>`, labelled
//! with `statefulset.kubernetes.io/pod-name` and the revision, and for each
//! volumeClaimTemplate a PersistentVolumeClaim `<claim>-<pod>` mounted as the template's
//! volume. Claims already in the cluster are reused, as the controller does; new ones are
//! unbound and get the default StorageClass when they name none (DefaultStorageClass).

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{
    Context, Planned, Problem, check_no_node_name, check_selector, controller_ref, count, missing,
    namespace_of, naming, pod_from_template,
};

/// The label naming each pod of a StatefulSet, for per-pod Services.
pub(crate) const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
/// The label with the controller revision the pod was made from.
pub(crate) const REVISION_LABEL: &str = "controller-revision-hash";
/// The annotation marking the cluster's default StorageClass (and its beta form).
const DEFAULT_CLASS_ANNOTATIONS: [&str; 2] = [
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
];

pub(super) fn plan(set: &StatefulSet, context: &Context<'_>) -> Result<Planned, Problem> {
    let spec = set.spec.as_ref().ok_or_else(|| {
        missing(
            "spec",
            "a StatefulSet needs spec.selector and spec.template",
        )
    })?;
    check_selector(Some(&spec.selector), &spec.template)?;
    check_no_node_name(spec.template.spec.as_ref(), "spec.template.spec")?;
    let replicas = count(spec.replicas, 1, "spec.replicas")?;
    let ordered = match spec.pod_management_policy.as_deref() {
        None | Some("OrderedReady") => true,
        Some("Parallel") => false,
        Some(other) => {
            return Err(Problem::Message {
                field: "spec.podManagementPolicy".to_owned(),
                message: format!("unknown policy {other:?} (expected OrderedReady, Parallel)"),
            });
        }
    };
    let namespace = namespace_of(&set.metadata);
    let name = set.metadata.name.clone().unwrap_or_default();
    let revision = format!("{name}-{}", naming::template_hash(&spec.template));
    let owner = controller_ref("StatefulSet", "apps/v1", &set.metadata);
    let templates = spec.volume_claim_templates.as_deref().unwrap_or_default();
    for (index, claim) in templates.iter().enumerate() {
        if claim.metadata.name.as_deref().is_none_or(str::is_empty) {
            return Err(missing(
                &format!("spec.volumeClaimTemplates[{index}].metadata.name"),
                "each claim template needs a name, the volume it fills",
            ));
        }
    }
    let default_class = default_storage_class(context)?;
    let match_labels = spec.selector.match_labels.clone();
    let mut planned = Planned {
        wanted: replicas,
        spec_at: "spec.template.spec",
        stateful_sets: vec![set.clone()],
        note: ordered.then(|| {
            "OrderedReady: the controller creates each pod once the one before it is Running \
             and Ready"
                .to_owned()
        }),
        ..Planned::default()
    };
    for ordinal in 0..replicas {
        let pod_name = format!("{name}-{ordinal}");
        let mut pod = pod_from_template(
            &spec.template,
            &namespace,
            pod_name.clone(),
            owner.clone(),
            &[(REVISION_LABEL, &revision), (POD_NAME_LABEL, &pod_name)],
        );
        let pod_spec = pod.spec.get_or_insert_with(Default::default);
        let mut volumes = Vec::with_capacity(templates.len());
        for template in templates {
            let claim = template.metadata.name.clone().unwrap_or_default();
            let claim_name = format!("{claim}-{pod_name}");
            volumes.push(Volume {
                name: claim.clone(),
                persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                    claim_name: claim_name.clone(),
                    read_only: None,
                }),
                ..Default::default()
            });
            let exists = context.objects.persistent_volume_claims.iter().any(|c| {
                c.metadata.name.as_deref() == Some(&claim_name)
                    && namespace_of(&c.metadata) == namespace
            });
            if !exists {
                let mut claim_spec = template.spec.clone().unwrap_or_default();
                let annotated = template
                    .metadata
                    .annotations
                    .as_ref()
                    .is_some_and(|a| a.contains_key("volume.beta.kubernetes.io/storage-class"));
                if claim_spec.storage_class_name.is_none() && !annotated {
                    claim_spec.storage_class_name.clone_from(&default_class);
                }
                planned.claims.push(PersistentVolumeClaim {
                    metadata: ObjectMeta {
                        uid: Some(naming::uid(
                            "PersistentVolumeClaim",
                            &namespace,
                            &claim_name,
                        )),
                        name: Some(claim_name),
                        namespace: Some(namespace.clone()),
                        labels: match_labels.clone(),
                        annotations: template.metadata.annotations.clone(),
                        ..Default::default()
                    },
                    spec: Some(claim_spec),
                    status: None,
                });
            }
        }
        // The claims' volumes replace template volumes of the same name.
        let claims: Vec<String> = volumes.iter().map(|v| v.name.clone()).collect();
        volumes.extend(
            pod_spec
                .volumes
                .take()
                .into_iter()
                .flatten()
                .filter(|v| !claims.contains(&v.name)),
        );
        if !volumes.is_empty() {
            pod_spec.volumes = Some(volumes);
        }
        planned.pods.push(pod);
    }
    Ok(planned)
}

/// The StorageClass annotated as the default, if exactly one is; v1.22's DefaultStorageClass
/// plugin refuses claims while several are.
fn default_storage_class(context: &Context<'_>) -> Result<Option<String>, Problem> {
    let defaults: Vec<&str> = context
        .objects
        .storage_classes
        .iter()
        .filter(|class| {
            class.metadata.annotations.as_ref().is_some_and(|a| {
                DEFAULT_CLASS_ANNOTATIONS
                    .iter()
                    .any(|key| a.get(*key).is_some_and(|v| v == "true"))
            })
        })
        .filter_map(|class| class.metadata.name.as_deref())
        .collect();
    match defaults[..] {
        [] => Ok(None),
        [one] => Ok(Some(one.to_owned())),
        _ => Err(Problem::Message {
            field: "spec.volumeClaimTemplates".to_owned(),
            message: format!(
                "{} default StorageClasses were found ({}); admission refuses claims without \
                 a storageClassName until one is left",
                defaults.len(),
                defaults.join(", ")
            ),
        }),
    }
}
