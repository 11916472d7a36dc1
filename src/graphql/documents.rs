//! The parsed-document cache: a grid frontend sends the same few query texts over and over,
//! and parsing one with async-graphql's grammar cost a grid page more CPU than reading its
//! project. Documents are shared read-only; each request executes its own copy of the tree.

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, PoisonError};

use async_graphql::parser::parse_query;
use async_graphql::parser::types::ExecutableDocument;
use async_graphql::ServerError;
use lru::LruCache;

/// Longer query texts are parsed every time and never kept: the cache holds at most
/// [`CACHED_DOCUMENTS`] × this many bytes of text (2 MiB) and the trees parsed from it, so
/// clients sending many large or unique documents cannot grow the server's memory.
pub const MAX_CACHED_QUERY_BYTES: usize = 8 * 1024;
/// How many distinct documents are kept (least recently used first out).
pub const CACHED_DOCUMENTS: usize = 256;

/// Parsed documents by query text, least recently used evicted first.
pub struct Documents {
    cache: Mutex<LruCache<Box<str>, Arc<ExecutableDocument>>>,
}

impl Default for Documents {
    fn default() -> Self {
        Documents::with_capacity(CACHED_DOCUMENTS)
    }
}

impl Documents {
    /// A cache of at most `capacity` documents (at least one).
    pub fn with_capacity(capacity: usize) -> Self {
        let capacity = NonZeroUsize::new(capacity).unwrap_or(NonZeroUsize::MIN);
        Documents {
            cache: Mutex::new(LruCache::new(capacity)),
        }
    }

    /// The parsed document of `query`, from the cache when it was parsed before. A document
    /// that does not parse is not kept (its error is cheap to find again).
    pub fn get_or_parse(&self, query: &str) -> Result<Arc<ExecutableDocument>, ServerError> {
        let cacheable = query.len() <= MAX_CACHED_QUERY_BYTES;
        if cacheable {
            if let Some(doc) = self.lock().get(query) {
                return Ok(doc.clone());
            }
        }
        // Parsed outside the lock: a slow parse must not hold up other requests.
        let doc = Arc::new(parse_query(query)?);
        if cacheable {
            self.lock().put(query.into(), doc.clone());
        }
        Ok(doc)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LruCache<Box<str>, Arc<ExecutableDocument>>> {
        // The cache holds no invariant a panicking holder could break: keep using it.
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Documents {
        fn len(&self) -> usize {
            self.lock().len()
        }

        fn is_empty(&self) -> bool {
            self.len() == 0
        }
    }

    #[test]
    fn a_repeated_query_is_parsed_once_and_shared() {
        let documents = Documents::default();
        let first = documents.get_or_parse("{ __typename }").unwrap();
        let second = documents.get_or_parse("{ __typename }").unwrap();
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!(documents.len(), 1);
    }

    #[test]
    fn errors_and_long_documents_are_not_kept() {
        let documents = Documents::default();
        assert!(documents.get_or_parse("{ unclosed").is_err());
        let long = format!("{{ __typename {} }}", "# padding\n".repeat(1000));
        assert!(long.len() > MAX_CACHED_QUERY_BYTES);
        let first = documents.get_or_parse(&long).unwrap();
        let second = documents.get_or_parse(&long).unwrap();
        assert!(!Arc::ptr_eq(&first, &second));
        assert!(documents.is_empty());
    }

    #[test]
    fn the_least_recently_used_document_leaves_first() {
        let documents = Documents::with_capacity(2);
        let a = documents.get_or_parse("{ a: __typename }").unwrap();
        documents.get_or_parse("{ b: __typename }").unwrap();
        // `a` is used again, so `b` is the one to go.
        assert!(Arc::ptr_eq(
            &a,
            &documents.get_or_parse("{ a: __typename }").unwrap()
        ));
        documents.get_or_parse("{ c: __typename }").unwrap();
        assert_eq!(documents.len(), 2);
        assert!(Arc::ptr_eq(
            &a,
            &documents.get_or_parse("{ a: __typename }").unwrap()
        ));
    }
}
