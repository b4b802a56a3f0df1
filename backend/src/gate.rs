//! The gate (DESIGN §5): the only place that decides whether a tool call
//! may run without asking. A pure function of stored facts, checked at call
//! time, never a cached verdict.
//!
//! A tool the server changed since the user reviewed it always asks
//! ("This tool changed since you reviewed it"): no grant covers it and its
//! new, unreviewed annotations are never read (the caller passes the
//! reviewed ones). Keeping it again in Settings makes the new descriptor
//! the reviewed one.
//!
//! Otherwise a call runs without asking only if:
//! 1. a turn grant covers this connector + tool in this turn, or
//! 2. an always-allow grant exists for this user, connector, tool **and the
//!    tool's current descriptor digest**, or
//! 3. the user trusts this connector's annotations **and** the stored
//!    annotations positively declare the tool safe: `readOnlyHint` is JSON
//!    `true`, `openWorldHint` is JSON `false` (omitted means open world),
//!    and `destructiveHint` is absent or JSON `false` — and no stored
//!    `requires_confirmation = true` says otherwise.
//!
//! A call whose arguments carry text from a tool result to another
//! connector, or to a tool not declared closed-world (a *flow*,
//! `crate::provenance`), always asks too: no turn grant, always-allow rule
//! or trusted annotation lets it run unseen, and its card offers only
//! "Allow once".
//!
//! So does a call made after this turn read a result that gives the
//! assistant instructions (the instruction detector marked it,
//! `provenance::contains_instructions`), whatever its arguments: the model
//! may be following them, with ids or words that carry nothing traceable
//! (delete a file, change a password, on the very connector the text came
//! from). Only a call the user's trust lets run as read-only and
//! closed-world (rule 3) still runs: it can neither change nor send
//! anything.
//!
//! A rule (`crate::rules`, DESIGN §5 "Rules") is one more stored fact:
//! the one that decides the call, if any. *Deny* refuses the call before
//! anything else is looked at: nobody is asked and nothing runs. *Ask*
//! asks whatever grant or trust exists. *Allow* lets the call run unseen
//! — but never a call of a changed tool, one the policy says always asks,
//! a flagged one, or one after instructions in a result of the turn:
//! those ask whatever rule exists.
//!
//! Admin policy (DESIGN §5) is stricter than any of these and wins over
//! every grant: a tool its `always_ask_tools` names asks whatever grant or
//! trust exists, and so does a call `require_second_approval` covers (its
//! card offers "Allow once" only, and an approver must allow it too); `forbid_always_allow` makes always-rules stop applying
//! (they are not deleted, and apply again if the policy is lifted);
//! `forbid_trust_annotations` does the same for rule 3. A turn grant still
//! applies under those two: it is one card's decision, made this turn.
//!
//! Everything else asks. Only JSON booleans count: `"true"` is not `true`.
//! On `destructiveHint` this is stricter than DESIGN's `!== true`: any value
//! but an absent one or `false` (a string, a number, `null`) asks, because a
//! server's metadata must never lower the risk of its own tools and an odd
//! value is no declaration of safety.

use countersign_api::{CallOrigin, GrantKind};
use serde_json::Value;

/// The always-allow grant for this user, connector and tool, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlwaysGrant {
    /// The user has no rule for this tool.
    None,
    /// One exists and names the tool's current descriptor digest.
    Current,
    /// One exists for an older descriptor: the tool changed since.
    Stale,
}

/// What the gate looks at, all read from storage at call time.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    /// The server's descriptor is not the one the user reviewed.
    pub changed_since_review: bool,
    /// The annotations of the descriptor the user reviewed, exactly as the
    /// server sent them then.
    pub annotations: Option<&'a Value>,
    /// "Trust this server's safety annotations" for the connector.
    pub trust_annotations: bool,
    /// A stored `requires_confirmation`; only `true` is honoured.
    pub requires_confirmation: Option<bool>,
    /// The user allowed this connector + tool for the rest of this turn.
    pub turn_grant: bool,
    /// The durable rule, if any.
    pub always_grant: AlwaysGrant,
    /// What the instance's policy says about this call.
    pub policy: PolicyFacts,
    /// The arguments carry text from a tool result elsewhere
    /// (`Provenance::carries_results`).
    pub carries_results: bool,
    /// This turn read a result that gives the assistant instructions
    /// (`Provenance::follows_instructions`).
    pub follows_instructions: bool,
    /// What the rule that decides this call says, if one applies
    /// (`crate::rules::deciding`).
    pub rule: Option<RuleSays>,
}

