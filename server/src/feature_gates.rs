//! `--feature-gates`: the gates kube-apiserver v1.36 knows, and the user's settings checked
//! against their lifecycle as upstream checks them.
//!
//! The gate table is `server/data/feature_gates.tsv`, generated from upstream's published
//! lists by `server/data/feature_gates_regen.py` (never edited by hand). Each gate carries the
//! spec in force at v1.36: default, stage, and whether it is locked to its default.
//!
//! Rules (measured on the v1.36.2 binary; messages are upstream's texts):
//! - a part without `=` or with a value Go's `ParseBool` refuses fails the whole flag;
//! - an unknown name refuses start (`unrecognized feature gate: X`), and stops the checks;
//! - setting a locked gate to the other value refuses start; every such gate is reported;
//! - setting a GA or deprecated gate is accepted with a warning;
//! - enabling an alpha gate (`AllAlpha=true` counts, and itself is alpha) is accepted with a
//!   warning naming every enabled alpha gate;
//! - once every setting is accepted, an enabled gate whose dependency is off refuses start;
//! - `AllAlpha`/`AllBeta` set every gate of that stage the user did not set explicitly.
//!
//! Pure: no I/O; the caller logs the warnings and reports the error.

use std::collections::BTreeMap;
use std::sync::OnceLock;

/// A gate's stage at v1.36.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Alpha,
    Beta,
    Ga,
    Deprecated,
}

/// A gate's lifecycle at v1.36.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    pub default: bool,
    pub stage: Stage,
    /// Locked to `default`: the other value refuses start.
    pub locked: bool,
    /// Gates that must be on while this one is.
    pub depends_on: Vec<&'static str>,
}

const TABLE: &str = include_str!("../data/feature_gates.tsv");

/// Gates upstream registers in code rather than in its published lists: the two that switch
/// every alpha or beta gate the user did not name.
const ALL_ALPHA: &str = "AllAlpha";
const ALL_BETA: &str = "AllBeta";

/// Gates upstream removed that the documents still describe as settable (spec README, "Where
/// the documents and current upstream disagree"): keel accepts them, as deprecated gates, so
/// setting one logs the deprecation warning instead of refusing start.
const DOCUMENTED_REMOVED: [&str; 2] = ["APIListChunking", "ServerSideFieldValidation"];

/// Every gate keel accepts in `--feature-gates`, by name.
pub fn known() -> &'static BTreeMap<&'static str, Spec> {
    static KNOWN: OnceLock<BTreeMap<&'static str, Spec>> = OnceLock::new();
    KNOWN.get_or_init(|| {
        let mut gates = parse_table(TABLE);
        let special = [(ALL_ALPHA, Stage::Alpha), (ALL_BETA, Stage::Beta)];
        for (name, stage) in special {
            let spec = Spec {
                default: false,
                stage,
                locked: false,
                depends_on: Vec::new(),
            };
            assert!(gates.insert(name, spec).is_none(), "{name} is in the table");
        }
        for name in DOCUMENTED_REMOVED {
            let spec = Spec {
                default: true,
                stage: Stage::Deprecated,
                locked: false,
                depends_on: Vec::new(),
            };
            assert!(gates.insert(name, spec).is_none(), "{name} is in the table");
        }
        gates
    })
}

/// The table is generated and checked in: a malformed line is a build mistake, so it panics
/// (the unit tests parse it).
fn parse_table(text: &'static str) -> BTreeMap<&'static str, Spec> {
    let flag = |s: &str, line: &str| match s {
        "true" => true,
        "false" => false,
        _ => panic!("feature_gates.tsv: bad boolean in {line:?}"),
    };
    let mut gates = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let fields: Vec<&str> = line.split('\t').collect();
        let [name, default, stage, locked, depends_on] = fields[..] else {
            panic!("feature_gates.tsv: expected 5 fields in {line:?}");
        };
        let stage = match stage {
            "ALPHA" => Stage::Alpha,
            "BETA" => Stage::Beta,
            "GA" => Stage::Ga,
            "DEPRECATED" => Stage::Deprecated,
            _ => panic!("feature_gates.tsv: bad stage in {line:?}"),
        };
        let spec = Spec {
            default: flag(default, line),
            stage,
            locked: flag(locked, line),
            depends_on: match depends_on {
                "-" => Vec::new(),
                list => list.split(',').collect(),
            },
        };
        assert!(gates.insert(name, spec).is_none(), "duplicate gate {name}");
    }
    for (name, spec) in &gates {
        for dep in &spec.depends_on {
            assert!(gates.contains_key(dep), "{name} depends on unknown {dep}");
        }
    }
    gates
}

