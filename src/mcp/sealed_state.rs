//! The `requestState` of `chainbox serve --state`: a sealed note naming a
//! suspended durable chain, the call it waits on and the principal it
//! belongs to, so that its owner's retry can resume the chain on any node
//! that reaches the same store, and nobody else's can.
//!
//! A client echoes `requestState` back verbatim, and may change it: the
//! server trusts only what it sealed. The note ([`RequestState`]: chain id,
//! call number, issue time) is JSON, base64url, followed by its
//! HMAC-SHA256 tag under a [`StateKey`]: `cb1.<payload>.<tag>`. It is
//! authenticated, not encrypted (the chain id is no secret: knowing it
//! does not let anyone decide for the chain without a valid seal). The
//! key comes from `CHAINBOX_STATE_KEY`, or else from the store
//! ([`ChainStore::state_key`]), so every node on one store shares it.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE, URL_SAFE_NO_PAD};
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::store::{ChainStore, STATE_KEY_BYTES, StoreError};

/// The environment variable a sealing key may be given in.
pub const STATE_KEY_ENV: &str = "CHAINBOX_STATE_KEY";

/// The version prefix of a sealed state: a later format gets another.
const PREFIX: &str = "cb1";

type HmacSha256 = Hmac<Sha256>;

/// What a sealed `requestState` says: the chain, the call it waits on, and
/// whose it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestState {
    /// The durable chain.
    pub chain_id: String,
    /// The call the approval form asked about (its number in the chain).
    pub seq: u32,
    /// When the state was handed out (UTC, RFC 3339): for the logs.
    pub issued_at: String,
    /// The principal it was handed to (`None`: the local user, when the
    /// server authenticates nobody): only its retry is accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<crate::principal::Owner>,
}

/// The key a `requestState` is sealed with: at least 32 bytes. Its
/// `Debug` does not show it.
#[derive(Clone)]
pub struct StateKey(Vec<u8>);

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StateKey({} bytes)", self.0.len())
    }
}

/// A sealing key that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StateKeyError {
    /// The text is neither hex nor base64 (the key itself is never shown).
    #[error(
        "{STATE_KEY_ENV} is neither hex nor base64: give at least {STATE_KEY_BYTES} random bytes, \
         e.g. `openssl rand -hex 32`"
    )]
    Malformed,
    /// Fewer bytes than a key needs.
    #[error("{STATE_KEY_ENV} holds {bytes} bytes: a key needs at least {STATE_KEY_BYTES}")]
    TooShort {
        /// How many it holds.
        bytes: usize,
    },
    /// The store's key could not be read or created.
    #[error("the state key in the store: {0}")]
    Store(#[from] StoreError),
}

/// Why a `requestState` was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    /// Not a sealed state of this format at all.
    #[error("it is not a sealed chainbox state")]
    Malformed,
    /// Its seal does not match: forged, altered, or sealed under another key.
    #[error("its seal does not verify (forged, altered, or sealed under another key)")]
    BadSeal,
    /// Sealed by this key, but its payload does not read (another version).
    #[error("its payload does not read: {0}")]
    Payload(String),
}

