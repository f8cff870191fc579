//! KubeSchedulerConfiguration -> Policy: the subset of `kubescheduler.config.k8s.io/v1` that
//! maps one to one onto a Policy. The profile's plugins are resolved as kube-scheduler v1.36
//! resolves them (v1's default `multiPoint` set merged with the file's, then expanded to each
//! extension point), mapped back through the registry's plugin names, and the resulting Policy
//! goes through the Policy parser, so both routes meet the same validation and defaults.
//! Anything outside the subset is an error naming the field and what would be accepted.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use berth_policy::file;
use berth_policy::upstream;
use berth_policy::{EffectivePolicy, FeatureGates, PolicyError, PredicateKind, PriorityKind};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::args::{
    self, BalancedAllocationArgs, InterPodAffinityArgs, NodeAffinityArgs, NodeResourcesFitArgs,
    PodTopologySpreadArgs, ResourceSpec, ScoringStrategy, VolumeBindingArgs,
};
use crate::component::{ConfigVersion, Settings};
use crate::plugins::{self, Point};
use crate::types::{
    API_VERSION, DEFAULT_SCHEDULER_NAME, Extender, KIND, KubeSchedulerConfiguration, Plugin,
    PluginSet, Plugins, Profile,
};

/// How to read a configuration.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadOptions<'a> {
    /// The profile to read (`berth run --scheduler-name`); without it the file must have one.
    pub scheduler_name: Option<&'a str>,
    /// The v1.22 feature gates the resulting policy runs under.
    pub feature_gates: FeatureGates,
}

/// Names given to the labelsPresence entries read back from NodeAffinity's addedAffinity.
pub const LABELS_PRESENT_ENTRY: &str = "NodeLabelsPresent";
/// See [`LABELS_PRESENT_ENTRY`].
pub const LABELS_ABSENT_ENTRY: &str = "NodeLabelsAbsent";

/// Reads a KubeSchedulerConfiguration file as the policy it maps to.
pub fn load(path: &Path, options: ReadOptions<'_>) -> Result<EffectivePolicy, PolicyError> {
    let source = path.display().to_string();
    let text =
        file::read_regular_text(path, file::MAX_POLICY_BYTES).map_err(|e| PolicyError::Read {
            file: source.clone(),
            source: e,
        })?;
    parse(&text, &source, options)
}

/// The component settings of a KubeSchedulerConfiguration (YAML or JSON): client, leader
/// election, backoff and the rest besides profiles and extenders; `source` names the file.
pub fn settings(text: &str, source: &str) -> Result<Settings, PolicyError> {
    Settings::of(&decode(text, source)?, source)
}

/// Parses a KubeSchedulerConfiguration (YAML or JSON) as the policy it maps to; `source`
/// names the file in errors.
pub fn parse(
    text: &str,
    source: &str,
    options: ReadOptions<'_>,
) -> Result<EffectivePolicy, PolicyError> {
    let (policy, warnings) = to_policy_json(text, source, options)?;
    let policy_text = serde_json::to_string(&policy).expect("a JSON value serializes");
    let mut policy = berth_policy::parse(&policy_text, source).map_err(|e| match e {
        PolicyError::Invalid {
            file,
            path,
            message,
        }
        | PolicyError::Schema {
            file,
            path,
            message,
            ..
        } => PolicyError::Invalid {
            file,
            path,
            message: format!("{message} (in the Policy this configuration maps to)"),
        },
        other => other,
    })?;
    policy.warnings.extend(warnings);
    Ok(policy)
}

/// The Policy (as JSON) a KubeSchedulerConfiguration maps to, and warnings about what it
/// leaves out on purpose.
pub fn to_policy_json(
    text: &str,
    source: &str,
    options: ReadOptions<'_>,
) -> Result<(Value, Vec<String>), PolicyError> {
    let config = decode(text, source)?;
    Settings::of(&config, source)?;
    let invalid = |p: Problem| PolicyError::Invalid {
        file: source.to_string(),
        path: p.path,
        message: p.message,
    };
    Reader::new(options).policy(&config).map_err(invalid)
}

/// A problem at a path of the file.
struct Problem {
    path: String,
    message: String,
}

fn problem(path: impl Into<String>, message: impl Into<String>) -> Problem {
    Problem {
        path: path.into(),
        message: message.into(),
    }
}