/// The gates as the user set them; every other gate has its default.
#[derive(Clone, Debug, Default)]
pub struct FeatureGates {
    /// Explicit settings, by gate name (the last of repeated names wins, as upstream's map).
    set: BTreeMap<&'static str, bool>,
}

/// A `--feature-gates` value that passed: the gates, and the warnings to log at start.
#[derive(Debug)]
pub struct Parsed {
    pub gates: FeatureGates,
    pub warnings: Vec<String>,
}

impl FeatureGates {
    /// Parses and checks `--feature-gates`. The error is upstream's text: one message, or
    /// several as `[a, b]`.
    pub fn parse(flag: &str) -> Result<Parsed, String> {
        let pairs = parse_pairs(flag)?;
        let known = known();
        let mut set: BTreeMap<&'static str, bool> = BTreeMap::new();
        let mut errors = Vec::new();
        let mut warnings = Vec::new();
        for (name, value) in pairs {
            let Some((&name, spec)) = known.get_key_value(name.as_str()) else {
                // Upstream stops at the first unknown name.
                errors.push(format!("unrecognized feature gate: {name}"));
                break;
            };
            if spec.locked && spec.default != value {
                errors.push(format!(
                    "cannot set feature gate {name} to {value}, feature is locked to {}",
                    spec.default
                ));
                continue;
            }
            set.insert(name, value);
            let what = match spec.stage {
                Stage::Deprecated => "deprecated",
                Stage::Ga => "GA",
                Stage::Alpha | Stage::Beta => continue,
            };
            warnings.push(format!(
                "\"Warning: setting {what} feature gate. It will be removed in a future release.\" \
                 featureGate=\"{name}\" value={value}"
            ));
        }
        join_errors(errors)?;
        let gates = FeatureGates { set };
        gates.check_dependencies()?;
        let alpha = gates.enabled_in(Stage::Alpha);
        if !alpha.is_empty() {
            warnings.push(format!(
                "component has alpha features enabled in emulated version, this is unsupported: \
                 features=[{}]",
                alpha.join(" ")
            ));
        }
        Ok(Parsed { gates, warnings })
    }

    /// Whether gate `name` is on. `name` must be a known gate: asking for another is a
    /// programmer error.
    pub fn enabled(&self, name: &str) -> bool {
        let Some((&name, spec)) = known().get_key_value(name) else {
            panic!("feature gate {name:?} is not known");
        };
        if let Some(&value) = self.set.get(name) {
            return value;
        }
        let all = match spec.stage {
            Stage::Alpha => self.set.get(ALL_ALPHA),
            Stage::Beta => self.set.get(ALL_BETA),
            Stage::Ga | Stage::Deprecated => None,
        };
        all.copied().unwrap_or(spec.default)
    }

    /// Every enabled gate's dependencies must be enabled too (upstream checks this only once
    /// every setting was accepted).
    fn check_dependencies(&self) -> Result<(), String> {
        let errors: Vec<String> = known()
            .iter()
            .filter(|(name, spec)| !spec.depends_on.is_empty() && self.enabled(name))
            .filter_map(|(name, spec)| {
                let off: Vec<&str> = spec
                    .depends_on
                    .iter()
                    .copied()
                    .filter(|dep| !self.enabled(dep))
                    .collect();
                (!off.is_empty()).then(|| {
                    format!(
                        "{name} is enabled, but depends on features that are disabled: [{}]",
                        off.join(" ")
                    )
                })
            })
            .collect();
        join_errors(errors)
    }

    /// The enabled gates of one stage, by name.
    fn enabled_in(&self, stage: Stage) -> Vec<&'static str> {
        known()
            .iter()
            .filter(|(name, spec)| spec.stage == stage && self.enabled(name))
            .map(|(&name, _)| name)
            .collect()
    }
}

