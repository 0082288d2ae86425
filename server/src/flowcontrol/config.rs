//! The flow-control configuration: FlowSchemas and PriorityLevelConfigurations parsed from
//! their stored `flowcontrol.apiserver.k8s.io/v1` JSON, with upstream's defaults, and the
//! seats each priority level gets out of the server's concurrency limit.
//!
//! Seats (upstream's "concurrency limits"): the server's limit `SCL`
//! (`--max-requests-inflight` + `--max-mutating-requests-inflight`) is shared among the
//! levels in proportion to `nominalConcurrencyShares`:
//! `NominalCL(l) = ceil(SCL * NCS(l) / Σ NCS)`, the sum over every level (exempt ones
//! included, whose shares default to 0). Of those, `LendableCL = round(NominalCL *
//! lendablePercent / 100)` may be used by other levels while idle, and a level may borrow at
//! most `round(NominalCL * borrowingLimitPercent / 100)` (no limit when unset).
//!
//! keel is thread-per-core: each core owns `ceil(NominalCL / cores)` (at least 1) of every
//! level's seats and has its own queues; see `super` for why.

use keel_api::jsonmap::JsonPointer;
use serde_json::Value;

/// What a level does with requests beyond its seats.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LimitResponse {
    /// Refuse at once (429).
    Reject,
    /// Queue them, fairly, up to the lengths given.
    Queue {
        queues: usize,
        hand_size: usize,
        queue_length_limit: usize,
    },
}

/// A priority level, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Level {
    pub name: String,
    pub uid: String,
    /// `type: Exempt`: never queued nor rejected.
    pub exempt: bool,
    pub nominal_shares: u64,
    pub lendable_percent: u64,
    /// `None`: no bound on borrowing.
    pub borrowing_limit_percent: Option<u64>,
    pub limit_response: LimitResponse,
}

/// How a schema tells flows apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distinguisher {
    None,
    ByUser,
    ByNamespace,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Subject {
    User(String),
    Group(String),
    ServiceAccount { namespace: String, name: String },
}

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ResourceRule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub cluster_scope: bool,
    pub namespaces: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct NonResourceRule {
    pub verbs: Vec<String>,
    pub urls: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Rule {
    pub subjects: Vec<Subject>,
    pub resource_rules: Vec<ResourceRule>,
    pub non_resource_rules: Vec<NonResourceRule>,
}

/// A flow schema, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schema {
    pub name: String,
    pub uid: String,
    pub level: String,
    pub matching_precedence: i64,
    pub distinguisher: Distinguisher,
    pub rules: Vec<Rule>,
}