fn decode(text: &str, source: &str) -> Result<KubeSchedulerConfiguration, PolicyError> {
    let syntax = |line, column, message: String| PolicyError::Syntax {
        file: source.to_string(),
        line,
        column,
        message,
    };
    if text.trim().is_empty() {
        return Err(syntax(
            1,
            1,
            format!(
                "the file is empty; expected a YAML or JSON object with apiVersion: {API_VERSION} and kind: {KIND}"
            ),
        ));
    }
    if let Some((line, column)) = file::too_deep(text, file::MAX_NESTING) {
        return Err(syntax(
            line,
            column,
            format!(
                "nested deeper than {} levels of [ and {{ (counted inside strings too); a \
                 KubeSchedulerConfiguration nests about 8 levels deep",
                file::MAX_NESTING
            ),
        ));
    }
    // apiVersion and kind first, so a Policy (or another version) given here is named as
    // such rather than by its first unknown field.
    if let Ok(meta) = serde_yaml_ng::from_str::<TypeMeta>(text) {
        let invalid = |path: &str, message: String| PolicyError::Invalid {
            file: source.to_string(),
            path: path.to_string(),
            message,
        };
        let api_version = meta.api_version.unwrap_or_default();
        if ConfigVersion::from_api_version(&api_version).is_none() {
            return Err(invalid(
                "apiVersion",
                format!(
                    "is {api_version:?}; Berth reads {} (kube-scheduler v1.19 and later){}",
                    ConfigVersion::accepted(),
                    if meta.kind.as_deref() == Some("Policy") {
                        " (this is a Policy file: give it with --policy)"
                    } else {
                        ""
                    }
                ),
            ));
        }
        let kind = meta.kind.unwrap_or_default();
        if kind != KIND {
            return Err(invalid("kind", format!("is {kind:?}; expected {KIND}")));
        }
    }
    let deserializer = serde_yaml_ng::Deserializer::from_str(text);
    serde_path_to_error::deserialize(deserializer).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        let (line, column) = inner
            .location()
            .map(|l| (l.line(), l.column()))
            .unwrap_or((1, 1));
        let text = inner.to_string();
        let mut message = match text.find(" at line ") {
            Some(i) => text[..i].to_string(),
            None => text,
        };
        // serde_yaml_ng starts with the path, which the error carries separately.
        if let Some(rest) = message.strip_prefix(&format!("{path}: ")) {
            message = rest.to_string();
        }
        let top_level = !path.contains(['.', '[']) || path == ".";
        if top_level && message.starts_with("unknown field") {
            message.push_str(
                "; a KubeSchedulerConfiguration has apiVersion, kind, parallelism, \
                 leaderElection, clientConnection, healthzBindAddress and metricsBindAddress \
                 (v1beta1, v1beta2), enableProfiling, enableContentionProfiling, \
                 percentageOfNodesToScore, podInitialBackoffSeconds, podMaxBackoffSeconds, \
                 profiles, extenders and delayCacheUntilActive (v1); logging is set with flags",
            );
        }
        let path = if path == "." { String::new() } else { path };
        PolicyError::Schema {
            file: source.to_string(),
            path,
            message,
            line,
            column,
        }
    })
}

/// The fields every Kubernetes object starts with; the rest is ignored here.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct TypeMeta {
    api_version: Option<String>,
    kind: Option<String>,
}

/// A plugin enabled at an extension point after v1.36's merging and expansion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Enabled {
    /// The score weight (1 when unset or 0, as the framework takes it).
    weight: i32,
}

type Resolved = BTreeMap<Point, BTreeMap<String, Enabled>>;

struct Reader {
    gates: FeatureGates,
    scheduler_name: Option<String>,
}

impl Reader {
    fn new(options: ReadOptions<'_>) -> Self {
        Reader {
            gates: options.feature_gates,
            scheduler_name: options.scheduler_name.map(str::to_string),
        }
    }

    fn policy(&self, config: &KubeSchedulerConfiguration) -> Result<(Value, Vec<String>), Problem> {
        let version = ConfigVersion::from_api_version(&config.api_version).ok_or_else(|| {
            problem(
                "apiVersion",
                format!("expected one of {}", ConfigVersion::accepted()),
            )
        })?;
        let default_profile = Profile::default();
        let (index, profile) = self.profile(config, &default_profile)?;
        let base = format!("profiles[{index}]");
        if version.has_v122_plugins() {
            return Err(problem(
                base,
                format!(
                    "a {} profile runs kube-scheduler v1.22's plugin set, which Berth does not \
                     map onto a Policy; give the Policy it was made from with \
                     --policy-config-file (as a v1.22 deployment with a Policy does: the file's \
                     other settings still apply and its profiles are not used), or write the \
                     profile as kubescheduler.config.k8s.io/v1 (`berth convert` writes one from a \
                     Policy)",
                    version.api_version()
                ),
            ));
        }
        let mut warnings = Vec::new();
        let resolved = resolve(
            profile.plugins.as_ref(),
            &format!("{base}.plugins"),
            version,
        )?;
        let configs = plugin_args(profile, &base, &config.api_version)?;
        let predicates = self.predicates(&resolved, &configs, &base)?;
        let (priorities, hard_weight) =
            self.priorities(&resolved, &configs, &base, &mut warnings)?;
        check_fixed_points(&resolved, &base)?;
        let mut policy = json!({
            "kind": "Policy",
            "apiVersion": "v1",
            "predicates": predicates,
            "priorities": priorities,
        });
        if let Some(weight) = hard_weight {
            policy["hardPodAffinitySymmetricWeight"] = json!(weight);
        }
        if !config.extenders.is_empty() {
            policy["extenders"] = config
                .extenders
                .iter()
                .enumerate()
                .map(|(i, e)| extender(e, &format!("extenders[{i}]")))
                .collect::<Result<Value, Problem>>()?;
        }
        Ok((policy, warnings))
    }

