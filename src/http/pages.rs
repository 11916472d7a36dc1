//! The browser pages, the web grid (`/` and `/p/<projectId>`, built from `web/` into
//! `assets/grid/`), GraphiQL (`GET /graphql` from a browser, and `/graphiql`) and GraphQL
//! Playground (`/playground`), and their static assets under `/assets/`, all embedded in the
//! binary: the pages fetch nothing from the network, every vendored file is pinned (and
//! checked) by `assets/vendor.sh`, the grid's build is checked against its sources by CI, and
//! each page carries a Content-Security-Policy that allows only the server itself.

use std::sync::OnceLock;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use sha2::{Digest, Sha256};

use super::request_id_of;
use super::wire::{media_of, refuse};
use crate::graphql::error::ErrorCode;

/// Where the assets are served; the pages name them under it.
const ASSETS_PREFIX: &str = "/assets/";

/// The GraphQL endpoint the pages send their requests to.
const ENDPOINT: &str = "/graphql";

/// What a browser may load for a page, besides the per-response style nonce (see
/// [`page_policy`]): scripts, fetches, stylesheets, images and fonts from this server only
/// (the tools' fonts and icons are `data:` URLs inside their stylesheets), no plugins, no
/// framing, no `<base>` and forms only to this server.
const POLICY_BEFORE_STYLES: &str = "default-src 'self'; script-src 'self'; ";
const POLICY_AFTER_STYLES: &str = "; connect-src 'self'; img-src 'self' data:; \
     font-src 'self' data:; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; \
     form-action 'self'";

/// One embedded file.
struct Asset {
    /// The name under [`ASSETS_PREFIX`], which is also the file's name under `assets/`.
    name: &'static str,
    bytes: &'static [u8],
    content_type: &'static str,
    /// Vendored files carry their package's version in their name, so a name never changes
    /// content and browsers may keep them for a year without asking again. gridgate's own
    /// files keep their names across releases, so browsers revalidate them (by ETag) on
    /// every load.
    versioned: bool,
}

const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
const TEXT: &str = "text/plain; charset=utf-8";

/// A file of the grid page's build: `assets/grid/<name>`, made by `web/build.mjs`.
macro_rules! built {
    ($name:literal, $content_type:expr) => {
        Asset {
            name: $name,
            bytes: include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/grid/", $name)),
            content_type: $content_type,
            versioned: false,
        }
    };
}

/// A vendored file: `assets/vendor/<name>`, pinned by `assets/vendor.sh`.
macro_rules! vendored {
    ($name:literal, $content_type:expr) => {
        Asset {
            name: $name,
            bytes: include_bytes!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/assets/vendor/",
                $name
            )),
            content_type: $content_type,
            versioned: true,
        }
    };
}

/// One of gridgate's own files: `assets/<name>`.
macro_rules! own {
    ($name:literal, $content_type:expr) => {
        Asset {
            name: $name,
            bytes: include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/", $name)),
            content_type: $content_type,
            versioned: false,
        }
    };
}

const GRAPHIQL_JS: &str = "graphiql-3.8.3.min.js";
const GRAPHIQL_CSS: &str = "graphiql-3.8.3.min.css";
const REACT_JS: &str = "react-18.3.1.production.min.js";
const REACT_DOM_JS: &str = "react-dom-18.3.1.production.min.js";
const PLAYGROUND_JS: &str = "graphql-playground-react-1.7.28.middleware.js";
const PLAYGROUND_CSS: &str = "graphql-playground-react-1.7.28.middleware.css";
const STYLE_NONCE_JS: &str = "style-nonce.js";
const GRAPHIQL_INIT_JS: &str = "graphiql-init.js";
const PLAYGROUND_INIT_JS: &str = "playground-init.js";
const PAGES_CSS: &str = "pages.css";
const GRID_JS: &str = "grid.js";
const GRID_CSS: &str = "grid.css";
const GRID_FIRST_JS: &str = "first.js";

const ASSET_COUNT: usize = 18;

/// Every file served under [`ASSETS_PREFIX`]; the licences of the vendored packages are
/// served too, so the notices travel with the code wherever the binary goes.
static ASSETS: [Asset; ASSET_COUNT] = [
    vendored!("graphiql-3.8.3.min.js", JS),
    vendored!("graphiql-3.8.3.min.css", CSS),
    vendored!("graphiql-3.8.3.LICENSE", TEXT),
    vendored!("react-18.3.1.production.min.js", JS),
    vendored!("react-18.3.1.LICENSE", TEXT),
    vendored!("react-dom-18.3.1.production.min.js", JS),
    vendored!("react-dom-18.3.1.LICENSE", TEXT),
    vendored!("graphql-playground-react-1.7.28.middleware.js", JS),
    vendored!("graphql-playground-react-1.7.28.middleware.css", CSS),
    vendored!("graphql-playground-react-1.7.28.LICENSE", TEXT),
    own!("style-nonce.js", JS),
    own!("graphiql-init.js", JS),
    own!("playground-init.js", JS),
    own!("pages.css", CSS),
    built!("grid.js", JS),
    built!("first.js", JS),
    built!("grid.css", CSS),
    // The licences of the packages bundled into grid.js, which names this file.
    built!("grid.licenses.txt", TEXT),
];

