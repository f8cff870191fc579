//! Jobs: as many pods as run at once, min(parallelism, completions) (parallelism defaults
//! to 1; completions to 1 when neither is set, else unset for a work queue), none while
//! suspended. Pods are `<job>-<5 characters>` (Indexed: `<job>-<index>-<5 characters>`
//! with the completion-index annotation), labelled `controller-uid` and `job-name`.

use k8s_openapi::api::batch::v1::Job;

use super::{
    Planned, Problem, check_no_node_name, check_selector, controller_ref, count, generated_names,
    missing, namespace_of, pod_from_template,
};

/// The annotation carrying an Indexed Job pod's completion index.
pub(crate) const COMPLETION_INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";

pub(super) fn plan(job: &Job) -> Result<Planned, Problem> {
    let spec = job
        .spec
        .as_ref()
        .ok_or_else(|| missing("spec", "a Job needs spec.template"))?;
    let template = &spec.template;
    check_no_node_name(template.spec.as_ref(), "spec.template.spec")?;
    match template
        .spec
        .as_ref()
        .and_then(|s| s.restart_policy.as_deref())
    {
        Some("OnFailure" | "Never") => {}
        other => {
            return Err(Problem::Message {
                field: "spec.template.spec.restartPolicy".to_owned(),
                message: format!(
                    "{}: a Job's pods restart OnFailure or Never",
                    other.map_or_else(|| "missing".to_owned(), |p| format!("{p:?} is not allowed"))
                ),
            });
        }
    }
    if spec.manual_selector == Some(true) {
        check_selector(spec.selector.as_ref(), template)?;
    }
    let parallelism = count(spec.parallelism, 1, "spec.parallelism")?;
    let completions = match (spec.completions, spec.parallelism) {
        (None, None) => Some(1),
        (None, Some(_)) => None,
        (Some(c), _) => Some(count(Some(c), 0, "spec.completions")?),
    };
    let indexed = match spec.completion_mode.as_deref() {
        None | Some("NonIndexed") => false,
        Some("Indexed") if completions.is_some() => true,
        Some("Indexed") => {
            return Err(missing(
                "spec.completions",
                "an Indexed Job needs completions",
            ));
        }
        Some(other) => {
            return Err(Problem::Message {
                field: "spec.completionMode".to_owned(),
                message: format!("unknown mode {other:?} (expected NonIndexed, Indexed)"),
            });
        }
    };
    let suspended = spec.suspend == Some(true);
    let running = if suspended {
        0
    } else {
        completions.map_or(parallelism, |c| c.min(parallelism))
    };
    let namespace = namespace_of(&job.metadata);
    let name = job.metadata.name.clone().unwrap_or_default();
    let owner = controller_ref("Job", "batch/v1", &job.metadata);
    let labels = [
        ("controller-uid", owner.uid.as_str()),
        ("job-name", name.as_str()),
    ];
    let names: Vec<String> = if indexed {
        (0..running)
            .flat_map(|index| generated_names(&format!("{name}-{index}"), 1))
            .collect()
    } else {
        generated_names(&name, running)
    };
    let pods = names
        .into_iter()
        .enumerate()
        .map(|(index, pod_name)| {
            let mut pod = pod_from_template(template, &namespace, pod_name, owner.clone(), &labels);
            if indexed {
                pod.metadata
                    .annotations
                    .get_or_insert_with(Default::default)
                    .insert(COMPLETION_INDEX_ANNOTATION.to_owned(), index.to_string());
            }
            pod
        })
        .collect();
    let note = if suspended {
        Some("suspended: no pods until spec.suspend is false".to_owned())
    } else {
        Some(match completions {
            Some(c) => format!("{running} at once of {c} completions (parallelism {parallelism})"),
            None => format!("{running} at once (parallelism {parallelism}, work queue)"),
        })
    };
    Ok(Planned {
        pods,
        wanted: running,
        note,
        spec_at: "spec.template.spec",
        ..Planned::default()
    })
}