    /// The profile Berth runs: the one named as Berth's scheduler name, else the only one.
    fn profile<'c>(
        &self,
        config: &'c KubeSchedulerConfiguration,
        default: &'c Profile,
    ) -> Result<(usize, &'c Profile), Problem> {
        let name_of = |p: &Profile| {
            p.scheduler_name
                .clone()
                .unwrap_or_else(|| DEFAULT_SCHEDULER_NAME.to_string())
        };
        if config.profiles.is_empty() {
            // Upstream's default: one default-scheduler profile with the default plugins.
            return match &self.scheduler_name {
                Some(name) if name != DEFAULT_SCHEDULER_NAME => Err(problem(
                    "profiles",
                    format!(
                        "is empty, so the only profile is {DEFAULT_SCHEDULER_NAME:?}, but Berth \
                         schedules the pods of {name:?}; add a profile with schedulerName: {name}"
                    ),
                )),
                _ => Ok((0, default)),
            };
        }
        let names: Vec<String> = config.profiles.iter().map(name_of).collect();
        match &self.scheduler_name {
            Some(name) => names
                .iter()
                .position(|n| n == name)
                .map(|i| (i, &config.profiles[i]))
                .ok_or_else(|| {
                    problem(
                        "profiles",
                        format!(
                            "no profile has schedulerName {name:?} (the scheduler name Berth \
                             runs as); the profiles are {names:?}: rename one or run Berth with \
                             --scheduler-name set to one of them"
                        ),
                    )
                }),
            None if config.profiles.len() == 1 => Ok((0, &config.profiles[0])),
            None => Err(problem(
                "profiles",
                format!(
                    "has {} profiles ({names:?}); Berth runs one policy: keep one profile here \
                     (berth run picks the one named by --scheduler-name)",
                    names.len()
                ),
            )),
        }
    }

    fn predicates(
        &self,
        resolved: &Resolved,
        configs: &Args,
        base: &str,
    ) -> Result<Vec<Value>, Problem> {
        let path = format!("{base}.plugins.filter");
        let filters = &resolved[&Point::Filter];
        for mandatory in [
            PredicateKind::CheckNodeUnschedulable,
            PredicateKind::PodToleratesNodeTaints,
        ] {
            let plugin = upstream::filter_plugins(&mandatory)[0];
            if !filters.contains_key(plugin) {
                return Err(problem(
                    &path,
                    format!(
                        "{plugin} is not enabled; a Policy always runs {} (a mandatory \
                         predicate), so Berth cannot run a profile without it",
                        berth_policy::predicate_name(&mandatory).unwrap_or_default()
                    ),
                ));
            }
        }
        let general = upstream::GENERAL_PREDICATES
            .iter()
            .all(|p| filters.contains_key(*p));
        let mut out = Vec::new();
        if general {
            out.push(
                json!({"name": berth_policy::predicate_name(&PredicateKind::GeneralPredicates)}),
            );
        }
        for plugin in filters.keys() {
            if general && upstream::GENERAL_PREDICATES.contains(&plugin.as_str()) {
                continue;
            }
            let kind = FILTER_KINDS
                .iter()
                .find(|k| upstream::filter_plugins(k) == [plugin.as_str()])
                .ok_or_else(|| problem(&path, unsupported(plugin, Point::Filter)))?;
            out.push(json!({"name": berth_policy::predicate_name(kind)}));
        }
        if let Some(affinity) = &configs.node_affinity {
            out.extend(added_affinity(affinity, filters, base, configs)?);
        }
        Ok(out)
    }

    fn priorities(
        &self,
        resolved: &Resolved,
        configs: &Args,
        base: &str,
        warnings: &mut Vec<String>,
    ) -> Result<(Vec<Value>, Option<i32>), Problem> {
        let path = format!("{base}.plugins.score");
        let mut out = Vec::new();
        let mut hard_weight = None;
        for (plugin, enabled) in &resolved[&Point::Score] {
            let weight = enabled.weight;
            let entry = |kind: &PriorityKind| json!({"name": berth_policy::priority_name(kind), "weight": weight});
            match plugin.as_str() {
                p if p == upstream::NODE_RESOURCES_FIT => {
                    out.push(resource_priority(configs, weight, base)?);
                }
                p if p == upstream::VOLUME_BINDING => {
                    if configs.volume_binding_shape {
                        return Err(problem(
                            configs.path(p),
                            "shape scores nodes by free storage capacity (the \
                             StorageCapacityScoring feature gate); a Policy has no such score: \
                             leave shape out",
                        ));
                    }
                    warnings.push(format!(
                        "{path}: VolumeBinding's score is 0 on every node without the \
                         StorageCapacityScoring feature gate (alpha, off in v1.36), so it \
                         changes no ranking; Berth leaves it out"
                    ));
                }
                _ => {
                    let kind = SCORE_KINDS
                        .iter()
                        .find(|k| upstream::score_plugin(k, self.gates) == Some(plugin.as_str()))
                        .ok_or_else(|| problem(&path, unsupported(plugin, Point::Score)))?;
                    let kind = match kind {
                        PriorityKind::SelectorSpread | PriorityKind::EvenPodsSpread => {
                            self.spread_kind(configs, base)?
                        }
                        PriorityKind::InterPodAffinity => {
                            hard_weight = configs.hard_pod_affinity_weight;
                            kind.clone()
                        }
                        other => other.clone(),
                    };
                    out.push(entry(&kind));
                }
            }
        }
        if !resolved[&Point::Score].contains_key(upstream::NODE_RESOURCES_FIT)
            && configs.scoring_strategy.is_some()
        {
            warnings.push(format!(
                "{}: scoringStrategy has no effect: NodeResourcesFit does not score in this \
                 profile",
                configs.path(upstream::NODE_RESOURCES_FIT)
            ));
        }
        Ok((out, hard_weight))
    }

    /// PodTopologySpread's score: with system defaulting SelectorSpreadPriority (served so by
    /// v1.22 with the DefaultPodTopologySpread gate), with list defaulting and no default
    /// constraints EvenPodsSpreadPriority.
    fn spread_kind(&self, configs: &Args, base: &str) -> Result<PriorityKind, Problem> {
        let spread = upstream::score_plugin(&PriorityKind::EvenPodsSpread, self.gates)
            .expect("EvenPodsSpreadPriority has a plugin");
        match configs.spread_defaulting.as_deref() {
            None | Some(args::SYSTEM_DEFAULTING) if self.gates.default_pod_topology_spread => {
                Ok(PriorityKind::SelectorSpread)
            }
            None | Some(args::SYSTEM_DEFAULTING) => Err(problem(
                format!("{base}.plugins.score"),
                format!(
                    "{spread} with defaultingType System (the default) is SelectorSpreadPriority \
                     only with the DefaultPodTopologySpread feature gate on; give \
                     defaultingType: List (EvenPodsSpreadPriority) or run without \
                     DefaultPodTopologySpread=false"
                ),
            )),
            Some(_) => Ok(PriorityKind::EvenPodsSpread),
        }
    }
}

