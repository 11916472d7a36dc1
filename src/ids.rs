//! Entity ids: the typed, validated `<prefix>-<random>` strings that are both table keys and
//! GraphQL `ID`s.
//!
//! Every id carries its entity type in its prefix, so an id alone says what it names (the
//! single-table design relies on this to tell items apart, and `node(id:)` relies on it to route).

use std::fmt;
use std::sync::Arc;

use rand::Rng;

/// Why a string is not an id of the expected kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("`{id}` is not a valid {kind} id: expected `{prefix}-` followed by 1 to 64 letters or digits")]
    Malformed {
        id: String,
        kind: &'static str,
        prefix: &'static str,
    },
    #[error("`{0}` is not an id of anything gridgate serves: ids look like `tenant-…`, `project-…`, `xattrib-…` or `issue-…`")]
    UnknownKind(String),
}

/// The longest random part accepted; generated ids use 26 characters (a ULID).
const MAX_RANDOM_LEN: usize = 64;

fn valid_random_part(part: &str) -> bool {
    !part.is_empty()
        && part.len() <= MAX_RANDOM_LEN
        && part.bytes().all(|b| ALPHANUMERIC[usize::from(b)])
}

/// `u8::is_ascii_alphanumeric` as a table: every id of every row read is checked byte by
/// byte, and one load per byte is a few times cheaper than the range comparisons.
static ALPHANUMERIC: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = (b as u8).is_ascii_alphanumeric();
        b += 1;
    }
    table
};

/// A new random part: a ULID (time-ordered, 128 bits) in lower case, so ids made later sort
/// later and never collide in practice.
fn generate_random_part(rng: &mut impl Rng) -> String {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let random: u128 = rng.random();
    ulid::Ulid::from_parts(millis, random)
        .to_string()
        .to_ascii_lowercase()
}

macro_rules! entity_id {
    ($(#[$doc:meta])* $name:ident, $prefix:literal, $kind:literal) => {
        $(#[$doc])*
        ///
        /// The text is shared (`Arc<str>`): an id is cloned far more often than it is made
        /// (every DataLoader key is cloned into its request set, its cache and its batch,
        /// and a 50-row grid page cloned about 550 id strings), and a clone is now a count.
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(Arc<str>);

        impl $name {
            /// The type prefix, without the dash.
            pub const PREFIX: &'static str = $prefix;

            /// Parses a full id such as `
            #[doc = $prefix]
            /// -35e9`.
            pub fn parse(id: &str) -> Result<Self, IdError> {
                match id.strip_prefix(concat!($prefix, "-")) {
                    Some(part) if valid_random_part(part) => Ok($name(Arc::from(id))),
                    _ => Err(IdError::Malformed {
                        id: id.to_string(),
                        kind: $kind,
                        prefix: $prefix,
                    }),
                }
            }

            /// Whether `id` would parse, without allocating.
            pub fn is_valid(id: &str) -> bool {
                id.strip_prefix(concat!($prefix, "-")).is_some_and(valid_random_part)
            }

            /// Builds an id from its random part (which must be valid).
            pub fn from_part(part: &str) -> Result<Self, IdError> {
                Self::parse(&format!(concat!($prefix, "-{}"), part))
            }

            /// A new id with a fresh ULID random part.
            pub fn generate() -> Self {
                Self::generate_with(&mut rand::rng())
            }

            /// A new id whose random part comes from `rng` (deterministic seeding).
            pub fn generate_with(rng: &mut impl Rng) -> Self {
                $name(Arc::from(format!(concat!($prefix, "-{}"), generate_random_part(rng))))
            }

            /// A deterministic id whose whole random part comes from `rng`, for reproducible
            /// synthetic data.
            pub fn seeded(rng: &mut impl Rng) -> Self {
                let bits: u128 = rng.random();
                $name(Arc::from(format!(
                    concat!($prefix, "-{}"),
                    ulid::Ulid::from(bits).to_string().to_ascii_lowercase()
                )))
            }

            /// The random part after the prefix.
            pub fn part(&self) -> &str {
                &self.0[$prefix.len() + 1..]
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}

entity_id!(
    /// `tenant-<id>`
    TenantId, "tenant", "tenant"
);
entity_id!(
    /// `project-<id>`
    ProjectId, "project", "project"
);
entity_id!(
    /// `xattrib-<id>`: a custom field (attribute definition) of a project.
    FieldId, "xattrib", "custom field"
);
entity_id!(
    /// `issue-<id>`
    IssueId, "issue", "issue"
);
entity_id!(
    /// `xview-<id>`: a saved view of a project (issue 22).
    ViewId, "xview", "view"
);

/// Any id that names a node, routed by its prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeId {
    Tenant(TenantId),
    Project(ProjectId),
    Field(FieldId),
    Issue(IssueId),
    View(ViewId),
}

impl NodeId {
    pub fn parse(id: &str) -> Result<Self, IdError> {
        let prefix = id.split('-').next().unwrap_or("");
        match prefix {
            TenantId::PREFIX => TenantId::parse(id).map(NodeId::Tenant),
            ProjectId::PREFIX => ProjectId::parse(id).map(NodeId::Project),
            FieldId::PREFIX => FieldId::parse(id).map(NodeId::Field),
            IssueId::PREFIX => IssueId::parse(id).map(NodeId::Issue),
            ViewId::PREFIX => ViewId::parse(id).map(NodeId::View),
            _ => Err(IdError::UnknownKind(id.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_alphanumeric_table_is_is_ascii_alphanumeric() {
        for b in 0..=u8::MAX {
            assert_eq!(
                ALPHANUMERIC[usize::from(b)],
                b.is_ascii_alphanumeric(),
                "{b:#x}"
            );
        }
    }

    #[test]
    fn parses_sample_and_generated_ids() {
        let p = ProjectId::parse("project-35e9").unwrap();
        assert_eq!(p.part(), "35e9");
        assert_eq!(p.to_string(), "project-35e9");
        let g = IssueId::generate();
        assert_eq!(g.part().len(), 26);
        assert_eq!(IssueId::parse(g.as_str()).unwrap(), g);
        assert_eq!(FieldId::from_part("3812").unwrap().as_str(), "xattrib-3812");
    }

    #[test]
    fn rejects_malformed_ids() {
        for bad in [
            "project-",
            "project",
            "tenant-35e9",
            "project-35 e9",
            "project-a#b",
            "",
        ] {
            assert!(ProjectId::parse(bad).is_err(), "{bad}");
        }
        assert!(ProjectId::parse(&format!("project-{}", "a".repeat(65))).is_err());
    }

    #[test]
    fn routes_node_ids_by_prefix() {
        assert_eq!(
            NodeId::parse("issue-020e").unwrap(),
            NodeId::Issue(IssueId::parse("issue-020e").unwrap())
        );
        assert!(matches!(
            NodeId::parse("xvalue-3812"),
            Err(IdError::UnknownKind(_))
        ));
        assert!(matches!(
            NodeId::parse("issue-"),
            Err(IdError::Malformed { .. })
        ));
    }
}