/// Upstream's defaults (`SetDefaults_*` of flowcontrol v1).
pub const MATCHING_PRECEDENCE_DEFAULT: i64 = 1000;
pub const NOMINAL_SHARES_DEFAULT: u64 = 30;
pub const QUEUES_DEFAULT: usize = 64;
pub const HAND_SIZE_DEFAULT: usize = 8;
pub const QUEUE_LENGTH_LIMIT_DEFAULT: usize = 50;

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn meta(v: &Value, key: &str) -> String {
    v.at(&format!("/metadata/{key}"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

fn num(v: &Value, ptr: &str) -> Option<u64> {
    v.at(ptr).and_then(Value::as_u64)
}

/// Parses a stored PriorityLevelConfiguration; `None` if it has no name or an unknown type.
pub fn parse_level(v: &Value) -> Option<Level> {
    let name = meta(v, "name");
    if name.is_empty() {
        return None;
    }
    let uid = meta(v, "uid");
    let spec = v.get("spec")?;
    match spec.get("type").and_then(Value::as_str)? {
        "Exempt" => Some(Level {
            name,
            uid,
            exempt: true,
            nominal_shares: num(spec, "/exempt/nominalConcurrencyShares").unwrap_or(0),
            lendable_percent: num(spec, "/exempt/lendablePercent").unwrap_or(0).min(100),
            borrowing_limit_percent: Some(0),
            limit_response: LimitResponse::Reject,
        }),
        "Limited" => {
            let l = spec.get("limited").cloned().unwrap_or(Value::Null);
            let response = match l.at("/limitResponse/type").and_then(Value::as_str) {
                Some("Queue") => {
                    let queues = num(&l, "/limitResponse/queuing/queues")
                        .map_or(QUEUES_DEFAULT, |n| n as usize)
                        .max(1);
                    LimitResponse::Queue {
                        queues,
                        hand_size: num(&l, "/limitResponse/queuing/handSize")
                            .map_or(HAND_SIZE_DEFAULT, |n| n as usize)
                            .clamp(1, queues.min(super::queueset::HAND_SIZE_MAX)),
                        queue_length_limit: num(&l, "/limitResponse/queuing/queueLengthLimit")
                            .map_or(QUEUE_LENGTH_LIMIT_DEFAULT, |n| n as usize)
                            .max(1),
                    }
                }
                _ => LimitResponse::Reject,
            };
            Some(Level {
                name,
                uid,
                exempt: false,
                nominal_shares: num(&l, "/nominalConcurrencyShares")
                    .unwrap_or(NOMINAL_SHARES_DEFAULT),
                lendable_percent: num(&l, "/lendablePercent").unwrap_or(0).min(100),
                borrowing_limit_percent: num(&l, "/borrowingLimitPercent"),
                limit_response: response,
            })
        }
        _ => None,
    }
}

fn parse_subject(s: &Value) -> Option<Subject> {
    match s.get("kind").and_then(Value::as_str)? {
        "User" => Some(Subject::User(s.at("/user/name")?.as_str()?.into())),
        "Group" => Some(Subject::Group(s.at("/group/name")?.as_str()?.into())),
        "ServiceAccount" => Some(Subject::ServiceAccount {
            namespace: s.at("/serviceAccount/namespace")?.as_str()?.into(),
            name: s.at("/serviceAccount/name")?.as_str()?.into(),
        }),
        _ => None,
    }
}

/// Parses a stored FlowSchema; `None` if it has no name or no priority level.
pub fn parse_schema(v: &Value) -> Option<Schema> {
    let name = meta(v, "name");
    let spec = v.get("spec")?;
    let level = spec
        .at("/priorityLevelConfiguration/name")
        .and_then(Value::as_str)?
        .to_string();
    if name.is_empty() || level.is_empty() {
        return None;
    }
    let distinguisher = match spec.at("/distinguisherMethod/type").and_then(Value::as_str) {
        Some("ByUser") => Distinguisher::ByUser,
        Some("ByNamespace") => Distinguisher::ByNamespace,
        _ => Distinguisher::None,
    };
    let rules = spec
        .get("rules")
        .and_then(Value::as_array)
        .map(|rules| {
            rules
                .iter()
                .map(|r| Rule {
                    subjects: r
                        .get("subjects")
                        .and_then(Value::as_array)
                        .map(|s| s.iter().filter_map(parse_subject).collect())
                        .unwrap_or_default(),
                    resource_rules: r
                        .get("resourceRules")
                        .and_then(Value::as_array)
                        .map(|rr| {
                            rr.iter()
                                .map(|x| ResourceRule {
                                    verbs: strings(x, "verbs"),
                                    api_groups: strings(x, "apiGroups"),
                                    resources: strings(x, "resources"),
                                    cluster_scope: x
                                        .get("clusterScope")
                                        .and_then(Value::as_bool)
                                        .unwrap_or(false),
                                    namespaces: strings(x, "namespaces"),
                                })
                                .collect()
                        })
                        .unwrap_or_default(),
                    non_resource_rules: r
                        .get("nonResourceRules")
                        .and_then(Value::as_array)
                        .map(|nr| {
                            nr.iter()
                                .map(|x| NonResourceRule {
                                    verbs: strings(x, "verbs"),
                                    urls: strings(x, "nonResourceURLs"),
                                })
                                .collect()
                        })
                        .unwrap_or_default(),
                })
                .collect()
        })
        .unwrap_or_default();
    Some(Schema {
        name,
        uid: meta(v, "uid"),
        level,
        matching_precedence: spec
            .get("matchingPrecedence")
            .and_then(Value::as_i64)
            .unwrap_or(MATCHING_PRECEDENCE_DEFAULT),
        distinguisher,
        rules,
    })
}

/// The seats of one level on one core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seats {
    /// NominalCL, this core's share.
    pub nominal: u32,
    /// Seats the level keeps for itself (nominal - lendable).
    pub guaranteed: u32,
    /// The most seats the level may hold at once, borrowed ones included.
    pub cap: u32,
}

/// NominalCL of every level (server-wide), in `levels` order.
pub fn nominal_limits(levels: &[Level], server_limit: usize) -> Vec<u32> {
    let total_shares: u64 = levels.iter().map(|l| l.nominal_shares).sum();
    levels
        .iter()
        .map(|l| {
            if total_shares == 0 {
                return 0;
            }
            (server_limit as u64 * l.nominal_shares).div_ceil(total_shares) as u32
        })
        .collect()
}

/// This core's seats of a level whose server-wide NominalCL is `nominal`.
pub fn core_seats(level: &Level, nominal: u32, cores: usize) -> Seats {
    let per_core = if level.exempt {
        0
    } else {
        nominal.div_ceil(cores.max(1) as u32).max(1)
    };
    let lendable = (per_core as u64 * level.lendable_percent + 50) / 100;
    let borrow = level
        .borrowing_limit_percent
        .map(|p| ((per_core as u64 * p + 50) / 100) as u32);
    Seats {
        nominal: per_core,
        guaranteed: per_core - lendable as u32,
        cap: borrow.map_or(u32::MAX, |b| per_core.saturating_add(b)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn limited(name: &str, ncs: u64, lend: u64) -> Value {
        json!({"metadata": {"name": name, "uid": format!("uid-{name}")},
               "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": ncs,
                 "lendablePercent": lend,
                 "limitResponse": {"type": "Queue", "queuing": {"queues": 128, "handSize": 6, "queueLengthLimit": 50}}}}})
    }

    #[test]
    fn parses_levels_with_upstream_defaults() {
        let l = parse_level(&limited("workload-low", 100, 90)).unwrap();
        assert_eq!(
            (
                l.nominal_shares,
                l.lendable_percent,
                l.borrowing_limit_percent
            ),
            (100, 90, None)
        );
        assert_eq!(
            l.limit_response,
            LimitResponse::Queue {
                queues: 128,
                hand_size: 6,
                queue_length_limit: 50
            }
        );
        let bare = parse_level(&json!({"metadata": {"name": "x"},
            "spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue"}}}}))
        .unwrap();
        assert_eq!(bare.nominal_shares, 30);
        assert_eq!(
            bare.limit_response,
            LimitResponse::Queue {
                queues: 64,
                hand_size: 8,
                queue_length_limit: 50
            }
        );
        let ex = parse_level(
            &json!({"metadata": {"name": "exempt"}, "spec": {"type": "Exempt", "exempt": {}}}),
        )
        .unwrap();
        assert!(ex.exempt);
        assert_eq!(ex.nominal_shares, 0);
        assert!(
            parse_level(&json!({"metadata": {"name": "x"}, "spec": {"type": "Odd"}})).is_none()
        );
    }

    /// Upstream's bootstrap levels with the default 400 + 200: global-default gets
    /// ceil(600 * 20 / 245) = 49 seats, catch-all ceil(600 * 5 / 245) = 13.
    #[test]
    fn nominal_limits_follow_the_shares() {
        let levels: Vec<Level> = [
            ("system", 30),
            ("node-high", 40),
            ("leader-election", 10),
            ("workload-high", 40),
            ("workload-low", 100),
            ("global-default", 20),
            ("catch-all", 5),
        ]
        .iter()
        .map(|(n, s)| parse_level(&limited(n, *s, 0)).unwrap())
        .collect();
        let n = nominal_limits(&levels, 600);
        assert_eq!(n, vec![74, 98, 25, 98, 245, 49, 13]);
    }

    #[test]
    fn core_seats_split_and_lend() {
        let l = parse_level(&limited("global-default", 20, 50)).unwrap();
        assert_eq!(
            core_seats(&l, 49, 2),
            Seats {
                nominal: 25,
                guaranteed: 12,
                cap: u32::MAX
            }
        );
        // Never zero seats on a core, however small the limit.
        assert_eq!(core_seats(&l, 1, 4).nominal, 1);
        let mut capped = l.clone();
        capped.borrowing_limit_percent = Some(100);
        assert_eq!(core_seats(&capped, 10, 1).cap, 20);
    }
}