/// What the deciding rule says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleSays {
    Allow,
    Ask,
    Deny,
}

/// The admin policy as it bears on one call (`crate::policy::Policy`, read
/// at call time like every other fact).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PolicyFacts {
    /// One of `always_ask_tools` matches `connector-host/tool`.
    pub always_ask: bool,
    /// `forbid_always_allow`.
    pub forbid_always_allow: bool,
    /// `forbid_trust_annotations`.
    pub forbid_trust_annotations: bool,
    /// `require_second_approval` covers this call (its tool, or a
    /// destination it sends to): it asks, and after the user's approve an
    /// approver who is not the user must approve too.
    pub second_approval: bool,
}

/// Why a call may run without a card.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunBecause {
    /// "Allow for the rest of this turn".
    TurnGrant,
    /// "Always allow this tool", for this very descriptor.
    AlwaysGrant,
    /// Trusted annotations declare it read-only and closed-world.
    TrustedAnnotations,
    /// A rule allows it.
    Rule,
}

impl RunBecause {
    /// The `origin` of its `mcp_tool_call` event.
    pub fn origin(self) -> CallOrigin {
        match self {
            Self::TurnGrant => CallOrigin::TurnGrant,
            Self::AlwaysGrant => CallOrigin::AlwaysGrant,
            Self::TrustedAnnotations => CallOrigin::TrustedAnnotations,
            Self::Rule => CallOrigin::Rule,
        }
    }
}

/// Why a call asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AskBecause {
    /// The server changed the tool since the user reviewed it.
    ChangedSinceReviewed,
    /// The always-allow rule was for an older descriptor.
    ChangedSinceAllowed,
    /// The connector's annotations are not trusted (the default).
    NotTrusted,
    /// Trusted, but the annotations do not declare the tool safe.
    NotDeclaredSafe,
    /// A stored `requires_confirmation = true`.
    RequiresConfirmation,
    /// The admin policy names this tool among those that always ask.
    PolicyAlwaysAsks,
    /// The user has an always-rule, but the policy forbids them.
    AlwaysAllowForbidden,
    /// The user trusts the annotations, but the policy forbids it.
    TrustForbidden,
    /// The arguments carry text from a tool result to another connector
    /// or to a tool that may reach outside.
    CarriesToolResults,
    /// This turn read a result that gives the assistant instructions, and
    /// the call is not a trusted read-only, closed-world one.
    FollowsInstructions,
    /// A rule says to ask (the card names it).
    RuleAsks,
    /// The admin policy gives this call a second approver.
    SecondApproval,
}

impl AskBecause {
    /// The reason shown on the card.
    pub fn text(self) -> &'static str {
        match self {
            Self::ChangedSinceReviewed => "This tool changed since you reviewed it",
            Self::ChangedSinceAllowed => "This tool changed since you allowed it",
            Self::NotTrusted => "every tool call asks for your approval",
            Self::NotDeclaredSafe => {
                "the server does not declare this tool read-only and closed-world"
            }
            Self::RequiresConfirmation => "this tool is marked as needing confirmation",
            Self::PolicyAlwaysAsks => "your administrator requires a confirmation for this tool",
            Self::AlwaysAllowForbidden => {
                "your administrator has turned off \u{201c}Always allow\u{201d}, so your rule \
                 for this tool does not apply"
            }
            Self::TrustForbidden => {
                "your administrator has turned off trusting servers' safety annotations"
            }
            Self::CarriesToolResults => {
                "this call sends text from a tool's result elsewhere, so it always asks"
            }
            Self::RuleAsks => "a rule asks for this call",
            Self::SecondApproval => {
                "your administrator requires a second approval for this call: after you allow \
                 it, an approver must allow it too"
            }
            Self::FollowsInstructions => {
                "this reply read text that gives the assistant instructions, so this call may \
                 be following them and always asks"
            }
        }
    }
}

/// The verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Run without a card.
    Run(RunBecause),
    /// Ask the user.
    Ask(AskBecause),
    /// A rule denies it: refused without asking anyone.
    Refuse,
}

