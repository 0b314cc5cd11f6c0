//! Consent for destructive tools: both rules in one place.
//!
//! The policy's `destructive` setting gives a destructive tool's grant a
//! [`Consent`]: `deny` refuses the call while it is prepared, before any
//! confirmation is asked for; `confirm` lets it be prepared, and it runs
//! only once the client's user accepted ([`Confirmation`]). A call that
//! needs confirmation and has none runs never: no answer counts as "this
//! client cannot be asked".

use super::error::CallError;
use crate::policy::{Consent, Grant};

/// The client's answer when asked to confirm a destructive call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirmation {
    Accepted,
    Declined,
    /// The client cannot be asked (no elicitation capability, a CLI call
    /// without `--yes`, no answer in time).
    Unavailable,
}

/// Whether the client must confirm the call before it runs.
pub(super) fn needs_confirmation(grant: &Grant) -> bool {
    grant.consent == Some(Consent::Confirm)
}

/// The rule checked while a call is prepared: `destructive = "deny"`.
pub(super) fn check_allowed(component: &str, tool: &str, grant: &Grant) -> Result<(), CallError> {
    if grant.consent != Some(Consent::Deny) {
        return Ok(());
    }
    Err(CallError::refused(
        format!(
            "{tool} is destructive and the operator's policy does not allow destructive calls for it"
        ),
        format!(
            "set destructive = \"allow\" (or \"confirm\") under [components.{component}.tools.{tool}] \
             or [components.{component}] in the policy"
        ),
    ))
}

/// The rule checked before the guest runs: `destructive = "confirm"` needs
/// an accepted confirmation (`None`: nobody answered).
pub(super) fn check_confirmed(
    tool: &str,
    grant: &Grant,
    answer: Option<Confirmation>,
) -> Result<(), CallError> {
    if !needs_confirmation(grant) {
        return Ok(());
    }
    match answer {
        Some(Confirmation::Accepted) => Ok(()),
        Some(Confirmation::Declined) => Err(CallError::refused(
            format!("{tool} is destructive and the client declined to confirm it"),
            String::new(),
        )),
        Some(Confirmation::Unavailable) | None => Err(CallError::refused(
            format!("{tool} is destructive and needs confirmation, which this client cannot give"),
            format!(
                "the policy says destructive = \"confirm\" for {tool}; use a client with \
                 elicitation, or set destructive = \"allow\" for it"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(consent: Option<Consent>) -> Grant {
        Grant {
            consent,
            ..Grant::default()
        }
    }

    #[test]
    fn deny_refuses_at_once_and_names_the_policy_key() {
        let err = check_allowed("catalog", "restock", &grant(Some(Consent::Deny))).unwrap_err();
        let CallError::Refused(refusal) = err else {
            panic!("a refusal")
        };
        assert!(refusal.message.contains("does not allow destructive calls"));
        assert!(
            refusal
                .operator_hint
                .contains("[components.catalog.tools.restock]")
        );
        for consent in [None, Some(Consent::Allow), Some(Consent::Confirm)] {
            assert!(
                check_allowed("c", "t", &grant(consent)).is_ok(),
                "{consent:?}"
            );
        }
    }

    #[test]
    fn confirm_runs_only_with_an_accepted_answer() {
        let g = grant(Some(Consent::Confirm));
        assert!(needs_confirmation(&g));
        assert!(check_confirmed("t", &g, Some(Confirmation::Accepted)).is_ok());
        for answer in [
            None,
            Some(Confirmation::Unavailable),
            Some(Confirmation::Declined),
        ] {
            let err = check_confirmed("t", &g, answer).unwrap_err();
            assert_eq!(err.kind(), "refused", "{answer:?}");
        }
        let err = check_confirmed("t", &g, Some(Confirmation::Declined)).unwrap_err();
        assert!(err.to_string().contains("declined"));
        let err = check_confirmed("t", &g, None).unwrap_err();
        assert!(err.to_string().contains("cannot give"));
        // Without a confirm rule, no answer is needed.
        for consent in [None, Some(Consent::Allow)] {
            assert!(!needs_confirmation(&grant(consent)));
            assert!(check_confirmed("t", &grant(consent), None).is_ok());
        }
    }
}
