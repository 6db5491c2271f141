//! Who a chain runs for. `chainbox serve` over HTTP with an identity
//! provider authenticates every request by its bearer token (see
//! [`crate::auth`]); the token's issuer and subject name a [`Principal`],
//! and its scopes say what it may do. A chain records its principal's
//! [`Owner`] in the chain store, its sealed `requestState`s name it, and
//! the invoker checks a tool's `required_scopes` against its scopes.
//!
//! A chain with no principal (the CLI, `serve` over stdio, `serve` on
//! loopback without `--auth-issuer`) runs for the local user, the
//! operator: no scope restricts it, and it may decide and resume any
//! chain in its store. An authenticated principal acts only on chains it
//! owns.

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};

/// Who owns a chain: an identity provider (`iss`) and the subject it
/// vouches for (`sub`). Two issuers may use the same subject for two
/// people, so both are compared, never the subject alone.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Owner {
    /// The token's `iss`: the authorization server's issuer URL.
    pub issuer: String,
    /// The token's `sub`.
    pub subject: String,
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.subject, self.issuer)
    }
}

/// An authenticated caller: who it is and the scopes its token grants.
/// Never holds the token itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Principal {
    /// Who it is.
    pub owner: Owner,
    /// The token's scopes (`scope`, space-separated, or `scp`).
    pub scopes: BTreeSet<String>,
    /// The OAuth client the token was issued to (`client_id` or `azp`),
    /// when the token names one: for audit lines only.
    pub client_id: Option<String>,
}

impl Principal {
    /// A principal with these scopes and no client id.
    pub fn new(
        issuer: impl Into<String>,
        subject: impl Into<String>,
        scopes: impl IntoIterator<Item = String>,
    ) -> Self {
        Self {
            owner: Owner {
                issuer: issuer.into(),
                subject: subject.into(),
            },
            scopes: scopes.into_iter().collect(),
            client_id: None,
        }
    }

    /// Whether its token grants `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.contains(scope)
    }

    /// The first of `required` its token does not grant, if any.
    pub fn missing_scope<'a>(&self, required: impl IntoIterator<Item = &'a String>) -> Option<&'a str> {
        required.into_iter().find(|s| !self.has_scope(s)).map(String::as_str)
    }
}

/// Whether a caller (`None`: the local user) may act on a chain owned by
/// `owner` (`None`: a chain started by the local user): the local user
/// may act on every chain, a principal only on its own.
pub fn may_act_on(caller: Option<&Principal>, owner: Option<&Owner>) -> bool {
    match caller {
        None => true,
        Some(principal) => owner == Some(&principal.owner),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alice() -> Principal {
        Principal::new("https://id.example", "alice", ["chainbox:run".to_owned()])
    }

    #[test]
    fn a_principal_acts_only_on_chains_it_owns() {
        let alice = alice();
        let bob = Principal::new("https://id.example", "bob", []);
        assert!(may_act_on(Some(&alice), Some(&alice.owner)));
        assert!(!may_act_on(Some(&bob), Some(&alice.owner)));
        assert!(
            !may_act_on(Some(&alice), None),
            "a local user's chain is no principal's"
        );
    }

    #[test]
    fn the_same_subject_from_another_issuer_is_another_owner() {
        let alice = alice();
        let impostor = Principal::new("https://other.example", "alice", []);
        assert!(!may_act_on(Some(&impostor), Some(&alice.owner)));
    }

    #[test]
    fn the_local_user_acts_on_every_chain() {
        assert!(may_act_on(None, Some(&alice().owner)));
        assert!(may_act_on(None, None));
    }

    #[test]
    fn missing_scope_names_the_first_scope_not_granted() {
        let required = vec!["chainbox:run".to_owned(), "payments:write".to_owned()];
        assert_eq!(alice().missing_scope(&required), Some("payments:write"));
        assert_eq!(alice().missing_scope(&required[..1]), None);
    }
}