impl StateKey {
    /// A key of these bytes ([`StateKeyError::TooShort`] under 32).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, StateKeyError> {
        if bytes.len() < STATE_KEY_BYTES {
            return Err(StateKeyError::TooShort { bytes: bytes.len() });
        }
        Ok(Self(bytes.to_vec()))
    }

    /// A key written as text: hex (an even number of hex digits only), or
    /// else base64 (standard or URL-safe, padded or not); at least 32 bytes
    /// either way. Surrounding whitespace is ignored.
    pub fn parse(text: &str) -> Result<Self, StateKeyError> {
        let text = text.trim();
        let bytes = if !text.is_empty() && text.len().is_multiple_of(2) && text.bytes().all(|b| b.is_ascii_hexdigit()) {
            text.as_bytes()
                .chunks(2)
                .map(|pair| {
                    std::str::from_utf8(pair)
                        .ok()
                        .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                        .ok_or(StateKeyError::Malformed)
                })
                .collect::<Result<Vec<u8>, _>>()?
        } else {
            [
                &STANDARD,
                &URL_SAFE,
                &URL_SAFE_NO_PAD,
                &base64::engine::general_purpose::STANDARD_NO_PAD,
            ]
            .iter()
            .find_map(|engine| engine.decode(text).ok())
            .ok_or(StateKeyError::Malformed)?
        };
        Self::from_bytes(&bytes)
    }

    /// The key of `CHAINBOX_STATE_KEY` if it is set, else the store's
    /// (created on first use, shared by every process on the store).
    pub async fn from_env_or_store(store: &dyn ChainStore) -> Result<Self, StateKeyError> {
        match std::env::var(STATE_KEY_ENV) {
            Ok(text) => Self::parse(&text),
            Err(std::env::VarError::NotUnicode(_)) => Err(StateKeyError::Malformed),
            Err(std::env::VarError::NotPresent) => Self::from_bytes(&store.state_key().await?),
        }
    }

    fn mac(&self) -> HmacSha256 {
        // HMAC takes a key of any length.
        HmacSha256::new_from_slice(&self.0).unwrap_or_else(|_| unreachable!("HMAC accepts any key length"))
    }

    /// `state` sealed: `cb1.<payload>.<tag>`, both base64url.
    pub fn seal(&self, state: &RequestState) -> String {
        // A struct of strings and a number always serializes.
        let json = serde_json::to_vec(state).unwrap_or_default();
        let signed = format!("{PREFIX}.{}", URL_SAFE_NO_PAD.encode(json));
        let mut mac = self.mac();
        mac.update(signed.as_bytes());
        let tag = mac.finalize().into_bytes();
        format!("{signed}.{}", URL_SAFE_NO_PAD.encode(tag))
    }

    /// The state `text` seals, if this key sealed it (checked in constant
    /// time) and nobody changed a byte of it since.
    pub fn open(&self, text: &str) -> Result<RequestState, OpenError> {
        let (signed, tag) = text.rsplit_once('.').ok_or(OpenError::Malformed)?;
        let payload = signed
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.strip_prefix('.'))
            .ok_or(OpenError::Malformed)?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| OpenError::Malformed)?;
        let mut mac = self.mac();
        mac.update(signed.as_bytes());
        mac.verify_slice(&tag).map_err(|_| OpenError::BadSeal)?;
        let json = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|e| OpenError::Payload(e.to_string()))?;
        serde_json::from_slice(&json).map_err(|e| OpenError::Payload(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> RequestState {
        RequestState {
            chain_id: "chain_1".into(),
            seq: 2,
            issued_at: "2026-12-06T12:00:00Z".into(),
            owner: Some(crate::principal::Owner {
                issuer: "https://id.example".into(),
                subject: "alice".into(),
            }),
        }
    }

    fn key(byte: u8) -> StateKey {
        StateKey::from_bytes(&[byte; 32]).expect("a key")
    }

    #[test]
    fn a_sealed_state_opens_under_its_key_only() {
        let sealed = key(1).seal(&state());
        assert_eq!(key(1).open(&sealed), Ok(state()));
        assert_eq!(key(2).open(&sealed), Err(OpenError::BadSeal));
    }

    #[test]
    fn any_changed_byte_breaks_the_seal() {
        let sealed = key(1).seal(&state());
        for i in 0..sealed.len() {
            let mut bytes = sealed.clone().into_bytes();
            bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
            let altered = String::from_utf8(bytes).expect("ASCII");
            assert!(key(1).open(&altered).is_err(), "byte {i} altered still opens");
        }
        assert_eq!(key(1).open("anything"), Err(OpenError::Malformed));
    }

    #[test]
    fn a_key_is_hex_or_base64_of_at_least_32_bytes() {
        let hex = "00".repeat(32);
        assert_eq!(StateKey::parse(&hex).expect("hex").0, vec![0; 32]);
        let b64 = STANDARD.encode([7u8; 48]);
        assert_eq!(StateKey::parse(&b64).expect("base64").0, vec![7; 48]);
        assert!(matches!(
            StateKey::parse(&"ab".repeat(16)),
            Err(StateKeyError::TooShort { bytes: 16 })
        ));
        assert!(matches!(StateKey::parse("not a key!"), Err(StateKeyError::Malformed)));
        assert!(matches!(StateKey::parse(""), Err(StateKeyError::TooShort { bytes: 0 })));
    }
}