/// Whether the annotations positively declare the tool safe (rule 3's
/// second half). It lives with the API types so that the card's and the
/// review's risk grouping ([`countersign_api::risk::assess`]) is this very
/// test.
pub use countersign_api::risk::declared_safe;

/// The gate.
pub fn decide(facts: &Facts<'_>) -> Decision {
    if facts.rule == Some(RuleSays::Deny) {
        return Decision::Refuse;
    }
    if facts.changed_since_review {
        return Decision::Ask(AskBecause::ChangedSinceReviewed);
    }
    if facts.policy.second_approval {
        return Decision::Ask(AskBecause::SecondApproval);
    }
    if facts.policy.always_ask {
        return Decision::Ask(AskBecause::PolicyAlwaysAsks);
    }
    if facts.carries_results {
        return Decision::Ask(AskBecause::CarriesToolResults);
    }
    if facts.rule == Some(RuleSays::Ask) {
        return Decision::Ask(AskBecause::RuleAsks);
    }
    if facts.follows_instructions {
        return if trusted_safe(facts) {
            Decision::Run(RunBecause::TrustedAnnotations)
        } else {
            Decision::Ask(AskBecause::FollowsInstructions)
        };
    }
    if facts.rule == Some(RuleSays::Allow) {
        return Decision::Run(RunBecause::Rule);
    }
    if facts.turn_grant {
        return Decision::Run(RunBecause::TurnGrant);
    }
    let suspended_rule = facts.policy.forbid_always_allow;
    match facts.always_grant {
        AlwaysGrant::Current if !suspended_rule => return Decision::Run(RunBecause::AlwaysGrant),
        // A stale rule asks with or without the policy: the policy never
        // turns an ask into a run.
        AlwaysGrant::Stale => return Decision::Ask(AskBecause::ChangedSinceAllowed),
        AlwaysGrant::Current | AlwaysGrant::None => {}
    }
    // The reason a card gives, when no other rule lets the call run: the
    // user's own rule, if the policy is what stopped it.
    let not_run = |otherwise: AskBecause| {
        if suspended_rule && facts.always_grant != AlwaysGrant::None {
            Decision::Ask(AskBecause::AlwaysAllowForbidden)
        } else {
            Decision::Ask(otherwise)
        }
    };
    if !facts.trust_annotations {
        return not_run(AskBecause::NotTrusted);
    }
    if facts.policy.forbid_trust_annotations {
        return not_run(AskBecause::TrustForbidden);
    }
    if facts.requires_confirmation == Some(true) {
        return not_run(AskBecause::RequiresConfirmation);
    }
    if declared_safe(facts.annotations) {
        Decision::Run(RunBecause::TrustedAnnotations)
    } else {
        not_run(AskBecause::NotDeclaredSafe)
    }
}

/// Rule 3 on its own: the user trusts the annotations, the policy allows
/// it, nothing stored asks for a confirmation, and the reviewed
/// annotations declare the tool read-only and closed-world.
fn trusted_safe(facts: &Facts<'_>) -> bool {
    facts.trust_annotations
        && !facts.policy.forbid_trust_annotations
        && facts.requires_confirmation != Some(true)
        && declared_safe(facts.annotations)
}