/// Predicates that map to exactly one v1 filter plugin (the registry's mapping, read back).
const FILTER_KINDS: [PredicateKind; 12] = [
    PredicateKind::CheckNodeUnschedulable,
    PredicateKind::HostName,
    PredicateKind::PodFitsHostPorts,
    PredicateKind::MatchNodeSelector,
    PredicateKind::PodFitsResources,
    PredicateKind::NoDiskConflict,
    PredicateKind::PodToleratesNodeTaints,
    PredicateKind::MaxCSIVolumeCountPred,
    PredicateKind::CheckVolumeBinding,
    PredicateKind::NoVolumeZoneConflict,
    PredicateKind::EvenPodsSpread,
    PredicateKind::MatchInterPodAffinity,
];

/// Priorities whose v1 score plugin takes no arguments that change their kind (the resource
/// scorers are NodeResourcesFit's strategies, read from its args).
const SCORE_KINDS: [PriorityKind; 7] = [
    PriorityKind::BalancedResourceAllocation,
    PriorityKind::SelectorSpread,
    PriorityKind::EvenPodsSpread,
    PriorityKind::InterPodAffinity,
    PriorityKind::NodeAffinity,
    PriorityKind::TaintToleration,
    PriorityKind::ImageLocality,
];

/// What the error says about a plugin no predicate or priority maps to.
fn unsupported(plugin: &str, point: Point) -> String {
    match plugin {
        plugins::DYNAMIC_RESOURCES | plugins::NODE_DECLARED_FEATURES => format!(
            "{plugin} is enabled (v1.36's default plugins include it) but has no Policy \
             equivalent: Berth does not implement it; disable it with plugins.multiPoint.disabled: \
             [{{name: {plugin}}}]"
        ),
        _ => format!(
            "{plugin} at {point} has no Policy equivalent; Berth reads the plugins `berth convert` \
             writes: filters {}, scores {}",
            filter_plugin_names(),
            score_plugin_names()
        ),
    }
}

fn filter_plugin_names() -> String {
    FILTER_KINDS
        .iter()
        .map(|k| upstream::filter_plugins(k)[0])
        .collect::<Vec<_>>()
        .join(", ")
}

fn score_plugin_names() -> String {
    let mut names: Vec<&str> = SCORE_KINDS
        .iter()
        .filter_map(|k| upstream::score_plugin(k, FeatureGates::default()))
        .collect();
    names.push(upstream::NODE_RESOURCES_FIT);
    names.dedup();
    names.join(", ")
}

/// The plugins of each extension point after v1.36's merging and multiPoint expansion.
fn resolve(
    custom: Option<&Plugins>,
    path: &str,
    version: ConfigVersion,
) -> Result<Resolved, Problem> {
    let empty = Plugins::default();
    let custom = custom.unwrap_or(&empty);
    for point in Point::ALL {
        check_names(custom.at(point), &format!("{path}.{point}"), Some(point))?;
    }
    check_names(&custom.multi_point, &format!("{path}.multiPoint"), None)?;
    let defaults: Vec<Plugin> = plugins::DEFAULT_MULTI_POINT
        .iter()
        .filter(|(name, _)| {
            version == ConfigVersion::V1 || !plugins::ADDED_AFTER_V1BETA3.contains(name)
        })
        .map(|(name, weight)| Plugin {
            name: name.to_string(),
            weight: *weight,
        })
        .collect();
    let multi = merge(&defaults, &custom.multi_point);
    let mut resolved = Resolved::new();
    for point in Point::ALL {
        let set = custom.at(point);
        let mut here: BTreeMap<String, Enabled> = set
            .enabled
            .iter()
            .map(|p| (p.name.clone(), enabled(p.weight)))
            .collect();
        if !disables(set, "*") {
            for plugin in &multi {
                if plugins::implements(&plugin.name, point) && !disables(set, &plugin.name) {
                    // A plugin named at the point itself overrides its multiPoint entry.
                    here.entry(plugin.name.clone())
                        .or_insert(enabled(plugin.weight));
                }
            }
        }
        resolved.insert(point, here);
    }
    Ok(resolved)
}

