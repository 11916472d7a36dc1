//! Authentication and tenancy: who a request is ([`Access`]), how a bearer token proves it
//! ([`Authenticator`], JWT via the `jsonwebtoken` crate), and the scopes an operation needs.
//!
//! The transport turns the `Authorization` header into an [`Access`]; the request context
//! hands it to the read and write layers, which check ownership of everything they load
//! (see `loaders` and `repo::writes`). Nothing here knows about GraphQL or HTTP types beyond
//! the header's text.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::builder::BoolishValueParser;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use crate::ids::TenantId;

/// What a scope lets a caller do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Permission {
    /// Run queries (`grid:read`).
    Read,
    /// Run mutations on the caller's tenant (`grid:write`).
    Write,
    /// Create tenants (`grid:admin`).
    Admin,
}

impl Permission {
    pub fn scope(self) -> &'static str {
        match self {
            Permission::Read => "grid:read",
            Permission::Write => "grid:write",
            Permission::Admin => "grid:admin",
        }
    }

    fn from_scope(scope: &str) -> Option<Self> {
        match scope {
            "grid:read" => Some(Permission::Read),
            "grid:write" => Some(Permission::Write),
            "grid:admin" => Some(Permission::Admin),
            _ => None,
        }
    }
}

/// An authenticated caller: the token's subject, the one tenant it belongs to, and what it
/// may do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal {
    pub subject: String,
    pub tenant: TenantId,
    pub permissions: HashSet<Permission>,
}

/// Who a request runs as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// `--auth none` (local development) and the operator's own tools: every tenant.
    Unrestricted,
    /// A caller confined to its tenant.
    Tenant(Arc<Principal>),
}

impl Access {
    /// Whether rows of `tenant` are visible to this caller. Everything of another tenant
    /// behaves exactly like something that does not exist.
    pub fn sees(&self, tenant: &TenantId) -> bool {
        match self {
            Access::Unrestricted => true,
            Access::Tenant(p) => p.tenant == *tenant,
        }
    }

    /// Whether the caller holds `permission`.
    pub fn may(&self, permission: Permission) -> bool {
        match self {
            Access::Unrestricted => true,
            Access::Tenant(p) => p.permissions.contains(&permission),
        }
    }

    /// A string naming the caller, for keys that must not be shared between callers
    /// (idempotency records): empty when unrestricted, else the tenant and a SHA-256 of the
    /// subject (fixed length whatever the identity provider puts in `sub`, and no separator
    /// in it can make two callers' keys collide).
    pub fn partition(&self) -> String {
        use sha2::Digest;
        match self {
            Access::Unrestricted => String::new(),
            Access::Tenant(p) => {
                let digest = sha2::Sha256::digest(p.subject.as_bytes());
                let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
                format!("{}#{hex}", p.tenant)
            }
        }
    }
}

/// The claims gridgate reads from a token.
#[derive(Debug, Serialize, Deserialize)]
pub struct Claims {
    pub sub: String,
    pub tenant: String,
    /// Space-separated scopes.
    #[serde(default)]
    pub scope: String,
    pub exp: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iss: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aud: Option<String>,
}

/// Why a request is not authenticated. The messages are what clients see: they say what is
/// wrong with the credentials without echoing them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("missing credentials: send `Authorization: Bearer <token>`")]
    Missing,
    #[error("the Authorization header must be `Bearer <token>`")]
    Malformed,
    #[error("the token has expired")]
    Expired,
    #[error("the token is not valid: {0}")]
    Invalid(&'static str),
    #[error(
        "the token expires more than {max_secs} seconds from now, past the longest token \
         lifetime this server accepts"
    )]
    TooLong { max_secs: u64 },
}