/// Several errors read as upstream's aggregate: one alone, several as `[a, b]`.
fn join_errors(mut errors: Vec<String>) -> Result<(), String> {
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.remove(0)),
        _ => Err(format!("[{}]", errors.join(", "))),
    }
}

/// Splits `Name=bool,...` (spaces around parts, names and values ignored; empty parts skipped).
/// Booleans are those Go's `strconv.ParseBool` takes, and its error text is kept.
fn parse_pairs(flag: &str) -> Result<Vec<(String, bool)>, String> {
    let mut pairs = Vec::new();
    for part in flag.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((name, value)) = part.split_once('=') else {
            return Err(format!("missing bool value for {part}"));
        };
        let (name, value) = (name.trim(), value.trim());
        let value = match value {
            "1" | "t" | "T" | "TRUE" | "true" | "True" => true,
            "0" | "f" | "F" | "FALSE" | "false" | "False" => false,
            _ => {
                return Err(format!(
                    "invalid value of {name}={value}, err: strconv.ParseBool: parsing \"{value}\": \
                     invalid syntax"
                ))
            }
        };
        pairs.push((name.to_string(), value));
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(flag: &str) -> String {
        FeatureGates::parse(flag).unwrap_err()
    }

    fn warnings(flag: &str) -> Vec<String> {
        FeatureGates::parse(flag).unwrap().warnings
    }

    /// The table parses, and holds what the v1.36.2 binary showed for a few gates.
    #[test]
    fn table_matches_upstream_samples() {
        let k = known();
        assert!(k.len() > 200, "{} gates", k.len());
        let spec = |default, stage, locked| Spec {
            default,
            stage,
            locked,
            depends_on: Vec::new(),
        };
        let want = [
            ("AnyVolumeDataSource", spec(true, Stage::Ga, true)),
            ("AllowDNSOnlyNodeCSR", spec(false, Stage::Deprecated, false)),
            ("APIServingWithRoutine", spec(false, Stage::Alpha, false)),
            ("APIResponseCompression", spec(true, Stage::Beta, false)),
            // Client-go gate, absent from the published yaml.
            ("ClientsAllowCBOR", spec(false, Stage::Alpha, false)),
            // The yaml's Go identifier is CPUCFSQuotaPeriod.
            ("CustomCPUCFSQuotaPeriod", spec(true, Stage::Ga, false)),
        ];
        for (name, spec) in want {
            assert_eq!(k.get(name), Some(&spec), "{name}");
        }
        assert!(!k.contains_key("CPUCFSQuotaPeriod"));
        assert_eq!(
            k["DRAWorkloadResourceClaims"].depends_on,
            ["DynamicResourceAllocation", "GenericWorkload"]
        );
        assert!(
            !k.contains_key("RouteExternalCertificate"),
            "OpenShift's own gate"
        );
    }

    /// Refusals, with the texts kube-apiserver v1.36 gives (`"command failed" err="..."`).
    #[test]
    fn refusals_use_upstream_text() {
        let cases = [
            ("NoSuchGate=true", "unrecognized feature gate: NoSuchGate"),
            (
                "AnyVolumeDataSource=false",
                "cannot set feature gate AnyVolumeDataSource to false, feature is locked to true",
            ),
            (
                "AnyVolumeDataSource=false,CRDValidationRatcheting=false",
                "[cannot set feature gate AnyVolumeDataSource to false, feature is locked to true, \
                 cannot set feature gate CRDValidationRatcheting to false, feature is locked to true]",
            ),
            // The first unknown name ends the checks, keeping what was found before it.
            (
                "AnyVolumeDataSource=false,Nope=true,Later=true",
                "[cannot set feature gate AnyVolumeDataSource to false, feature is locked to true, \
                 unrecognized feature gate: Nope]",
            ),
            (
                "Foo=maybe",
                "invalid value of Foo=maybe, err: strconv.ParseBool: parsing \"maybe\": invalid syntax",
            ),
            ("Foo", "missing bool value for Foo"),
            (
                "GracefulNodeShutdown=false",
                "[GracefulNodeShutdownBasedOnPodPriority is enabled, but depends on features that \
                 are disabled: [GracefulNodeShutdown], WindowsGracefulNodeShutdown is enabled, but \
                 depends on features that are disabled: [GracefulNodeShutdown]]",
            ),
            // Form is checked before names.
            ("NoSuchGate=true,Foo", "missing bool value for Foo"),
        ];
        for (flag, want) in cases {
            assert_eq!(err(flag), want, "{flag}");
        }
    }

    #[test]
    fn warnings_use_upstream_text() {
        assert_eq!(warnings(""), Vec::<String>::new());
        assert_eq!(
            warnings("APIResponseCompression=false"),
            Vec::<String>::new()
        );
        assert_eq!(
            warnings("AnyVolumeDataSource=true"),
            [
                "\"Warning: setting GA feature gate. It will be removed in a future release.\" \
              featureGate=\"AnyVolumeDataSource\" value=true"
            ]
        );
        assert_eq!(
            warnings("AllowDNSOnlyNodeCSR=true"),
            [
                "\"Warning: setting deprecated feature gate. It will be removed in a future \
              release.\" featureGate=\"AllowDNSOnlyNodeCSR\" value=true"
            ]
        );
        assert_eq!(
            warnings("APIServingWithRoutine=true"),
            [
                "component has alpha features enabled in emulated version, this is unsupported: \
              features=[APIServingWithRoutine]"
            ]
        );
        // Disabling an alpha gate, or AllBeta, warns of nothing.
        assert!(warnings("APIServingWithRoutine=false,AllBeta=false").is_empty());
    }

    #[test]
    fn all_alpha_and_all_beta_switch_the_unnamed_gates() {
        let g = FeatureGates::parse("AllAlpha=true,ClientsPreferCBOR=false").unwrap();
        assert!(g.gates.enabled("APIServingWithRoutine"));
        assert!(g.gates.enabled(ALL_ALPHA));
        assert!(
            !g.gates.enabled("ClientsPreferCBOR"),
            "explicit setting wins"
        );
        assert!(!g.gates.enabled(ALL_BETA));
        let alpha = g.warnings.last().unwrap();
        assert!(
            alpha.contains(" AllAlpha ") || alpha.contains("[AllAlpha "),
            "{alpha}"
        );
        assert!(!alpha.contains("ClientsPreferCBOR"), "{alpha}");

        let g = FeatureGates::parse("AllBeta=false").unwrap().gates;
        assert!(!g.enabled("APIResponseCompression"));
        assert!(g.enabled("AnyVolumeDataSource"), "GA gates are not beta");
        assert!(!g.enabled("APIServingWithRoutine"));
    }

    #[test]
    fn enabled_defaults_and_settings() {
        let g = FeatureGates::parse(" APIResponseCompression = F , ClientsAllowCBOR=1 ")
            .unwrap()
            .gates;
        assert!(!g.enabled("APIResponseCompression"));
        assert!(g.enabled("ClientsAllowCBOR"));
        assert!(g.enabled("WatchListClient"), "beta, on by default");
        assert!(!g.enabled("APIServingWithRoutine"), "alpha, off by default");
        // Repeated names: the last wins.
        let g = FeatureGates::parse("ClientsAllowCBOR=true,ClientsAllowCBOR=false").unwrap();
        assert!(!g.gates.enabled("ClientsAllowCBOR"));
    }

    /// The documents keep two gates upstream removed: accepted, with the deprecation warning.
    #[test]
    fn documented_removed_gates_are_accepted() {
        let g =
            FeatureGates::parse("APIListChunking=false,ServerSideFieldValidation=false").unwrap();
        assert!(!g.gates.enabled("APIListChunking"));
        assert!(!g.gates.enabled("ServerSideFieldValidation"));
        assert_eq!(g.warnings.len(), 2);
        assert!(g.warnings[0].contains("setting deprecated feature gate"));
        assert!(FeatureGates::default().enabled("APIListChunking"));
    }

    #[test]
    #[should_panic(expected = "not known")]
    fn asking_for_an_unknown_gate_is_a_bug() {
        FeatureGates::default().enabled("NoSuchGate");
    }
}