fn enabled(weight: Option<i32>) -> Enabled {
    Enabled {
        weight: weight.filter(|w| *w != 0).unwrap_or(1),
    }
}

fn disables(set: &PluginSet, name: &str) -> bool {
    set.disabled.iter().any(|p| p.name == name)
}

/// Upstream's mergePluginSet: defaults not disabled (taking the file's weight when it names
/// them too), then the file's other plugins.
fn merge(defaults: &[Plugin], custom: &PluginSet) -> Vec<Plugin> {
    let mut out: Vec<Plugin> = Vec::new();
    if !disables(custom, "*") {
        for d in defaults {
            if disables(custom, &d.name) {
                continue;
            }
            out.push(
                custom
                    .enabled
                    .iter()
                    .find(|c| c.name == d.name)
                    .cloned()
                    .unwrap_or_else(|| d.clone()),
            );
        }
    }
    for c in &custom.enabled {
        if !out.iter().any(|o| o.name == c.name) {
            out.push(c.clone());
        }
    }
    out
}

/// Every name is a v1.36 plugin that implements the point, named once, with a weight only
/// where weights count.
fn check_names(set: &PluginSet, path: &str, point: Option<Point>) -> Result<(), Problem> {
    let mut seen = BTreeSet::new();
    for (i, p) in set.enabled.iter().enumerate() {
        let at = format!("{path}.enabled[{i}]");
        let Some(points) = plugins::points(&p.name) else {
            return Err(problem(
                format!("{at}.name"),
                format!(
                    "{:?} is not a kube-scheduler v1.36 plugin; known: {}",
                    p.name,
                    plugins::known_names()
                ),
            ));
        };
        if let Some(point) = point
            && !points.contains(&point)
        {
            return Err(problem(
                format!("{at}.name"),
                format!("{} does not implement {point}", p.name),
            ));
        }
        if !seen.insert(p.name.as_str()) {
            return Err(problem(
                format!("{at}.name"),
                format!("{} is enabled twice", p.name),
            ));
        }
        if p.weight.is_some_and(|w| w < 0) {
            return Err(problem(
                format!("{at}.weight"),
                "must not be negative".to_string(),
            ));
        }
    }
    for (i, p) in set.disabled.iter().enumerate() {
        if p.name != "*" && plugins::points(&p.name).is_none() {
            return Err(problem(
                format!("{path}.disabled[{i}].name"),
                format!(
                    "{:?} is not a kube-scheduler v1.36 plugin; known: * (all), {}",
                    p.name,
                    plugins::known_names()
                ),
            ));
        }
    }
    Ok(())
}

/// The points whose plugins are fixed by the Policy model, and the pre-points that must pair
/// with the filters and scores.
fn check_fixed_points(resolved: &Resolved, base: &str) -> Result<(), Problem> {
    let path = |point: Point| format!("{base}.plugins.{point}");
    let names =
        |point: Point| -> BTreeSet<&str> { resolved[&point].keys().map(String::as_str).collect() };
    let exactly = |point: Point, want: &[&str], why: &str| -> Result<(), Problem> {
        let have = names(point);
        let want: BTreeSet<&str> = want.iter().copied().collect();
        if have == want {
            return Ok(());
        }
        Err(problem(
            path(point),
            format!("enables {have:?}; Berth runs {want:?} here ({why})"),
        ))
    };
    exactly(
        Point::QueueSort,
        &[plugins::PRIORITY_SORT],
        "pods are taken by priority",
    )?;
    exactly(
        Point::PostFilter,
        &[plugins::DEFAULT_PREEMPTION],
        "a Policy always preempts",
    )?;
    exactly(
        Point::Bind,
        &[plugins::DEFAULT_BINDER],
        "binding extenders aside, Berth binds through pods/binding",
    )?;
    exactly(Point::Permit, &[], "a Policy has no permit step")?;
    exactly(Point::PostBind, &[], "a Policy has no post-bind step")?;
    let filters = names(Point::Filter);
    let volume = upstream::VOLUME_BINDING;
    let binding: &[&str] = if filters.contains(volume) {
        &[volume]
    } else {
        &[]
    };
    exactly(
        Point::Reserve,
        binding,
        "VolumeBinding reserves and pre-binds exactly when it filters",
    )?;
    exactly(
        Point::PreBind,
        binding,
        "VolumeBinding reserves and pre-binds exactly when it filters",
    )?;
    let pre_enqueue = names(Point::PreEnqueue);
    if !pre_enqueue.contains(plugins::SCHEDULING_GATES) {
        return Err(problem(
            path(Point::PreEnqueue),
            "SchedulingGates is not enabled; Berth always keeps pods with schedulingGates out \
             of scheduling, so it cannot run this profile as written",
        ));
    }
    if let Some(other) = pre_enqueue
        .iter()
        .find(|p| ![plugins::SCHEDULING_GATES, plugins::DEFAULT_PREEMPTION].contains(p))
    {
        return Err(problem(
            path(Point::PreEnqueue),
            unsupported(other, Point::PreEnqueue),
        ));
    }
    for (pre, main) in [
        (Point::PreFilter, Point::Filter),
        (Point::PreScore, Point::Score),
    ] {
        let mains = names(main);
        let want: BTreeSet<&str> = mains
            .iter()
            .copied()
            .filter(|p| plugins::implements(p, pre))
            .collect();
        let have = names(pre);
        if let Some(extra) = have.difference(&want).next() {
            return Err(problem(
                path(pre),
                format!(
                    "enables {extra}, which is not enabled at {main}; Berth maps {main} plugins (with their {pre} step) to the Policy"
                ),
            ));
        }
        if let Some(missing) = want.difference(&have).next() {
            return Err(problem(
                path(pre),
                format!(
                    "does not enable {missing}, whose {main} step needs it (kube-scheduler fails without it)"
                ),
            ));
        }
    }
    Ok(())
}

