//! What authenticating a request costs `chainbox serve --auth-issuer`
//! with its key cache warm (no network: the issuer's keys are given):
//! `verified_again` is a client's next request with a token already
//! verified (a SHA-256 of the token and a lookup: the steady state);
//! `first_sight_es256` / `first_sight_eddsa` / `first_sight_rs256` are a
//! token's first request (the signature checked, the claims validated),
//! each iteration a new token (minting it is not timed).

use std::sync::Arc;

use aws_lc_rs::encoding::{AsDer, Pkcs8V1Der};
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair};
use chainbox::auth::{AuthConfig, Authenticator, KeySource};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

const ISSUER: &str = "https://id.example";
const RESOURCE: &str = "https://chains.example.com/mcp";

/// A signing key and its public JWK.
struct Key {
    alg: Algorithm,
    kid: &'static str,
    private: Arc<EncodingKey>,
    jwk: Value,
}

impl Key {
    fn new(alg: Algorithm, kid: &'static str, private: EncodingKey) -> Self {
        let mut jwk = Jwk::from_encoding_key(&private, alg).expect("JWK");
        jwk.common.key_id = Some(kid.to_owned());
        Self {
            alg,
            kid,
            private: Arc::new(private),
            jwk: serde_json::to_value(jwk).expect("JSON"),
        }
    }

    fn token(&self, n: u64) -> String {
        let now = jsonwebtoken::get_current_timestamp();
        let claims = json!({"iss": ISSUER, "sub": "alice", "aud": RESOURCE, "scope": "chainbox:run",
            "iat": now, "exp": now + 600, "jti": n});
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid.to_owned());
        jsonwebtoken::encode(&header, &claims, &self.private).expect("signing")
    }
}

/// A 2048-bit RSA key (aws-lc-rs makes it) and its public JWK: the
/// signer wants PKCS#1, the private key inside aws-lc-rs's PKCS#8.
fn rsa(kid: &'static str) -> Key {
    use aws_lc_rs::signature::KeyPair as _;
    let key = aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).expect("RSA key");
    let der = <aws_lc_rs::rsa::KeyPair as AsDer<Pkcs8V1Der<'static>>>::as_der(&key).expect("PKCS#8");
    let b64 = |bytes: &[u8]| base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, bytes);
    let public = key.public_key();
    Key {
        alg: Algorithm::RS256,
        kid,
        private: Arc::new(EncodingKey::from_rsa_der(pkcs1_of(der.as_ref()))),
        jwk: json!({"kty": "RSA", "kid": kid, "alg": "RS256",
            "n": b64(public.modulus().big_endian_without_leading_zero()),
            "e": b64(public.exponent().big_endian_without_leading_zero())}),
    }
}

/// The PKCS#1 key inside a PKCS#8 `PrivateKeyInfo` (SEQUENCE { version,
/// algorithm, OCTET STRING privateKey }).
fn pkcs1_of(pkcs8: &[u8]) -> &[u8] {
    // One DER element at the start of `b`: (tag, contents, the rest).
    fn element(b: &[u8]) -> (u8, &[u8], &[u8]) {
        let (tag, first) = (b[0], b[1]);
        let (len, at) = if first < 0x80 {
            (first as usize, 2)
        } else {
            let n = (first & 0x7f) as usize;
            (b[2..2 + n].iter().fold(0usize, |acc, &x| acc << 8 | x as usize), 2 + n)
        };
        (tag, &b[at..at + len], &b[at + len..])
    }
    let (_, info, _) = element(pkcs8);
    let (_, _, rest) = element(info); // version
    let (_, _, rest) = element(rest); // algorithm
    let (tag, key, _) = element(rest);
    assert_eq!(tag, 0x04, "PKCS#8 privateKey is an OCTET STRING");
    key
}

fn benches(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let rng = aws_lc_rs::rand::SystemRandom::new();
    let es = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("P-256");
    let ed = Ed25519KeyPair::generate_pkcs8v1(&rng).expect("Ed25519");
    let keys = [
        Key::new(Algorithm::ES256, "es", EncodingKey::from_ec_der(es.as_ref())),
        Key::new(Algorithm::EdDSA, "ed", EncodingKey::from_ed_der(ed.as_ref())),
        rsa("rs"),
    ];
    let config = AuthConfig::new(ISSUER, RESOURCE, None).expect("config");
    let set = json!({"keys": keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>()});
    let auth = Authenticator::with_keys(config.clone(), KeySource::fixed(&set, &config).expect("keys"));

    let mut group = c.benchmark_group("auth");
    let token = keys[0].token(0);
    runtime.block_on(auth.authenticate(&token)).expect("valid");
    group.bench_function("verified_again", |b| {
        b.iter(|| runtime.block_on(auth.authenticate(&token)).expect("valid"));
    });
    for (key, name) in keys
        .iter()
        .zip(["first_sight_es256", "first_sight_eddsa", "first_sight_rs256"])
    {
        let mut n = 0u64;
        group.bench_function(name, |b| {
            b.iter_batched(
                || {
                    n += 1;
                    key.token(n)
                },
                |token| runtime.block_on(auth.authenticate(&token)).expect("valid"),
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

criterion_group!(auth, benches);
criterion_main!(auth);
