//! Items as a store read them, for reads whose rows are decoded typed
//! (`items::decode_issue_list_row`, `items::decode_issue_raw`, `items::decode_partition_row`)
//! rather than through attribute maps.
//!
//! A grid page reads 50–100 items and uses every attribute of each once. Building an attribute
//! map per item (a hash and two allocations per attribute, and as many frees), then taking it
//! apart again, was the largest part of a page's CPU on the embedded store. There,
//! [`Store::query_raw`](super::Store::query_raw) hands over each stored row's text as it is,
//! with its size and index key from the row, and the decoder reads the text in one pass with
//! [`ddbjson::Reader`]. A store that receives items as maps hands those over instead.

use std::borrow::Cow;

use super::ddbjson::{self, JsonError, Reader, Scalar};
use super::{AttributeValue, Item};

/// An item's `PK` and `GSI1SK`, borrowed where they can be.
pub type IndexKey<'a> = (Cow<'a, str>, Cow<'a, str>);

/// One item as a store read it.
#[derive(Clone, Debug, PartialEq)]
pub enum RawItem {
    /// Its DynamoDB JSON text (`{"PK":{"S":"…"},…}`), as the embedded store keeps it.
    Text {
        text: String,
        /// `PK` and `GSI1SK`, when the item was read from `GSI1`, whose keys hold them.
        index_key: Option<(String, String)>,
    },
    /// An attribute map, as a store that built one hands it over.
    Map(Item),
}

impl RawItem {
    /// The item, as an attribute map.
    pub fn item(self) -> Result<Item, JsonError> {
        match self {
            RawItem::Text { text, .. } => ddbjson::item(&text),
            RawItem::Map(item) => Ok(item),
        }
    }

    /// The `S` values of the top-level attributes `names` (`None` for one that is absent or
    /// not a string). Text is read in one pass that checks only its structure: the decoder
    /// that reads the item next checks the rest.
    pub fn strings<const N: usize>(
        &self,
        names: [&str; N],
    ) -> Result<[Option<Cow<'_, str>>; N], JsonError> {
        let mut found = [const { None }; N];
        match self {
            RawItem::Text { text, .. } => Reader::new(text).item(|r, name| {
                match names.iter().position(|n| *n == name) {
                    Some(i) => {
                        found[i] = match r.scalar()? {
                            Scalar::S(s) => Some(s),
                            _ => None,
                        }
                    }
                    None => r.skip()?,
                }
                Ok(())
            })?,
            RawItem::Map(item) => {
                for (slot, name) in found.iter_mut().zip(names) {
                    if let Some(AttributeValue::S(s)) = item.get(name) {
                        *slot = Some(Cow::Borrowed(s.as_str()));
                    }
                }
            }
        }
        Ok(found)
    }

    /// [`RawItem::index_key`], owned: the index key the store gave is moved out rather than
    /// copied (a page keeps each row's key as its position), so a later `index_key` reads
    /// it from the item.
    pub fn take_index_key(&mut self) -> Result<Option<(String, String)>, JsonError> {
        if let RawItem::Text { index_key, .. } = self {
            if let Some(key) = index_key.take() {
                return Ok(Some(key));
            }
        }
        let key = self.index_key()?;
        Ok(key.map(|(pk, gsi1sk)| (pk.into_owned(), gsi1sk.into_owned())))
    }

    /// `PK` and `GSI1SK`: from the index key the item was read under when the store gave it,
    /// else from the item.
    pub fn index_key(&self) -> Result<Option<IndexKey<'_>>, JsonError> {
        if let RawItem::Text {
            index_key: Some((pk, gsi1sk)),
            ..
        } = self
        {
            return Ok(Some((Cow::Borrowed(pk), Cow::Borrowed(gsi1sk))));
        }
        let [pk, gsi1sk] = self.strings([super::table::PK, super::table::GSI1SK])?;
        Ok(pk.zip(gsi1sk))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_read_by_name_in_one_pass_from_text_and_maps() {
        let mut item = Item::default();
        item.insert("PK".into(), AttributeValue::S("issue-1".into()));
        item.insert("GSI1SK".into(), AttributeValue::S("a\"b".into()));
        item.insert("Num".into(), AttributeValue::N("7".into()));
        item.insert(
            "Values".into(),
            AttributeValue::M([("PK".into(), AttributeValue::S("inner".into()))].into()),
        );
        let text = RawItem::Text {
            text: serde_json::to_string(&item).unwrap(),
            index_key: None,
        };
        for raw in [text, RawItem::Map(item.clone())] {
            let [pk, gsi1sk, num, missing] = raw.strings(["PK", "GSI1SK", "Num", "SK"]).unwrap();
            assert_eq!(pk.as_deref(), Some("issue-1"));
            assert_eq!(gsi1sk.as_deref(), Some("a\"b"));
            // Not a string, and absent: both `None`; the nested `PK` is not the item's.
            assert_eq!((num, missing), (None, None));
            let (pk, gsi1sk) = raw.index_key().unwrap().unwrap();
            assert_eq!((&*pk, &*gsi1sk), ("issue-1", "a\"b"));
            assert_eq!(raw.item().unwrap(), item);
        }
        // The index key the store gave wins over the text's: it is the same, read cheaper.
        let keyed = RawItem::Text {
            text: "{}".into(),
            index_key: Some(("issue-2".into(), "g".into())),
        };
        let (pk, gsi1sk) = keyed.index_key().unwrap().unwrap();
        assert_eq!((&*pk, &*gsi1sk), ("issue-2", "g"));
        // Taken, it moves out, and the item's own attributes answer after.
        let mut keyed = keyed;
        let taken = keyed.take_index_key().unwrap();
        assert_eq!(taken, Some(("issue-2".into(), "g".into())));
        assert_eq!(keyed.index_key().unwrap(), None);
        let mut text = RawItem::Text {
            text: serde_json::to_string(&item).unwrap(),
            index_key: None,
        };
        let taken = text.take_index_key().unwrap();
        assert_eq!(taken, Some(("issue-1".into(), "a\"b".into())));
    }
}