/// The plugin arguments Berth reads, decoded.
#[derive(Default)]
struct Args {
    /// Plugin name -> path of its pluginConfig entry.
    paths: BTreeMap<String, String>,
    scoring_strategy: Option<ScoringStrategy>,
    node_affinity: Option<NodeAffinityArgs>,
    spread_defaulting: Option<String>,
    hard_pod_affinity_weight: Option<i32>,
    volume_binding_shape: bool,
}

impl Args {
    fn path(&self, plugin: &str) -> String {
        self.paths.get(plugin).cloned().unwrap_or_default()
    }
}

fn plugin_args(profile: &Profile, base: &str, version: &str) -> Result<Args, Problem> {
    let mut out = Args::default();
    for (i, config) in profile.plugin_config.iter().enumerate() {
        let path = format!("{base}.pluginConfig[{i}].args");
        if out
            .paths
            .insert(config.name.clone(), path.clone())
            .is_some()
        {
            return Err(problem(
                format!("{base}.pluginConfig[{i}].name"),
                format!("{} has a second pluginConfig entry", config.name),
            ));
        }
        let name = config.name.as_str();
        match name {
            "NodeResourcesFit" => {
                let a: NodeResourcesFitArgs = decode_args(config, &path)?;
                type_meta(&a.api_version, &a.kind, name, &path, version)?;
                if !a.ignored_resources.is_empty() || !a.ignored_resource_groups.is_empty() {
                    return Err(problem(
                        &path,
                        "ignoredResources and ignoredResourceGroups have no Policy equivalent; \
                         Berth's resource fit skips only the extenders' managedResources with \
                         ignoredByScheduler",
                    ));
                }
                out.scoring_strategy = a.scoring_strategy;
            }
            "NodeAffinity" => {
                let a: NodeAffinityArgs = decode_args(config, &path)?;
                type_meta(&a.api_version, &a.kind, name, &path, version)?;
                out.node_affinity = Some(a);
            }
            "PodTopologySpread" => {
                let a: PodTopologySpreadArgs = decode_args(config, &path)?;
                type_meta(&a.api_version, &a.kind, name, &path, version)?;
                if !a.default_constraints.is_empty() {
                    return Err(problem(
                        format!("{path}.defaultConstraints"),
                        "has no Policy equivalent; a Policy spreads with the system default \
                         constraints (SelectorSpreadPriority) or the pods' own \
                         (EvenPodsSpreadPriority): leave it out",
                    ));
                }
                match a.defaulting_type.as_deref() {
                    None | Some(args::SYSTEM_DEFAULTING) | Some(args::LIST_DEFAULTING) => {}
                    Some(other) => {
                        return Err(problem(
                            format!("{path}.defaultingType"),
                            format!("is {other:?}; expected System or List"),
                        ));
                    }
                }
                out.spread_defaulting = a.defaulting_type;
            }
            "InterPodAffinity" => {
                let a: InterPodAffinityArgs = decode_args(config, &path)?;
                type_meta(&a.api_version, &a.kind, name, &path, version)?;
                if a.ignore_preferred_terms_of_existing_pods {
                    return Err(problem(
                        format!("{path}.ignorePreferredTermsOfExistingPods"),
                        "has no Policy equivalent (v1.22 always scores running pods' preferred \
                         terms); leave it out or false",
                    ));
                }
                match a.hard_pod_affinity_weight {
                    None => {}
                    Some(w @ 1..=100) => out.hard_pod_affinity_weight = Some(w),
                    Some(w) => {
                        return Err(problem(
                            format!("{path}.hardPodAffinityWeight"),
                            format!(
                                "is {w}; a Policy's hardPodAffinitySymmetricWeight takes 1..=100 \
                                 (0 there means the default 1)"
                            ),
                        ));
                    }
                }
            }
            "NodeResourcesBalancedAllocation" => {
                let a: BalancedAllocationArgs = decode_args(config, &path)?;
                type_meta(&a.api_version, &a.kind, name, &path, version)?;
                if !a.resources.is_empty() && !is_cpu_and_memory(&a.resources) {
                    return Err(problem(
                        format!("{path}.resources"),
                        "BalancedResourceAllocation balances cpu and memory (weight 1 each) only; \
                         leave resources out or list exactly those",
                    ));
                }
            }
            "VolumeBinding" => {
                let a: VolumeBindingArgs = decode_args(config, &path)?;
                type_meta(&a.api_version, &a.kind, name, &path, version)?;
                if a.bind_timeout_seconds.is_some_and(|t| t != 600) {
                    return Err(problem(
                        format!("{path}.bindTimeoutSeconds"),
                        "Berth waits for volume binding as v1.22's default (600 seconds); leave \
                         it out or 600",
                    ));
                }
                out.volume_binding_shape = !a.shape.is_empty();
            }
            _ => {
                if !only_type_meta(&config.args) {
                    return Err(problem(
                        &path,
                        format!(
                            "Berth reads the args of NodeResourcesFit, NodeAffinity, \
                             PodTopologySpread, InterPodAffinity, NodeResourcesBalancedAllocation \
                             and VolumeBinding; {name}'s have no Policy equivalent: leave them out"
                        ),
                    ));
                }
            }
        }
    }
    Ok(out)
}