/// How the server verifies callers, from the command line.
#[derive(Clone, Debug, clap::Args)]
pub struct AuthArgs {
    /// `none` (local development only: every caller sees every tenant) or `jwt`.
    #[arg(long, env = "GRIDGATE_AUTH", value_enum, default_value_t = AuthMode::None)]
    pub auth: AuthMode,
    /// Serve without authentication on a non-loopback address (never in production).
    #[arg(long, env = "GRIDGATE_ALLOW_UNAUTHENTICATED", value_parser = BoolishValueParser::new())]
    pub allow_unauthenticated: bool,
    /// HS256 shared secret for `--auth jwt` (also signs tokens made by `gridgate token`).
    #[arg(long, env = "GRIDGATE_JWT_SECRET", hide_env_values = true)]
    pub jwt_secret: Option<String>,
    /// A PEM public key (RSA for RS256, EC P-256 for ES256).
    #[arg(long, env = "GRIDGATE_JWT_PUBLIC_KEY")]
    pub jwt_public_key: Option<PathBuf>,
    /// A JWKS file of public keys, chosen by the token's `kid` (read once; no network fetch).
    #[arg(long, env = "GRIDGATE_JWT_JWKS")]
    pub jwt_jwks: Option<PathBuf>,
    /// The signing algorithm: HS256, RS256 or ES256 (default: HS256 with a secret, else
    /// inferred from the PEM key; required with a JWKS).
    #[arg(long, env = "GRIDGATE_JWT_ALGORITHM")]
    pub jwt_algorithm: Option<String>,
    /// Required `iss` claim.
    #[arg(long, env = "GRIDGATE_JWT_ISSUER")]
    pub jwt_issuer: Option<String>,
    /// Required `aud` claim.
    #[arg(long, env = "GRIDGATE_JWT_AUDIENCE")]
    pub jwt_audience: Option<String>,
    /// The longest a token may still be valid, in seconds: a token whose `exp` lies further
    /// in the future is refused, so a leaked token minted (by mistake or by a compromised
    /// issuer) to last for years is not honoured for years.
    #[arg(long, env = "GRIDGATE_JWT_MAX_LIFETIME", default_value_t = DEFAULT_MAX_TOKEN_LIFETIME_SECS,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub jwt_max_lifetime: u64,
}

/// Default of `--jwt-max-lifetime`: a day, the usual ceiling of identity providers' access
/// tokens (Auth0's default is 24 hours; most issue tokens of an hour).
pub const DEFAULT_MAX_TOKEN_LIFETIME_SECS: u64 = 24 * 60 * 60;

