//! Items as a store read them, for reads whose rows are decoded typed
//! (`items::decode_issue_list_row`, `items::decode_issue_raw`, `items::decode_partition_row`)
//! rather than through attribute maps.
//!
//! A grid page reads 50–100 items and uses every attribute of each once. Building an attribute
//! map per item (a hash and two allocations per attribute, and as many frees), then taking it
//! apart again, was the largest part of a page's CPU on the embedded store. There,
//! [`Store::query_raw`](super::Store::query_raw) hands over each stored row as it is (see
//! [`row`](super::row)), with its key, and the decoder reads it in one pass with
//! [`row::Reader`](super::row::Reader). A store that receives items as maps hands those over
//! instead.

use std::borrow::Cow;

use super::row::{Row, RowError, Scalar};
use super::{AttributeValue, Item};

/// An item's `PK` and `GSI1SK`, borrowed where they can be.
pub type IndexKey<'a> = (Cow<'a, str>, Cow<'a, str>);

/// One item as a store read it.
#[derive(Clone, Debug, PartialEq)]
pub enum RawItem {
    /// A stored row and its key, as the embedded store keeps it.
    Row(Row),
    /// An attribute map, as a store that built one hands it over.
    Map(Item),
}

impl RawItem {
    /// The item, as an attribute map.
    pub fn item(self) -> Result<Item, RowError> {
        match self {
            RawItem::Row(row) => row.as_ref().item(),
            RawItem::Map(item) => Ok(item),
        }
    }

    /// The `S` values of the top-level attributes `names` (`None` for one that is absent or
    /// not a string), read in one pass.
    pub fn strings<const N: usize>(
        &self,
        names: [&str; N],
    ) -> Result<[Option<Cow<'_, str>>; N], RowError> {
        let mut found = [const { None }; N];
        match self {
            RawItem::Row(row) => row.as_ref().reader().item(|r, name| {
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

    /// [`RawItem::index_key`], owned (a page keeps each row's key as its position).
    pub fn owned_index_key(&self) -> Result<Option<(String, String)>, RowError> {
        let key = self.index_key()?;
        Ok(key.map(|(pk, gsi1sk)| (pk.into_owned(), gsi1sk.into_owned())))
    }

    /// `PK` and `GSI1SK`: from the key the row was read under when it holds them, else from
    /// the item.
    pub fn index_key(&self) -> Result<Option<IndexKey<'_>>, RowError> {
        if let RawItem::Row(Row {
            pk,
            gsi1sk: Some(gsi1sk),
            ..
        }) = self
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
    fn strings_are_read_by_name_in_one_pass_from_rows_and_maps() {
        let mut item = Item::default();
        item.insert("PK".into(), AttributeValue::S("issue-1".into()));
        item.insert("SK".into(), AttributeValue::S("project-1".into()));
        item.insert("GSI1SK".into(), AttributeValue::S("a\"b".into()));
        item.insert("Num".into(), AttributeValue::N("7".into()));
        item.insert(
            "Values".into(),
            AttributeValue::M([("PK".into(), AttributeValue::S("inner".into()))].into()),
        );
        let row = RawItem::Row(Row::of_item(&item));
        for raw in [row, RawItem::Map(item.clone())] {
            let [pk, gsi1sk, num, missing] =
                raw.strings(["PK", "GSI1SK", "Num", "Absent"]).unwrap();
            assert_eq!(pk.as_deref(), Some("issue-1"));
            assert_eq!(gsi1sk.as_deref(), Some("a\"b"));
            // Not a string, and absent: both `None`; the nested `PK` is not the item's.
            assert_eq!((num, missing), (None, None));
            let (pk, gsi1sk) = raw.index_key().unwrap().unwrap();
            assert_eq!((&*pk, &*gsi1sk), ("issue-1", "a\"b"));
            assert_eq!(raw.item().unwrap(), item);
        }
        // A row read from the index holds GSI1SK in its key, and its attributes do not.
        let mut index_row = Row::of_item(&item);
        index_row.attributes.clear();
        index_row.gsi1sk = Some("g".into());
        let keyed = RawItem::Row(index_row);
        let (pk, gsi1sk) = keyed.index_key().unwrap().unwrap();
        assert_eq!((&*pk, &*gsi1sk), ("issue-1", "g"));
        assert_eq!(
            keyed.owned_index_key().unwrap(),
            Some(("issue-1".into(), "g".into()))
        );
        assert_eq!(
            keyed.item().unwrap()["GSI1SK"],
            AttributeValue::S("g".into())
        );
        // A table row's GSI1SK is among its attributes.
        let row = RawItem::Row(Row::of_item(&item));
        let key = row.owned_index_key().unwrap();
        assert_eq!(key, Some(("issue-1".into(), "a\"b".into())));
    }
}