/// Each asset's ETag, computed on first request (hashing every asset takes some
/// milliseconds, which start-up need not pay).
static ETAGS: [OnceLock<HeaderValue>; ASSET_COUNT] = [const { OnceLock::new() }; ASSET_COUNT];

fn etag(index: usize, asset: &Asset) -> Option<&'static HeaderValue> {
    let cell = ETAGS.get(index)?;
    Some(cell.get_or_init(|| {
        let digest = Sha256::digest(asset.bytes);
        let tag = format!(
            "\"{}\"",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&digest[..18])
        );
        // Base64url characters and quotes are all valid in a header value.
        HeaderValue::from_str(&tag).unwrap_or_else(|_| HeaderValue::from_static("\"\""))
    }))
}

/// `GET /assets/<name>`: an embedded file, or a JSON 404 like every other refusal.
pub(super) async fn asset(request: Request) -> Response {
    let name = request
        .uri()
        .path()
        .strip_prefix(ASSETS_PREFIX)
        .unwrap_or("");
    let Some((index, asset)) = ASSETS.iter().enumerate().find(|(_, a)| a.name == name) else {
        let id = request_id_of(&request);
        return refuse(
            StatusCode::NOT_FOUND,
            ErrorCode::BadRequest,
            "no such asset",
            &id,
            media_of(request.headers()),
        );
    };
    let cache_control = if asset.versioned {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(cache_control),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    let tag = etag(index, asset);
    if let Some(tag) = tag {
        headers.insert(header::ETAG, tag.clone());
    }
    let fresh = tag.is_some_and(|tag| matches_etag(request.headers(), tag));
    if fresh {
        return (StatusCode::NOT_MODIFIED, headers).into_response();
    }
    (StatusCode::OK, headers, Body::from(asset.bytes)).into_response()
}

/// Whether the client's `If-None-Match` names the current ETag (weakly, as RFC 9110 asks
/// for GET), or is `*`.
fn matches_etag(request: &HeaderMap, tag: &HeaderValue) -> bool {
    let Ok(tag) = tag.to_str() else {
        return false;
    };
    request
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .any(|candidate| {
            candidate == "*" || candidate.strip_prefix("W/").unwrap_or(candidate) == tag
        })
}

/// A page's HTML: the shell every page shares (character set, viewport, no indexing, no
/// favicon request), its title, what goes in its `<head>` and its `<body>`.
fn html(title: &str, head: &str, body_class: &str, body: &str) -> String {
    let class = if body_class.is_empty() {
        String::new()
    } else {
        format!(r#" class="{body_class}""#)
    };
    format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>{title}</title>
<link rel="icon" href="data:,">
{head}
</head>
<body{class}>
{body}
</body>
</html>
"#
    )
}

/// `GET /` and `GET /p/<projectId>`: the web grid. One page serves both addresses; the
/// script reads the address to show the project list or a project's grid, and keeps the
/// sort, filter and view in the query string, so a link reopens the same grid. The small
/// first-paint script runs first (deferred from the head): it sends the grid's first requests
/// and paints their rows, then adds the page's script, which the browser has been fetching
/// meanwhile (preloaded), and which takes those answers (see `web/src/first.ts`).
pub(super) async fn grid() -> Response {
    let nonce = new_nonce();
    let p = ASSETS_PREFIX;
    let body = html(
        "gridgate",
        &format!(
            r#"<link rel="stylesheet" href="{p}{GRID_CSS}">
<link rel="preload" as="script" href="{p}{GRID_JS}">
<script defer src="{p}{GRID_FIRST_JS}" data-app="{p}{GRID_JS}"></script>"#
        ),
        "",
        &format!(
            r#"<div id="root"></div>
<noscript>The grid needs JavaScript; the API is at {ENDPOINT}.</noscript>"#
        ),
    );
    page(body, &nonce)
}

/// `GET /graphql` from a browser, and `GET /graphiql`: GraphiQL.
pub(super) fn graphiql() -> Response {
    let nonce = new_nonce();
    let p = ASSETS_PREFIX;
    let body = html(
        "GraphiQL · gridgate",
        &format!(
            r#"<link rel="stylesheet" href="{p}{GRAPHIQL_CSS}">
<link rel="stylesheet" href="{p}{PAGES_CSS}">
<script src="{p}{STYLE_NONCE_JS}" nonce="{nonce}"></script>"#
        ),
        "",
        &format!(
            r#"<div id="graphiql" class="gridgate-page" data-endpoint="{ENDPOINT}"><p class="gridgate-loading">Loading GraphiQL…</p></div>
<noscript>GraphiQL needs JavaScript.</noscript>
<script src="{p}{REACT_JS}"></script>
<script src="{p}{REACT_DOM_JS}"></script>
<script src="{p}{GRAPHIQL_JS}"></script>
<script src="{p}{GRAPHIQL_INIT_JS}"></script>"#
        ),
    );
    page(body, &nonce)
}

/// `GET /playground`: GraphQL Playground. Its bundle carries its own React.
pub(super) async fn playground() -> Response {
    let nonce = new_nonce();
    let p = ASSETS_PREFIX;
    let body = html(
        "GraphQL Playground · gridgate",
        &format!(
            r#"<link rel="stylesheet" href="{p}{PLAYGROUND_CSS}">
<link rel="stylesheet" href="{p}{PAGES_CSS}">
<script src="{p}{STYLE_NONCE_JS}" nonce="{nonce}"></script>"#
        ),
        "gridgate-playground",
        &format!(
            r#"<div id="root" class="gridgate-page" data-endpoint="{ENDPOINT}"><p class="gridgate-loading">Loading GraphQL Playground…</p></div>
<noscript>GraphQL Playground needs JavaScript.</noscript>
<script src="{p}{PLAYGROUND_JS}"></script>
<script src="{p}{PLAYGROUND_INIT_JS}"></script>"#
        ),
    );
    page(body, &nonce)
}

/// `GET /graphiql`: the same page as `GET /graphql` in a browser, at an address that needs no
/// `Accept` header.
pub(super) async fn graphiql_page() -> Response {
    graphiql()
}

/// A fresh nonce for one response: 128 random bits from the thread's CSPRNG, base64url
/// (every character valid in a CSP nonce and in an HTML attribute).
fn new_nonce() -> String {
    let bytes: [u8; 16] = rand::random();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The page's Content-Security-Policy: see [`POLICY_BEFORE_STYLES`]. Styles come from the
/// server, or from `<style>` elements that carry this response's nonce, which only the
/// page's first script (`assets/style-nonce.js`) receives and stamps on the `<style>`
/// elements the tools create at run time: the Playground's styled-components styles the
/// whole page that way, and GraphiQL's dialogs lock scrolling that way. `'unsafe-inline'`
/// would admit injected markup's styles too; the nonce does not.
fn page_policy(nonce: &str) -> String {
    format!("{POLICY_BEFORE_STYLES}style-src 'self' 'nonce-{nonce}'{POLICY_AFTER_STYLES}")
}

fn page(body: String, nonce: &str) -> Response {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    // A page names its nonce, so no copy of it may be kept and served again.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    match HeaderValue::from_str(&page_policy(nonce)) {
        Ok(policy) => {
            headers.insert(header::CONTENT_SECURITY_POLICY, policy);
        }
        Err(_) => {
            // Unreachable (the nonce is base64url), but never serve a page without its policy.
            tracing::error!("the page's Content-Security-Policy is not a valid header value");
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
    }
    (StatusCode::OK, headers, body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_page_asset_is_embedded() {
        for name in [
            GRAPHIQL_JS,
            GRAPHIQL_CSS,
            REACT_JS,
            REACT_DOM_JS,
            PLAYGROUND_JS,
            PLAYGROUND_CSS,
            STYLE_NONCE_JS,
            GRAPHIQL_INIT_JS,
            PLAYGROUND_INIT_JS,
            PAGES_CSS,
            GRID_JS,
            GRID_CSS,
        ] {
            assert!(ASSETS.iter().any(|a| a.name == name), "{name}");
        }
    }

    #[test]
    fn nonces_differ_and_fit_the_policy() {
        let (a, b) = (new_nonce(), new_nonce());
        assert_ne!(a, b);
        assert_eq!(a.len(), 22);
        assert!(HeaderValue::from_str(&page_policy(&a)).is_ok());
    }

    #[test]
    fn if_none_match() {
        let tag = HeaderValue::from_static("\"abc\"");
        let with = |v: &'static str| {
            let mut h = HeaderMap::new();
            h.insert(header::IF_NONE_MATCH, HeaderValue::from_static(v));
            h
        };
        assert!(matches_etag(&with("\"abc\""), &tag));
        assert!(matches_etag(&with("\"x\", W/\"abc\""), &tag));
        assert!(matches_etag(&with("*"), &tag));
        assert!(!matches_etag(&with("\"abd\""), &tag));
        assert!(!matches_etag(&HeaderMap::new(), &tag));
    }
}