fn decode_args<T: DeserializeOwned>(
    config: &crate::types::PluginConfig,
    path: &str,
) -> Result<T, Problem> {
    let value = match &config.args {
        Value::Null => json!({}),
        other => other.clone(),
    };
    serde_path_to_error::deserialize(value).map_err(|e| {
        let inner = e.path().to_string();
        let at = if inner == "." {
            path.to_string()
        } else {
            format!("{path}.{inner}")
        };
        problem(at, e.into_inner().to_string())
    })
}

fn type_meta(
    api_version: &Option<String>,
    kind: &Option<String>,
    plugin: &str,
    path: &str,
    version: &str,
) -> Result<(), Problem> {
    if let Some(v) = api_version.as_deref().filter(|v| *v != version) {
        return Err(problem(
            format!("{path}.apiVersion"),
            format!("is {v:?}; expected {version} (the file's) or nothing"),
        ));
    }
    let want = format!("{plugin}Args");
    if let Some(k) = kind.as_deref().filter(|k| **k != want) {
        return Err(problem(
            format!("{path}.kind"),
            format!("is {k:?}; expected {want} or nothing"),
        ));
    }
    Ok(())
}

fn only_type_meta(args: &Value) -> bool {
    match args {
        Value::Null => true,
        Value::Object(map) => map.keys().all(|k| k == "apiVersion" || k == "kind"),
        _ => false,
    }
}

fn is_cpu_and_memory(resources: &[ResourceSpec]) -> bool {
    let mut sorted = resources.to_vec();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    sorted == args::cpu_and_memory()
}

/// NodeResourcesFit's score as the Policy priority its strategy is.
fn resource_priority(configs: &Args, weight: i32, base: &str) -> Result<Value, Problem> {
    let fit = upstream::NODE_RESOURCES_FIT;
    let path = match configs.paths.get(fit) {
        Some(p) => format!("{p}.scoringStrategy"),
        None => format!("{base}.pluginConfig"),
    };
    let strategy = configs.scoring_strategy.clone().unwrap_or(ScoringStrategy {
        kind: None,
        resources: Vec::new(),
        requested_to_capacity_ratio: None,
    });
    let resources = if strategy.resources.is_empty() {
        args::cpu_and_memory()
    } else {
        strategy.resources.clone()
    };
    let simple = |kind: &PriorityKind| -> Result<Value, Problem> {
        if !is_cpu_and_memory(&resources) {
            return Err(problem(
                format!("{path}.resources"),
                format!(
                    "{} scores cpu and memory (weight 1 each) only; list exactly those, or use \
                     type RequestedToCapacityRatio for other resources",
                    berth_policy::priority_name(kind).unwrap_or_default()
                ),
            ));
        }
        if strategy.requested_to_capacity_ratio.is_some() {
            return Err(problem(
                format!("{path}.requestedToCapacityRatio"),
                "is read only with type RequestedToCapacityRatio",
            ));
        }
        Ok(json!({"name": berth_policy::priority_name(kind), "weight": weight}))
    };
    match strategy.kind.as_deref() {
        None | Some(args::LEAST_ALLOCATED) => simple(&PriorityKind::LeastRequested),
        Some(args::MOST_ALLOCATED) => simple(&PriorityKind::MostRequested),
        Some(args::REQUESTED_TO_CAPACITY_RATIO) => {
            let shape = strategy
                .requested_to_capacity_ratio
                .as_ref()
                .map(|r| r.shape.clone())
                .unwrap_or_default();
            if shape.is_empty() {
                return Err(problem(
                    format!("{path}.requestedToCapacityRatio.shape"),
                    "needs at least one point",
                ));
            }
            Ok(json!({
                "name": berth_policy::priority_name(&PriorityKind::RequestedToCapacityRatio { shape: Vec::new(), resources: Vec::new() }),
                "weight": weight,
                "argument": {"requestedToCapacityRatioArguments": {
                    "shape": shape,
                    "resources": resources,
                }},
            }))
        }
        Some(other) => Err(problem(
            format!("{path}.type"),
            format!(
                "is {other:?}; expected {}, {} or {}",
                args::LEAST_ALLOCATED,
                args::MOST_ALLOCATED,
                args::REQUESTED_TO_CAPACITY_RATIO
            ),
        )),
    }
}