/// The grants a card for this call may offer: only those the gate would
/// honour on the next call. A tool that changed since review, one the
/// policy says always asks, a call that carries a tool's result
/// elsewhere, one after instructions in a result of this turn, or one a
/// rule says to ask for gets "Allow once" only; under
/// `forbid_always_allow`, no "Always allow".
pub fn offered_grants(facts: &Facts<'_>) -> &'static [GrantKind] {
    if facts.changed_since_review
        || facts.policy.always_ask
        || facts.policy.second_approval
        || facts.carries_results
        || facts.follows_instructions
        || matches!(facts.rule, Some(RuleSays::Ask | RuleSays::Deny))
    {
        &[GrantKind::Once]
    } else if facts.policy.forbid_always_allow {
        &[GrantKind::Once, GrantKind::Turn]
    } else {
        GrantKind::ALL
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, json};

    /// Every value a hint can have on the wire; `None` is "absent".
    fn values() -> Vec<Option<Value>> {
        vec![
            None,
            Some(json!(true)),
            Some(json!(false)),
            Some(json!("true")),
            Some(json!("false")),
            Some(json!(1)),
            Some(json!(0)),
            Some(Value::Null),
        ]
    }

    /// Annotations with each hint as given, or absent (`None`).
    fn hints(ro: &Option<Value>, ow: &Option<Value>, de: &Option<Value>) -> Value {
        let mut hints = Map::new();
        for (key, value) in [
            ("readOnlyHint", ro),
            ("openWorldHint", ow),
            ("destructiveHint", de),
        ] {
            if let Some(v) = value {
                hints.insert(key.to_owned(), v.clone());
            }
        }
        Value::Object(hints)
    }

    fn facts(annotations: Option<&Value>, trust: bool, cached: Option<bool>) -> Facts<'_> {
        Facts {
            changed_since_review: false,
            annotations,
            trust_annotations: trust,
            requires_confirmation: cached,
            turn_grant: false,
            always_grant: AlwaysGrant::None,
            policy: PolicyFacts::default(),
            carries_results: false,
            follows_instructions: false,
            rule: None,
        }
    }

    /// After instructions in a result of this turn (issue 46, item 5),
    /// every grant and rule stops counting: the call asks, offering only
    /// "Allow once", unless trusted annotations let it run as read-only
    /// and closed-world — every combination of hints, trust, the stored
    /// flag, the trust policy and the grants.
    #[test]
    fn after_instructions_only_a_trusted_read_only_closed_world_call_runs() {
        let bools = [false, true];
        let mut runs = 0;
        let mut cases = 0;
        for ro in values() {
            for ow in values() {
                for de in values() {
                    let annotations = hints(&ro, &ow, &de);
                    for trust in bools {
                        for forbid_trust in bools {
                            for cached in [None, Some(false), Some(true)] {
                                for turn_grant in bools {
                                    for always_grant in [
                                        AlwaysGrant::None,
                                        AlwaysGrant::Current,
                                        AlwaysGrant::Stale,
                                    ] {
                                        cases += 1;
                                        let f = Facts {
                                            follows_instructions: true,
                                            turn_grant,
                                            always_grant,
                                            policy: PolicyFacts {
                                                forbid_trust_annotations: forbid_trust,
                                                ..PolicyFacts::default()
                                            },
                                            ..facts(Some(&annotations), trust, cached)
                                        };
                                        let safe = trust
                                            && !forbid_trust
                                            && cached != Some(true)
                                            && ro == Some(json!(true))
                                            && ow == Some(json!(false))
                                            && (de.is_none() || de == Some(json!(false)));
                                        let expected = if safe {
                                            Decision::Run(RunBecause::TrustedAnnotations)
                                        } else {
                                            Decision::Ask(AskBecause::FollowsInstructions)
                                        };
                                        assert_eq!(decide(&f), expected, "{f:?}");
                                        assert_eq!(offered_grants(&f), &[GrantKind::Once]);
                                        runs += usize::from(safe);
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(cases, 8 * 8 * 8 * 2 * 2 * 3 * 2 * 3);
        // ro=true, ow=false, de absent|false; trust on, not forbidden, the
        // stored flag not true (2 values); any grant (2 × 3).
        assert_eq!(runs, 2 * 2 * 6);
    }

    /// A flow (text from a tool result going elsewhere) asks whatever
    /// grant, rule, trust or annotations exist, and its card offers only
    /// "Allow once" (issue 16).
    #[test]
    fn a_call_carrying_tool_results_elsewhere_asks_whatever_else_holds() {
        let safe = json!({"readOnlyHint": true, "openWorldHint": false});
        let mut cases = 0;
        for turn_grant in [false, true] {
            for always_grant in [AlwaysGrant::None, AlwaysGrant::Current, AlwaysGrant::Stale] {
                for trust in [false, true] {
                    for cached in [None, Some(false), Some(true)] {
                        let f = Facts {
                            carries_results: true,
                            turn_grant,
                            always_grant,
                            ..facts(Some(&safe), trust, cached)
                        };
                        assert_eq!(
                            decide(&f),
                            Decision::Ask(AskBecause::CarriesToolResults),
                            "{f:?}"
                        );
                        assert_eq!(offered_grants(&f), &[GrantKind::Once], "{f:?}");
                        cases += 1;
                    }
                }
            }
        }
        assert_eq!(cases, 36);
    }

    #[test]
    fn every_combination_of_hints_trust_and_cached_flag_runs_only_when_positively_safe() {
        let mut runs = 0;
        let mut cases = 0;
        for ro in values() {
            for ow in values() {
                for de in values() {
                    let annotations = hints(&ro, &ow, &de);
                    for trust in [false, true] {
                        for cached in [None, Some(false), Some(true)] {
                            cases += 1;
                            let verdict = decide(&facts(Some(&annotations), trust, cached));
                            // The rule, stated on the raw values.
                            let safe = trust
                                && cached != Some(true)
                                && ro == Some(json!(true))
                                && ow == Some(json!(false))
                                && (de.is_none() || de == Some(json!(false)));
                            let ran = matches!(verdict, Decision::Run(_));
                            assert_eq!(
                                ran, safe,
                                "ro={ro:?} ow={ow:?} de={de:?} trust={trust} cached={cached:?} → {verdict:?}"
                            );
                            runs += usize::from(ran);
                        }
                    }
                }
            }
        }
        assert_eq!(cases, 8 * 8 * 8 * 2 * 3);
        // Only readOnly=true, openWorld=false, destructive absent|false, with
        // trust on and the cached flag not true: 2 × 2 = 4 cases.
        assert_eq!(runs, 4);
    }

    #[test]
    fn notable_cases_ask_or_run_with_their_reason() {
        let safe = json!({"readOnlyHint": true, "openWorldHint": false, "destructiveHint": false});
        let empty = json!({});
        let read_only = json!({"readOnlyHint": true});
        let strings = json!({"readOnlyHint": "true", "openWorldHint": "false"});
        let not_object = json!([true]);
        let cases: Vec<(Facts<'_>, Decision, &str)> = vec![
            (
                facts(Some(&safe), false, None),
                Decision::Ask(AskBecause::NotTrusted),
                "trust off",
            ),
            (
                facts(Some(&safe), true, None),
                Decision::Run(RunBecause::TrustedAnnotations),
                "trusted and safe",
            ),
            (
                facts(Some(&safe), true, Some(true)),
                Decision::Ask(AskBecause::RequiresConfirmation),
                "cached true is honoured",
            ),
            (
                facts(Some(&safe), true, Some(false)),
                Decision::Run(RunBecause::TrustedAnnotations),
                "cached false is not a reason to run, the annotations are",
            ),
            (
                facts(None, true, Some(false)),
                Decision::Ask(AskBecause::NotDeclaredSafe),
                "stale row: no annotations, cached false, trust on",
            ),
            (
                facts(Some(&empty), true, Some(false)),
                Decision::Ask(AskBecause::NotDeclaredSafe),
                "stale row: {} annotations",
            ),
            (
                facts(Some(&read_only), true, None),
                Decision::Ask(AskBecause::NotDeclaredSafe),
                "openWorldHint omitted means open world",
            ),
            (
                facts(Some(&strings), true, None),
                Decision::Ask(AskBecause::NotDeclaredSafe),
                "strings are not booleans",
            ),
            (
                facts(Some(&not_object), true, None),
                Decision::Ask(AskBecause::NotDeclaredSafe),
                "not an object",
            ),
        ];
        for (f, expected, why) in cases {
            assert_eq!(decide(&f), expected, "{why}");
        }
    }

    #[test]
    fn grants_come_first_and_a_changed_tool_suspends_an_always_rule() {
        let unsafe_tool = json!({"destructiveHint": true});
        let mut f = facts(Some(&unsafe_tool), false, Some(true));
        f.turn_grant = true;
        assert_eq!(decide(&f), Decision::Run(RunBecause::TurnGrant));
        f.turn_grant = false;
        f.always_grant = AlwaysGrant::Current;
        assert_eq!(decide(&f), Decision::Run(RunBecause::AlwaysGrant));
        f.always_grant = AlwaysGrant::Stale;
        assert_eq!(decide(&f), Decision::Ask(AskBecause::ChangedSinceAllowed));
        assert_eq!(
            AskBecause::ChangedSinceAllowed.text(),
            "This tool changed since you allowed it"
        );
        let safe = json!({"readOnlyHint": true, "openWorldHint": false});
        let mut trusted = facts(Some(&safe), true, None);
        trusted.always_grant = AlwaysGrant::Stale;
        assert_eq!(
            decide(&trusted),
            Decision::Ask(AskBecause::ChangedSinceAllowed),
            "a stale rule asks even when annotations would pass"
        );
    }

    #[test]
    fn a_tool_changed_since_review_asks_whatever_grant_trust_or_annotations_say() {
        let safe = json!({"readOnlyHint": true, "openWorldHint": false});
        let mut cases = 0;
        for turn_grant in [false, true] {
            for always_grant in [AlwaysGrant::None, AlwaysGrant::Current, AlwaysGrant::Stale] {
                for trust in [false, true] {
                    for cached in [None, Some(false), Some(true)] {
                        let f = Facts {
                            changed_since_review: true,
                            turn_grant,
                            always_grant,
                            ..facts(Some(&safe), trust, cached)
                        };
                        assert_eq!(
                            decide(&f),
                            Decision::Ask(AskBecause::ChangedSinceReviewed),
                            "{f:?}"
                        );
                        cases += 1;
                    }
                }
            }
        }
        assert_eq!(cases, 36);
        assert_eq!(
            AskBecause::ChangedSinceReviewed.text(),
            "This tool changed since you reviewed it"
        );
    }

    /// Every combination of the policy's three facts with every other
    /// fact: the policy only ever turns a run into an ask, and the rule
    /// holds as stated in DESIGN §5.
    #[test]
    fn the_policy_wins_over_every_grant_and_trust_in_every_combination() {
        let safe = json!({"readOnlyHint": true, "openWorldHint": false});
        let risky = json!({"destructiveHint": true});
        let bools = [false, true];
        let always = [AlwaysGrant::None, AlwaysGrant::Current, AlwaysGrant::Stale];
        let mut cases = 0;
        for (changed, second) in [(false, false), (false, true), (true, false), (true, true)] {
            for always_ask in bools {
                for forbid_always in bools {
                    for forbid_trust in bools {
                        for turn_grant in bools {
                            for always_grant in always {
                                for trust in bools {
                                    for cached in [None, Some(false), Some(true)] {
                                        for ((annotations, carries, follows), rule) in [
                                            (&safe, false, false),
                                            (&risky, false, false),
                                            (&safe, true, false),
                                            (&risky, true, false),
                                            (&safe, false, true),
                                            (&risky, false, true),
                                        ]
                                        .into_iter()
                                        .flat_map(|facts| {
                                            [
                                                None,
                                                Some(RuleSays::Allow),
                                                Some(RuleSays::Ask),
                                                Some(RuleSays::Deny),
                                            ]
                                            .map(|rule| (facts, rule))
                                        }) {
                                            cases += 1;
                                            let policy = PolicyFacts {
                                                always_ask,
                                                forbid_always_allow: forbid_always,
                                                forbid_trust_annotations: forbid_trust,
                                                second_approval: second,
                                            };
                                            let f = Facts {
                                                changed_since_review: changed,
                                                annotations: Some(annotations),
                                                trust_annotations: trust,
                                                requires_confirmation: cached,
                                                turn_grant,
                                                always_grant,
                                                policy,
                                                carries_results: carries,
                                                follows_instructions: follows,
                                                rule,
                                            };
                                            let verdict = decide(&f);
                                            let rule_applies = !forbid_always
                                                && always_grant == AlwaysGrant::Current;
                                            let stale_blocks = always_grant == AlwaysGrant::Stale;
                                            let trusted = trust
                                                && !forbid_trust
                                                && cached != Some(true)
                                                && annotations == &safe;
                                            let runs = rule != Some(RuleSays::Deny)
                                                && !changed
                                                && !second
                                                && !always_ask
                                                && !carries
                                                && rule != Some(RuleSays::Ask)
                                                && if follows {
                                                    trusted
                                                } else {
                                                    rule == Some(RuleSays::Allow)
                                                        || turn_grant
                                                        || rule_applies
                                                        || (!stale_blocks && trusted)
                                                };
                                            // A deny rule refuses, whatever
                                            // else holds; nothing else does.
                                            assert_eq!(
                                                verdict == Decision::Refuse,
                                                rule == Some(RuleSays::Deny),
                                                "{f:?} → {verdict:?}"
                                            );
                                            assert_eq!(
                                                matches!(verdict, Decision::Run(_)),
                                                runs,
                                                "{f:?} → {verdict:?}"
                                            );
                                            // The policy only ever turns a
                                            // run into an ask: without it,
                                            // the same facts run too.
                                            let without = decide(&Facts {
                                                policy: PolicyFacts::default(),
                                                ..f
                                            });
                                            if runs {
                                                assert!(
                                                    matches!(without, Decision::Run(_)),
                                                    "{f:?}"
                                                );
                                            }
                                            // A second approval asks,
                                            // whatever grant, rule or trust,
                                            // and offers "Allow once" only.
                                            if second && !changed && rule != Some(RuleSays::Deny) {
                                                assert_eq!(
                                                    verdict,
                                                    Decision::Ask(AskBecause::SecondApproval)
                                                );
                                                assert_eq!(offered_grants(&f), [GrantKind::Once]);
                                            }
                                            if always_ask
                                                && !second
                                                && !changed
                                                && rule != Some(RuleSays::Deny)
                                            {
                                                assert_eq!(
                                                    verdict,
                                                    Decision::Ask(AskBecause::PolicyAlwaysAsks)
                                                );
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(cases, 4 * 2 * 2 * 2 * 2 * 3 * 2 * 3 * 6 * 4);
    }

    #[test]
    fn a_rule_the_policy_suspends_is_named_on_the_card() {
        let risky = json!({"destructiveHint": true});
        let mut f = facts(Some(&risky), false, None);
        f.always_grant = AlwaysGrant::Current;
        f.policy.forbid_always_allow = true;
        assert_eq!(decide(&f), Decision::Ask(AskBecause::AlwaysAllowForbidden));
        f.always_grant = AlwaysGrant::None;
        assert_eq!(decide(&f), Decision::Ask(AskBecause::NotTrusted));
        let safe = json!({"readOnlyHint": true, "openWorldHint": false});
        let mut trusted = facts(Some(&safe), true, None);
        trusted.policy.forbid_trust_annotations = true;
        assert_eq!(decide(&trusted), Decision::Ask(AskBecause::TrustForbidden));
        trusted.turn_grant = true;
        assert_eq!(
            decide(&trusted),
            Decision::Run(RunBecause::TurnGrant),
            "a turn grant is this turn's card, not a standing permission"
        );
    }

    /// A card never offers a grant the gate would not honour on the next
    /// call: every offered "turn" or "always" makes the same call run.
    #[test]
    fn a_card_offers_only_grants_the_gate_honours() {
        let risky = json!({"destructiveHint": true});
        let bools = [false, true];
        for (changed, carries_results, follows_instructions, rule) in [
            (false, false, false, None),
            (true, false, false, None),
            (false, true, false, None),
            (false, false, true, None),
            (false, false, false, Some(RuleSays::Ask)),
            // An allow rule shows a card only when something else asks.
            (true, false, false, Some(RuleSays::Allow)),
            (false, true, false, Some(RuleSays::Allow)),
            (false, false, true, Some(RuleSays::Allow)),
        ] {
            for (always_ask, second_approval) in [(false, false), (true, false), (false, true)] {
                for forbid_always in bools {
                    for forbid_trust in bools {
                        let f = Facts {
                            changed_since_review: changed,
                            carries_results,
                            follows_instructions,
                            rule,
                            policy: PolicyFacts {
                                always_ask,
                                forbid_always_allow: forbid_always,
                                forbid_trust_annotations: forbid_trust,
                                second_approval,
                            },
                            ..facts(Some(&risky), false, None)
                        };
                        let offered = offered_grants(&f);
                        assert!(offered.contains(&GrantKind::Once));
                        for grant in offered {
                            let next = match grant {
                                GrantKind::Turn => Facts {
                                    turn_grant: true,
                                    ..f
                                },
                                GrantKind::Always => Facts {
                                    always_grant: AlwaysGrant::Current,
                                    ..f
                                },
                                _ => continue,
                            };
                            assert!(
                                matches!(decide(&next), Decision::Run(_)),
                                "{grant:?} offered for {f:?} but not honoured"
                            );
                        }
                        // And everything the gate would honour is offered.
                        let honoured = |next: Facts<'_>| matches!(decide(&next), Decision::Run(_));
                        assert_eq!(
                            offered.contains(&GrantKind::Turn),
                            honoured(Facts {
                                turn_grant: true,
                                ..f
                            })
                        );
                        assert_eq!(
                            offered.contains(&GrantKind::Always),
                            honoured(Facts {
                                always_grant: AlwaysGrant::Current,
                                ..f
                            })
                        );
                    }
                }
            }
        }
    }
}