impl Default for AuthArgs {
    fn default() -> Self {
        AuthArgs {
            auth: AuthMode::None,
            allow_unauthenticated: false,
            jwt_secret: None,
            jwt_public_key: None,
            jwt_jwks: None,
            jwt_algorithm: None,
            jwt_issuer: None,
            jwt_audience: None,
            jwt_max_lifetime: DEFAULT_MAX_TOKEN_LIFETIME_SECS,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum AuthMode {
    None,
    Jwt,
}

/// A configuration the server cannot start with.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

/// Verifies requests' credentials.
#[derive(Default)]
pub enum Authenticator {
    #[default]
    /// Every request is [`Access::Unrestricted`].
    None,
    Jwt(Box<JwtVerifier>),
}

/// The keys and rules a token is checked against.
pub struct JwtVerifier {
    keys: Keys,
    validation: Validation,
    /// The furthest in the future a token's `exp` may lie.
    max_lifetime: Duration,
}

enum Keys {
    One(DecodingKey),
    /// By `kid`.
    Set(Vec<(Option<String>, DecodingKey)>),
}

fn parse_algorithm(name: &str) -> Result<Algorithm, ConfigError> {
    match name.to_ascii_uppercase().as_str() {
        "HS256" => Ok(Algorithm::HS256),
        "RS256" => Ok(Algorithm::RS256),
        "ES256" => Ok(Algorithm::ES256),
        other => Err(ConfigError(format!(
            "--jwt-algorithm {other}: supported are HS256, RS256 and ES256"
        ))),
    }
}

impl Authenticator {
    /// Builds the verifier the arguments describe, reading key files once.
    pub fn from_args(args: &AuthArgs) -> Result<Self, ConfigError> {
        if args.auth == AuthMode::None {
            return Ok(Authenticator::None);
        }
        let sources = [
            args.jwt_secret.is_some(),
            args.jwt_public_key.is_some(),
            args.jwt_jwks.is_some(),
        ];
        if sources.iter().filter(|s| **s).count() != 1 {
            return Err(ConfigError(
                "--auth jwt needs exactly one of --jwt-secret, --jwt-public-key or --jwt-jwks"
                    .into(),
            ));
        }
        let pinned = args
            .jwt_algorithm
            .as_deref()
            .map(parse_algorithm)
            .transpose()?;
        let read = |path: &PathBuf| {
            std::fs::read(path)
                .map_err(|e| ConfigError(format!("cannot read {}: {e}", path.display())))
        };
        let (algorithm, keys) = if let Some(secret) = &args.jwt_secret {
            if secret.len() < 32 {
                return Err(ConfigError(
                    "--jwt-secret must be at least 32 bytes (HS256 keys shorter than the hash \
                     are guessable)"
                        .into(),
                ));
            }
            let algorithm = pinned.unwrap_or(Algorithm::HS256);
            if algorithm != Algorithm::HS256 {
                return Err(ConfigError("a --jwt-secret only verifies HS256".into()));
            }
            (
                algorithm,
                Keys::One(DecodingKey::from_secret(secret.as_bytes())),
            )
        } else if let Some(path) = &args.jwt_public_key {
            let pem = read(path)?;
            let text = String::from_utf8_lossy(&pem);
            let algorithm = match pinned {
                Some(a) => a,
                None if text.contains("RSA") || DecodingKey::from_rsa_pem(&pem).is_ok() => {
                    Algorithm::RS256
                }
                None => Algorithm::ES256,
            };
            let key = match algorithm {
                Algorithm::RS256 => DecodingKey::from_rsa_pem(&pem),
                Algorithm::ES256 => DecodingKey::from_ec_pem(&pem),
                _ => {
                    return Err(ConfigError(
                        "a --jwt-public-key verifies RS256 or ES256".into(),
                    ))
                }
            }
            .map_err(|e| {
                ConfigError(format!("{}: not a usable public key: {e}", path.display()))
            })?;
            (algorithm, Keys::One(key))
        } else {
            let path = args
                .jwt_jwks
                .as_ref()
                .ok_or_else(|| ConfigError("no key".into()))?;
            let algorithm = pinned.ok_or_else(|| {
                ConfigError("--jwt-jwks needs --jwt-algorithm (RS256 or ES256)".into())
            })?;
            let set: JwkSet = serde_json::from_slice(&read(path)?)
                .map_err(|e| ConfigError(format!("{}: not a JWKS: {e}", path.display())))?;
            let keys = set
                .keys
                .iter()
                .map(|jwk| {
                    DecodingKey::from_jwk(jwk)
                        .map(|key| (jwk.common.key_id.clone(), key))
                        .map_err(|e| ConfigError(format!("{}: {e}", path.display())))
                })
                .collect::<Result<Vec<_>, _>>()?;
            if keys.is_empty() {
                return Err(ConfigError(format!(
                    "{}: the JWKS has no keys",
                    path.display()
                )));
            }
            (algorithm, Keys::Set(keys))
        };
        let mut validation = Validation::new(algorithm);
        // A configured issuer or audience must be present, not merely right when present.
        let mut required = vec!["exp", "sub"];
        if args.jwt_issuer.is_some() {
            required.push("iss");
        }
        if args.jwt_audience.is_some() {
            required.push("aud");
        }
        validation.set_required_spec_claims(&required);
        // Tokens are short-lived; a small leeway absorbs clock skew between issuer and server.
        validation.leeway = 30;
        // A token not valid yet (`nbf` in the future) is refused like an expired one.
        validation.validate_nbf = true;
        match &args.jwt_issuer {
            Some(issuer) => validation.set_issuer(&[issuer]),
            None => validation.iss = None,
        }
        match &args.jwt_audience {
            Some(audience) => validation.set_audience(&[audience]),
            None => validation.validate_aud = false,
        }
        Ok(Authenticator::Jwt(Box::new(JwtVerifier {
            keys,
            validation,
            max_lifetime: Duration::from_secs(args.jwt_max_lifetime),
        })))
    }

    pub fn is_enabled(&self) -> bool {
        matches!(self, Authenticator::Jwt(_))
    }

    /// Who the request with this `Authorization` header value is.
    pub fn authenticate(&self, authorization: Option<&str>) -> Result<Access, AuthError> {
        let Authenticator::Jwt(verifier) = self else {
            return Ok(Access::Unrestricted);
        };
        let header = authorization.ok_or(AuthError::Missing)?;
        // The scheme is case-insensitive (RFC 7235, section 2.1): `Bearer`, `bearer`, `BEARER`.
        let token = header
            .trim_start()
            .split_once(' ')
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim())
            .filter(|t| !t.is_empty())
            .ok_or(AuthError::Malformed)?;
        verifier.verify(token)
    }
}

/// The longest `sub` accepted: identity providers use ids of a few dozen bytes.
const MAX_SUBJECT_BYTES: usize = 256;

/// The longest token accepted: real tokens are a few hundred bytes; the header limit bounds
/// it anyway, this keeps decoding cheap.
const MAX_TOKEN_BYTES: usize = 8 * 1024;

impl JwtVerifier {
    fn verify(&self, token: &str) -> Result<Access, AuthError> {
        use jsonwebtoken::errors::ErrorKind;
        if token.len() > MAX_TOKEN_BYTES {
            return Err(AuthError::Invalid("too long"));
        }
        // The header names the key (`kid`); its `alg` is checked against the pinned one by
        // `Validation`, so a token cannot pick a weaker algorithm (or `none`, which the crate
        // does not even parse).
        let header =
            jsonwebtoken::decode_header(token).map_err(|_| AuthError::Invalid("malformed"))?;
        let key = match &self.keys {
            Keys::One(key) => key,
            Keys::Set(keys) => keys
                .iter()
                .find(|(kid, _)| header.kid.is_none() || *kid == header.kid)
                .map(|(_, key)| key)
                .ok_or(AuthError::Invalid("unknown key id"))?,
        };
        let data =
            jsonwebtoken::decode::<Claims>(token, key, &self.validation).map_err(|e| {
                match e.kind() {
                    ErrorKind::ExpiredSignature => AuthError::Expired,
                    ErrorKind::InvalidSignature => AuthError::Invalid("bad signature"),
                    ErrorKind::InvalidAlgorithm => AuthError::Invalid("wrong algorithm"),
                    ErrorKind::InvalidIssuer => AuthError::Invalid("wrong issuer"),
                    ErrorKind::InvalidAudience => AuthError::Invalid("wrong audience"),
                    ErrorKind::MissingRequiredClaim(_) => AuthError::Invalid("missing claim"),
                    _ => AuthError::Invalid("malformed"),
                }
            })?;
        let claims = data.claims;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let latest = now
            .saturating_add(self.max_lifetime.as_secs())
            .saturating_add(self.validation.leeway);
        if claims.exp > latest {
            return Err(AuthError::TooLong {
                max_secs: self.max_lifetime.as_secs(),
            });
        }
        if claims.sub.is_empty() || claims.sub.len() > MAX_SUBJECT_BYTES {
            return Err(AuthError::Invalid("bad subject claim"));
        }
        let tenant =
            TenantId::parse(&claims.tenant).map_err(|_| AuthError::Invalid("bad tenant claim"))?;
        let permissions = claims
            .scope
            .split_ascii_whitespace()
            .filter_map(Permission::from_scope)
            .collect();
        Ok(Access::Tenant(Arc::new(Principal {
            subject: claims.sub,
            tenant,
            permissions,
        })))
    }
}

/// Signs an HS256 token (the `gridgate token` subcommand, and tests).
pub fn mint_hs256(
    secret: &str,
    subject: &str,
    tenant: &str,
    scope: &str,
    ttl: Duration,
    issuer: Option<&str>,
    audience: Option<&str>,
) -> Result<String, ConfigError> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let claims = Claims {
        sub: subject.into(),
        tenant: tenant.into(),
        scope: scope.into(),
        exp: now.saturating_add(ttl.as_secs()),
        iss: issuer.map(Into::into),
        aud: audience.map(Into::into),
    };
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(secret.as_bytes()),
    )
    .map_err(|e| ConfigError(format!("cannot sign the token: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "0123456789abcdef0123456789abcdef";

    fn jwt() -> Authenticator {
        Authenticator::from_args(&AuthArgs {
            auth: AuthMode::Jwt,
            jwt_secret: Some(SECRET.into()),
            ..AuthArgs::default()
        })
        .unwrap()
    }

    #[test]
    fn a_minted_token_authenticates_its_tenant_and_scopes() {
        let token = mint_hs256(
            SECRET,
            "alice",
            "tenant-1",
            "grid:read other",
            Duration::from_secs(60),
            None,
            None,
        )
        .unwrap();
        let access = jwt()
            .authenticate(Some(&format!("Bearer {token}")))
            .unwrap();
        let Access::Tenant(p) = &access else {
            panic!("expected a tenant principal")
        };
        assert_eq!(p.tenant.as_str(), "tenant-1");
        assert!(access.may(Permission::Read));
        assert!(!access.may(Permission::Write));
        assert!(access.sees(&TenantId::parse("tenant-1").unwrap()));
        assert!(!access.sees(&TenantId::parse("tenant-2").unwrap()));
    }

    #[test]
    fn refusals() {
        let auth = jwt();
        assert_eq!(auth.authenticate(None), Err(AuthError::Missing));
        assert_eq!(
            auth.authenticate(Some("Basic x")),
            Err(AuthError::Malformed)
        );
        let other = mint_hs256(
            "another-secret-another-secret-xx",
            "a",
            "tenant-1",
            "grid:read",
            Duration::from_secs(60),
            None,
            None,
        )
        .unwrap();
        assert_eq!(
            auth.authenticate(Some(&format!("Bearer {other}"))),
            Err(AuthError::Invalid("bad signature"))
        );
    }

    fn minted(ttl: Duration) -> String {
        mint_hs256(SECRET, "a", "tenant-1", "grid:read", ttl, None, None).unwrap()
    }

    #[test]
    fn the_scheme_is_case_insensitive() {
        let auth = jwt();
        let token = minted(Duration::from_secs(60));
        for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
            let header = format!("{scheme} {token}");
            assert!(auth.authenticate(Some(&header)).is_ok(), "{scheme}");
        }
        for header in [
            format!("Bearer{token}"),
            "Bearer ".into(),
            format!("Token {token}"),
        ] {
            assert_eq!(auth.authenticate(Some(&header)), Err(AuthError::Malformed));
        }
    }

    #[test]
    fn a_token_valid_for_longer_than_the_maximum_is_refused() {
        let auth = Authenticator::from_args(&AuthArgs {
            auth: AuthMode::Jwt,
            jwt_secret: Some(SECRET.into()),
            jwt_max_lifetime: 3600,
            ..AuthArgs::default()
        })
        .unwrap();
        let fits = minted(Duration::from_secs(3600));
        assert!(auth.authenticate(Some(&format!("Bearer {fits}"))).is_ok());
        let too_long = minted(Duration::from_secs(3600 + 120));
        assert_eq!(
            auth.authenticate(Some(&format!("Bearer {too_long}"))),
            Err(AuthError::TooLong { max_secs: 3600 })
        );
        // `exp` = 2^63: never expires, so never accepted.
        let forever = jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &Claims {
                sub: "a".into(),
                tenant: "tenant-1".into(),
                scope: "grid:read".into(),
                exp: 1 << 63,
                iss: None,
                aud: None,
            },
            &EncodingKey::from_secret(SECRET.as_bytes()),
        )
        .unwrap();
        assert_eq!(
            jwt().authenticate(Some(&format!("Bearer {forever}"))),
            Err(AuthError::TooLong {
                max_secs: DEFAULT_MAX_TOKEN_LIFETIME_SECS
            })
        );
    }

    const RSA_PRIVATE: &[u8] = include_bytes!("../tests/fixtures/jwt/rsa_private.pem");
    const EC_PRIVATE: &[u8] = include_bytes!("../tests/fixtures/jwt/ec_private.pem");
    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/jwt");

    fn claims() -> Claims {
        Claims {
            sub: "svc".into(),
            tenant: "tenant-1".into(),
            scope: "grid:read".into(),
            exp: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_secs()
                + 60,
            iss: None,
            aud: None,
        }
    }

    fn sign(alg: Algorithm, kid: Option<&str>, key: &EncodingKey) -> String {
        let mut header = Header::new(alg);
        header.kid = kid.map(Into::into);
        jsonwebtoken::encode(&header, &claims(), key).unwrap()
    }

    fn verifier(args: AuthArgs) -> Authenticator {
        Authenticator::from_args(&AuthArgs {
            auth: AuthMode::Jwt,
            ..args
        })
        .unwrap()
    }

    #[test]
    fn rs256_and_es256_public_keys_verify_and_pin_their_algorithm() {
        let rsa = EncodingKey::from_rsa_pem(RSA_PRIVATE).unwrap();
        let ec = EncodingKey::from_ec_pem(EC_PRIVATE).unwrap();
        let by_rsa = verifier(AuthArgs {
            jwt_public_key: Some(format!("{FIXTURES}/rsa_public.pem").into()),
            ..AuthArgs::default()
        });
        let by_ec = verifier(AuthArgs {
            jwt_public_key: Some(format!("{FIXTURES}/ec_public.pem").into()),
            ..AuthArgs::default()
        });
        let rs = format!("Bearer {}", sign(Algorithm::RS256, None, &rsa));
        let es = format!("Bearer {}", sign(Algorithm::ES256, None, &ec));
        assert!(by_rsa.authenticate(Some(&rs)).is_ok());
        assert!(by_ec.authenticate(Some(&es)).is_ok());
        // Each verifier takes only its own algorithm.
        assert!(by_rsa.authenticate(Some(&es)).is_err());
        assert!(by_ec.authenticate(Some(&rs)).is_err());
        // An HS256 token "signed" with the public key's bytes (the classic confusion attack).
        let public = std::fs::read(format!("{FIXTURES}/rsa_public.pem")).unwrap();
        let confused = sign(Algorithm::HS256, None, &EncodingKey::from_secret(&public));
        assert_eq!(
            by_rsa.authenticate(Some(&format!("Bearer {confused}"))),
            Err(AuthError::Invalid("wrong algorithm"))
        );
    }

    #[test]
    fn jwks_keys_are_chosen_by_kid() {
        let rsa = EncodingKey::from_rsa_pem(RSA_PRIVATE).unwrap();
        let jwks = verifier(AuthArgs {
            jwt_jwks: Some(format!("{FIXTURES}/jwks.json").into()),
            jwt_algorithm: Some("RS256".into()),
            ..AuthArgs::default()
        });
        let good = sign(Algorithm::RS256, Some("rsa-1"), &rsa);
        assert!(jwks.authenticate(Some(&format!("Bearer {good}"))).is_ok());
        let unknown = sign(Algorithm::RS256, Some("rsa-9"), &rsa);
        assert_eq!(
            jwks.authenticate(Some(&format!("Bearer {unknown}"))),
            Err(AuthError::Invalid("unknown key id"))
        );
        // The EC key of the set does not verify an RS256 signature.
        let wrong_key = sign(Algorithm::RS256, Some("ec-1"), &rsa);
        assert!(jwks
            .authenticate(Some(&format!("Bearer {wrong_key}")))
            .is_err());
    }

    #[test]
    fn issuer_and_audience_are_checked_when_configured() {
        let auth = verifier(AuthArgs {
            jwt_secret: Some(SECRET.into()),
            jwt_issuer: Some("https://issuer".into()),
            jwt_audience: Some("gridgate".into()),
            ..AuthArgs::default()
        });
        let token = |iss: Option<&str>, aud: Option<&str>| {
            let t = mint_hs256(
                SECRET,
                "a",
                "tenant-1",
                "grid:read",
                Duration::from_secs(60),
                iss,
                aud,
            )
            .unwrap();
            auth.authenticate(Some(&format!("Bearer {t}")))
        };
        assert!(token(Some("https://issuer"), Some("gridgate")).is_ok());
        assert!(token(Some("https://other"), Some("gridgate")).is_err());
        assert!(token(Some("https://issuer"), Some("other")).is_err());
        assert!(token(None, Some("gridgate")).is_err());
    }

    #[test]
    fn short_secrets_are_refused() {
        let args = AuthArgs {
            auth: AuthMode::Jwt,
            jwt_secret: Some("short".into()),
            ..AuthArgs::default()
        };
        assert!(Authenticator::from_args(&args).is_err());
    }
}