/// NodeAffinity's addedAffinity as labelsPresence entries: one required term of Exists and
/// DoesNotExist expressions, which is what v1.22's NodeLabel filter checked.
fn added_affinity(
    args: &NodeAffinityArgs,
    filters: &BTreeMap<String, Enabled>,
    base: &str,
    configs: &Args,
) -> Result<Vec<Value>, Problem> {
    let path = format!("{}.addedAffinity", configs.path(upstream::NODE_AFFINITY));
    let Some(added) = &args.added_affinity else {
        return Ok(Vec::new());
    };
    if !added
        .preferred_during_scheduling_ignored_during_execution
        .is_empty()
    {
        return Err(problem(
            format!("{path}.preferredDuringSchedulingIgnoredDuringExecution"),
            "has no Policy equivalent (v1.22's labelPreference scored without normalizing); \
             Berth reads requiredDuringSchedulingIgnoredDuringExecution with Exists and \
             DoesNotExist expressions (labelsPresence)",
        ));
    }
    let Some(required) = &added.required_during_scheduling_ignored_during_execution else {
        return Ok(Vec::new());
    };
    let path = format!("{path}.requiredDuringSchedulingIgnoredDuringExecution");
    if !filters.contains_key(upstream::NODE_AFFINITY) {
        return Err(problem(
            path,
            format!(
                "has no effect: the NodeAffinity filter is not enabled in {base}; enable it \
                 (it also checks pods' own node selectors) or leave addedAffinity out"
            ),
        ));
    }
    let [term] = required.node_selector_terms.as_slice() else {
        return Err(problem(
            format!("{path}.nodeSelectorTerms"),
            format!(
                "has {} terms; Berth reads one term (labelsPresence entries are ANDed, terms \
                 are ORed)",
                required.node_selector_terms.len()
            ),
        ));
    };
    let term_path = format!("{path}.nodeSelectorTerms[0]");
    if !term.match_fields.is_empty() {
        return Err(problem(
            format!("{term_path}.matchFields"),
            "has no Policy equivalent; Berth reads matchExpressions with Exists and DoesNotExist",
        ));
    }
    let (mut present, mut absent) = (Vec::new(), Vec::new());
    for (i, e) in term.match_expressions.iter().enumerate() {
        let side = match e.operator.as_str() {
            args::EXISTS if e.values.is_empty() => &mut present,
            args::DOES_NOT_EXIST if e.values.is_empty() => &mut absent,
            _ => {
                return Err(problem(
                    format!("{term_path}.matchExpressions[{i}]"),
                    format!(
                        "operator {:?} with {} values has no Policy equivalent; Berth reads \
                         Exists and DoesNotExist without values (labelsPresence)",
                        e.operator,
                        e.values.len()
                    ),
                ));
            }
        };
        side.push(e.key.clone());
    }
    let mut out = Vec::new();
    for (name, labels, presence) in [
        (LABELS_PRESENT_ENTRY, present, true),
        (LABELS_ABSENT_ENTRY, absent, false),
    ] {
        if !labels.is_empty() {
            out.push(json!({"name": name, "argument": {"labelsPresence": {
                "labels": labels, "presence": presence,
            }}}));
        }
    }
    Ok(out)
}

/// An extender in the Policy's spelling.
fn extender(e: &Extender, path: &str) -> Result<Value, Problem> {
    let timeout = match &e.http_timeout {
        Some(t) => crate::goduration::parse(t)
            .map_err(|m| problem(format!("{path}.httpTimeout"), m))?
            .as_nanos(),
        None => 0,
    };
    let timeout = i64::try_from(timeout)
        .map_err(|_| problem(format!("{path}.httpTimeout"), "is too long"))?;
    let mut out = json!({
        "urlPrefix": e.url_prefix,
        "weight": e.weight,
        "enableHttps": e.enable_https,
        "httpTimeout": timeout,
        "nodeCacheCapable": e.node_cache_capable,
        "ignorable": e.ignorable,
        "managedResources": e.managed_resources.iter().map(|m| json!({
            "name": m.name, "ignoredByScheduler": m.ignored_by_scheduler,
        })).collect::<Vec<_>>(),
    });
    for (key, verb) in [
        ("filterVerb", &e.filter_verb),
        ("preemptVerb", &e.preempt_verb),
        ("prioritizeVerb", &e.prioritize_verb),
        ("bindVerb", &e.bind_verb),
    ] {
        if !verb.is_empty() {
            out[key] = json!(verb);
        }
    }
    if let Some(tls) = &e.tls_config {
        out["tlsConfig"] = serde_json::to_value(tls).expect("TLS config serializes");
    }
    Ok(out)
}
