//! JWTs a client signs to prove who it is at a token endpoint (`private_key_jwt`, RFC 7523
//! section 2.2): signed here with ring (the crypto rustls already uses), from a PKCS#8 key in
//! PEM, ES256 or RS256. Nothing of the key leaves this module but signatures.

use anyhow::{Context, Result, bail};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::json;

/// How long an assertion is good for: one token request.
const LIFETIME_S: i64 = 300;

/// A signed assertion that `client_id` is asking `audience` (the authorization server's
/// issuer, or its token endpoint) for a token, with a fresh `jti`.
pub fn sign(client_id: &str, audience: &str, key_pem: &str, algorithm: &str) -> Result<String> {
    let der = pem_body(key_pem)?;
    let now = chrono::Utc::now().timestamp();
    let header = json!({"alg": algorithm, "typ": "JWT"});
    let claims = json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + LIFETIME_S,
        "jti": format!("{:032x}", fastrand::u128(..)),
    });
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let rng = ring::rand::SystemRandom::new();
    let signature = match algorithm {
        "ES256" => {
            let key = ring::signature::EcdsaKeyPair::from_pkcs8(
                &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
                &der,
                &rng,
            )
            .map_err(|e| anyhow::anyhow!("the private key is no P-256 PKCS#8 key: {e}"))?;
            key.sign(&rng, signing_input.as_bytes())
                .map_err(|_| anyhow::anyhow!("signing the client assertion failed"))?
                .as_ref()
                .to_vec()
        }
        "RS256" => {
            let key = ring::signature::RsaKeyPair::from_pkcs8(&der)
                .map_err(|e| anyhow::anyhow!("the private key is no RSA PKCS#8 key: {e}"))?;
            let mut signature = vec![0; key.public().modulus_len()];
            key.sign(
                &ring::signature::RSA_PKCS1_SHA256,
                &rng,
                signing_input.as_bytes(),
                &mut signature,
            )
            .map_err(|_| anyhow::anyhow!("signing the client assertion failed"))?;
            signature
        }
        other => bail!("signing_algorithm {other:?}: ES256 or RS256"),
    };
    Ok(format!(
        "{signing_input}.{}",
        URL_SAFE_NO_PAD.encode(signature)
    ))
}

/// The DER inside a PEM `PRIVATE KEY` block (PKCS#8).
fn pem_body(pem: &str) -> Result<Vec<u8>> {
    let begin = "-----BEGIN PRIVATE KEY-----";
    let end = "-----END PRIVATE KEY-----";
    let Some(from) = pem.find(begin) else {
        bail!("the private key is no PEM `PRIVATE KEY` (PKCS#8) block");
    };
    let body = &pem[from + begin.len()..];
    let body = &body[..body.find(end).context("the PEM block has no end line")?];
    let text: String = body.split_whitespace().collect();
    STANDARD.decode(text).context("the PEM block is not base64")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A P-256 key made by ring itself, as PEM.
    fn p256_pem() -> String {
        let rng = ring::rand::SystemRandom::new();
        let der = ring::signature::EcdsaKeyPair::generate_pkcs8(
            &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            &rng,
        )
        .unwrap();
        format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            STANDARD.encode(der.as_ref())
        )
    }

    #[test]
    fn an_es256_assertion_verifies_with_the_keys_public_half_and_names_client_and_audience() {
        let pem = p256_pem();
        let jwt = sign("client-1", "https://as.example", &pem, "ES256").unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(claims["iss"], "client-1");
        assert_eq!(claims["sub"], "client-1");
        assert_eq!(claims["aud"], "https://as.example");
        assert!(claims["exp"].as_i64().unwrap() > claims["iat"].as_i64().unwrap());
        let rng = ring::rand::SystemRandom::new();
        let key = ring::signature::EcdsaKeyPair::from_pkcs8(
            &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            &pem_body(&pem).unwrap(),
            &rng,
        )
        .unwrap();
        use ring::signature::KeyPair;
        let public = ring::signature::UnparsedPublicKey::new(
            &ring::signature::ECDSA_P256_SHA256_FIXED,
            key.public_key().as_ref(),
        );
        let signed = format!("{}.{}", parts[0], parts[1]);
        public
            .verify(
                signed.as_bytes(),
                &URL_SAFE_NO_PAD.decode(parts[2]).unwrap(),
            )
            .unwrap();
        // Two assertions never share a jti.
        let again = sign("client-1", "https://as.example", &pem, "ES256").unwrap();
        assert_ne!(jwt.split('.').nth(1), again.split('.').nth(1));
    }

    #[test]
    fn a_key_that_is_no_pem_or_an_unknown_algorithm_is_refused_saying_so() {
        let e = sign("c", "a", "not a key", "ES256").unwrap_err();
        assert!(format!("{e:#}").contains("PEM"), "{e:#}");
        let e = sign("c", "a", &p256_pem(), "HS256").unwrap_err();
        assert!(format!("{e:#}").contains("ES256 or RS256"), "{e:#}");
    }
}
