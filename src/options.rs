//! SELECT options: what a field's option list may hold (ids, labels, colours, at most
//! [`MAX_OPTIONS`]), and the order keys that let a reorder re-key only the options that moved.
//!
//! **Order keys.** Each option carries a fractional index (the `fractional_index` crate, in its
//! hex form, which orders as its bytes do): a key can always be made between two others. An
//! edit keeps the keys of the longest run of options whose relative order did not change and
//! gives new keys only to the others, placed between their neighbours. So moving one option
//! re-keys that option's cells alone, and adding or renaming options re-keys nothing.
//!
//! **What an edit leaves to the options sweep.** A moved option remembers its old keys
//! (`stale_keys`) and a removed one stays in the list, flagged, until `repo::sweep` has given
//! their cells new sort strings or cleared them. No new key ever equals a key still in the
//! list (live, stale or removed), so the sweep can find an option's old index rows by key.

use std::collections::HashSet;

use fractional_index::FractionalIndex;
use rand::Rng;

use crate::model::{SelectOption, MAX_OPTION_ID};

/// At most this many options in one field (removed ones awaiting the sweep not counted).
pub const MAX_OPTIONS: usize = 200;
/// At most this many live options in all of a project's SELECT fields: every grid page reads
/// the project's partition, field rows and their options included.
pub const MAX_PROJECT_OPTIONS: usize = 1000;
/// The longest order key, in hex chars (16 bytes): see `assign_keys`.
pub const MAX_KEY_CHARS: usize = 32;
/// At most this many removed options and old keys awaiting the sweep in one field.
pub const MAX_PENDING: usize = 2 * MAX_OPTIONS;
/// The longest label, in characters.
pub const MAX_LABEL_CHARS: usize = 100;
/// The named colours an option may have (Notion's palette), besides `#rrggbb`.
pub const COLORS: &[&str] = &[
    "default", "gray", "brown", "orange", "yellow", "green", "blue", "purple", "pink", "red",
];

/// One option as a client sends it: `id` names an existing option, and is absent for a new one.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OptionInput {
    pub id: Option<String>,
    pub label: String,
    pub color: Option<String>,
}

/// Why an option list is refused: the path in the input (`options[2].label`) and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct OptionsError {
    pub path: String,
    pub message: String,
}

fn refuse(path: impl Into<String>, message: impl Into<String>) -> OptionsError {
    OptionsError {
        path: path.into(),
        message: message.into(),
    }
}

/// The option list a field gets from `inputs`, given the options it has (`old`, empty for a
/// new field): labels and colours checked, ids kept for existing options and made for new
/// ones, keys kept where the order allows (see the module's documentation), options left out
/// flagged as removed.
pub fn edit(
    old: &[SelectOption],
    inputs: &[OptionInput],
    rng: &mut impl Rng,
) -> Result<Vec<SelectOption>, OptionsError> {
    if inputs.len() > MAX_OPTIONS {
        return Err(refuse(
            "options",
            format!(
                "a field has at most {MAX_OPTIONS} options, got {}",
                inputs.len()
            ),
        ));
    }
    let mut labels = HashSet::new();
    let mut ids = HashSet::new();
    // The options in their new order: an existing one with its old state, or a new one.
    let mut next: Vec<SelectOption> = Vec::with_capacity(inputs.len());
    for (i, input) in inputs.iter().enumerate() {
        let path = |what: &str| format!("options[{i}].{what}");
        let label = input.label.trim();
        if label.is_empty() || label.chars().count() > MAX_LABEL_CHARS {
            return Err(refuse(
                path("label"),
                format!("a label has 1 to {MAX_LABEL_CHARS} characters after trimming spaces"),
            ));
        }
        if label.chars().any(char::is_control) {
            return Err(refuse(path("label"), "a label has no control characters"));
        }
        if !labels.insert(label.to_lowercase()) {
            return Err(refuse(
                path("label"),
                format!("`{label}` is already the label of another option (labels are unique, ignoring case)"),
            ));
        }
        let color = input
            .color
            .as_deref()
            .map(str::trim)
            .filter(|c| !c.is_empty());
        if let Some(color) = color {
            if !valid_color(color) {
                return Err(refuse(
                    path("color"),
                    format!(
                        "`{color}` is not a colour: use #rrggbb or one of {}",
                        COLORS.join(", ")
                    ),
                ));
            }
        }
        let mut option = match &input.id {
            Some(id) => {
                let existing = old
                    .iter()
                    .find(|o| &o.id == id && !o.removed)
                    .ok_or_else(|| {
                        refuse(
                            path("id"),
                            format!("`{id}` is not one of the field's options; leave `id` out for a new option"),
                        )
                    })?;
                if !ids.insert(id.clone()) {
                    return Err(refuse(path("id"), format!("option `{id}` is listed twice")));
                }
                existing.clone()
            }
            None => SelectOption {
                id: String::new(),
                label: String::new(),
                color: None,
                key: String::new(),
                stale_keys: Vec::new(),
                removed: false,
            },
        };
        option.label = label.to_string();
        option.color = color.map(str::to_string);
        next.push(option);
    }
    let taken: HashSet<String> = old.iter().map(|o| o.id.clone()).collect();
    for option in next.iter_mut().filter(|o| o.id.is_empty()) {
        option.id = new_id(rng, &taken, &ids);
        ids.insert(option.id.clone());
    }
    assign_keys(old, &mut next);
    // Options left out are removed; options removed before stay until the sweep forgets them.
    let mut all = next;
    for option in old {
        if !ids.contains(&option.id) {
            // Only its id and keys matter until the sweep forgets it: the row keeps no label.
            let mut gone = option.clone();
            gone.removed = true;
            gone.label.clear();
            gone.color = None;
            all.push(gone);
        }
    }
    all.sort_by(|a, b| a.key.cmp(&b.key));
    // Removed options and old keys wait for the sweep; a client that edits faster than the
    // sweep runs must not grow the field's row without bound.
    let pending: usize = all
        .iter()
        .map(|o| usize::from(o.removed) + o.stale_keys.len())
        .sum();
    if pending > MAX_PENDING {
        return Err(refuse(
            "options",
            "the field is still re-keying the cells of earlier edits; try again once its status is READY",
        ));
    }
    Ok(all)
}

/// Whether `color` is `#rrggbb` or a named colour.
fn valid_color(color: &str) -> bool {
    let hex = color
        .strip_prefix('#')
        .is_some_and(|h| h.len() == 6 && h.bytes().all(|b| b.is_ascii_hexdigit()));
    hex || COLORS.contains(&color)
}

/// A fresh option id (`opt-` and 8 hex digits), unlike any in `taken` or `chosen`.
fn new_id(rng: &mut impl Rng, taken: &HashSet<String>, chosen: &HashSet<String>) -> String {
    loop {
        let id = format!("opt-{:08x}", rng.random::<u32>());
        debug_assert!(id.len() <= MAX_OPTION_ID);
        if !taken.contains(&id) && !chosen.contains(&id) {
            return id;
        }
    }
}

/// Gives `next` (the live options in their new order; new ones without a key) increasing
/// keys: the longest subsequence of existing options already in increasing key order keeps
/// its keys, every other option gets a new key between its neighbours, and a moved option
/// remembers the key it had. Keys made between close neighbours grow by about a byte per
/// edit, so once one would pass [`MAX_KEY_CHARS`] every option gets a fresh, short key
/// instead (a respacing: all the field's cells are re-keyed once, by the sweep).
fn assign_keys(old: &[SelectOption], next: &mut [SelectOption]) {
    let keep = longest_increasing(next);
    // Keys no new key may equal: every key the field still has rows under.
    let reserved: HashSet<String> = old
        .iter()
        .flat_map(|o| std::iter::once(o.key.clone()).chain(o.stale_keys.iter().cloned()))
        .collect();
    let mut taken = reserved.clone();
    let mut keys: Vec<Option<String>> = vec![None; next.len()];
    let mut lower: Option<FractionalIndex> = None;
    for i in 0..next.len() {
        if keep[i] {
            lower = parse_key(&next[i].key);
            continue;
        }
        let upper = next[i + 1..]
            .iter()
            .zip(&keep[i + 1..])
            .find(|(_, kept)| **kept)
            .and_then(|(o, _)| parse_key(&o.key));
        let mut key = between(lower.as_ref(), upper.as_ref());
        while taken.contains(&key.to_string()) {
            key = between(Some(&key), upper.as_ref());
        }
        taken.insert(key.to_string());
        keys[i] = Some(key.to_string());
        lower = Some(key);
    }
    if keys.iter().flatten().any(|k| k.len() > MAX_KEY_CHARS) {
        keys = respaced(next.len(), &reserved);
    }
    for (option, key) in next.iter_mut().zip(keys) {
        let Some(key) = key.filter(|k| *k != option.key) else {
            continue;
        };
        if option.key.is_empty() {
            option.key = key;
        } else {
            let old_key = std::mem::replace(&mut option.key, key);
            option.stale_keys.push(old_key);
        }
    }
}

/// `n` fresh increasing keys, short (one byte each up to 127 options, then a few more), none
/// of them in `reserved`.
fn respaced(n: usize, reserved: &HashSet<String>) -> Vec<Option<String>> {
    let mut keys = Vec::with_capacity(n);
    let mut key = FractionalIndex::default();
    while keys.len() < n {
        if !reserved.contains(&key.to_string()) {
            keys.push(Some(key.to_string()));
        }
        key = FractionalIndex::new_after(&key);
    }
    keys
}

/// A stored key as a fractional index; `None` when it is not one (another tool wrote it):
/// checked before the crate parses it, which expects lowercase hex.
fn parse_key(key: &str) -> Option<FractionalIndex> {
    let hex = !key.is_empty()
        && key.len() % 2 == 0
        && key
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    hex.then(|| FractionalIndex::from_string(key).ok())
        .flatten()
}

/// A key strictly between the bounds (either may be open).
fn between(lower: Option<&FractionalIndex>, upper: Option<&FractionalIndex>) -> FractionalIndex {
    // The bounds always come in order (kept keys increase, and each new key lies below
    // `upper`), so `new` has an answer; the fallback only guards a corrupted stored key.
    FractionalIndex::new(lower, upper)
        .unwrap_or_else(|| lower.map_or_else(FractionalIndex::default, FractionalIndex::new_after))
}

/// Which options of `next` keep their keys: a longest subsequence of those that have a valid
/// key whose keys increase (patience sorting, O(n log n)).
fn longest_increasing(next: &[SelectOption]) -> Vec<bool> {
    let valid = |o: &SelectOption| parse_key(&o.key).is_some();
    // tails[k]: index in `next` of the smallest last key of an increasing run of length k+1.
    let mut tails: Vec<usize> = Vec::new();
    let mut before: Vec<Option<usize>> = vec![None; next.len()];
    for (i, option) in next.iter().enumerate() {
        if !valid(option) {
            continue;
        }
        let at = tails.partition_point(|&t| next[t].key < option.key);
        before[i] = at.checked_sub(1).map(|p| tails[p]);
        if at == tails.len() {
            tails.push(i);
        } else {
            tails[at] = i;
        }
    }
    let mut keep = vec![false; next.len()];
    let mut at = tails.last().copied();
    while let Some(i) = at {
        keep[i] = true;
        at = before[i];
    }
    keep
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::SeedableRng;

    fn input(id: Option<&str>, label: &str) -> OptionInput {
        OptionInput {
            id: id.map(str::to_string),
            label: label.to_string(),
            color: None,
        }
    }

    fn rng() -> rand::rngs::StdRng {
        rand::rngs::StdRng::seed_from_u64(7)
    }

    fn live(options: &[SelectOption]) -> Vec<&str> {
        options
            .iter()
            .filter(|o| !o.removed)
            .map(|o| o.label.as_str())
            .collect()
    }

    fn inputs_of(options: &[SelectOption], order: &[usize]) -> Vec<OptionInput> {
        let live: Vec<&SelectOption> = options.iter().filter(|o| !o.removed).collect();
        order
            .iter()
            .map(|&i| input(Some(&live[i].id), &live[i].label))
            .collect()
    }

    #[test]
    fn a_new_list_gets_ids_and_increasing_keys() {
        let options = edit(
            &[],
            &[
                input(None, "Bug"),
                input(None, "Feature"),
                input(None, "Chore"),
            ],
            &mut rng(),
        )
        .unwrap();
        assert_eq!(live(&options), ["Bug", "Feature", "Chore"]);
        assert!(options.windows(2).all(|w| w[0].key < w[1].key));
        assert!(options
            .iter()
            .all(|o| o.id.starts_with("opt-") && o.stale_keys.is_empty()));
    }

    #[test]
    fn moving_one_option_rekeys_only_that_option() {
        let first = edit(
            &[],
            &["a", "b", "c", "d"].map(|l| input(None, l)),
            &mut rng(),
        )
        .unwrap();
        // d to the front.
        let moved = edit(&first, &inputs_of(&first, &[3, 0, 1, 2]), &mut rng()).unwrap();
        assert_eq!(live(&moved), ["d", "a", "b", "c"]);
        let changed: Vec<&str> = moved
            .iter()
            .filter(|o| !o.stale_keys.is_empty())
            .map(|o| o.label.as_str())
            .collect();
        assert_eq!(changed, ["d"]);
        assert_eq!(moved[0].stale_keys, [first[3].key.clone()]);
        for (was, now) in first[..3].iter().zip(&moved[1..]) {
            assert_eq!(was.key, now.key);
        }
    }

    #[test]
    fn removed_options_stay_flagged_and_their_keys_are_never_reused() {
        let first = edit(&[], &["a", "b", "c"].map(|l| input(None, l)), &mut rng()).unwrap();
        let removed = edit(&first, &inputs_of(&first, &[0, 2]), &mut rng()).unwrap();
        assert_eq!(live(&removed), ["a", "c"]);
        let gone = removed.iter().find(|o| o.removed).unwrap();
        // Only its id and key are kept until the sweep forgets it.
        assert_eq!(gone.id, first[1].id);
        assert_eq!(gone.key, first[1].key);
        assert!(gone.label.is_empty());
        // A new option between a and c must not take b's key, whose rows the sweep still clears.
        let mut with_new = inputs_of(&removed, &[0]);
        with_new.push(input(None, "new"));
        with_new.extend(inputs_of(&removed, &[1]));
        let added = edit(&removed, &with_new, &mut rng()).unwrap();
        let new = added.iter().find(|o| o.label == "new").unwrap();
        assert_ne!(new.key, gone.key);
        assert!(added.iter().filter(|o| o.removed).count() == 1);
    }

    /// What the options sweep does once it is done: old keys and removed options forgotten.
    fn swept(options: Vec<SelectOption>) -> Vec<SelectOption> {
        options
            .into_iter()
            .filter(|o| !o.removed)
            .map(|o| SelectOption {
                stale_keys: Vec::new(),
                ..o
            })
            .collect()
    }

    #[test]
    fn keys_stay_short_however_often_options_move() {
        let mut options = edit(
            &[],
            &["a", "b", "c", "d"].map(|l| input(None, l)),
            &mut rng(),
        )
        .unwrap();
        let (mut respacings, mut previous) = (0, 0);
        for step in 0..2000 {
            // Swapping neighbours back and forth makes keys between ever closer ones.
            let order: &[usize] = if step % 2 == 0 {
                &[0, 3, 2, 1]
            } else {
                &[1, 2, 0, 3]
            };
            options = swept(edit(&options, &inputs_of(&options, order), &mut rng()).unwrap());
            assert!(
                options.iter().all(|o| o.key.len() <= MAX_KEY_CHARS),
                "step {step}"
            );
            assert!(options.windows(2).all(|w| w[0].key < w[1].key));
            let longest = options.iter().map(|o| o.key.len()).max().unwrap_or(0);
            if longest + 8 < previous {
                respacings += 1;
            }
            previous = longest;
        }
        assert!(respacings > 0);
    }

    #[test]
    fn keys_another_tool_wrote_are_replaced_not_trusted() {
        let mut odd = edit(&[], &["a", "b"].map(|l| input(None, l)), &mut rng()).unwrap();
        odd[0].key = "zz\u{e9}".into();
        let fixed = edit(&odd, &inputs_of(&odd, &[0, 1]), &mut rng()).unwrap();
        assert!(
            fixed.iter().all(|o| parse_key(&o.key).is_some()),
            "{fixed:?}"
        );
    }

    #[test]
    fn refusals_name_the_path() {
        let bad = |inputs: &[OptionInput]| edit(&[], inputs, &mut rng()).unwrap_err().path;
        assert_eq!(bad(&[input(None, " ")]), "options[0].label");
        assert_eq!(
            bad(&[input(None, "a"), input(None, "A")]),
            "options[1].label"
        );
        assert_eq!(bad(&[input(Some("opt-x"), "a")]), "options[0].id");
        let colored = OptionInput {
            color: Some("chartreuse".into()),
            ..input(None, "a")
        };
        assert_eq!(bad(&[colored]), "options[0].color");
        let ok = OptionInput {
            color: Some("#a0B1c2".into()),
            ..input(None, "a")
        };
        assert!(edit(&[], &[ok], &mut rng()).is_ok());
    }

    proptest! {
        /// Any sequence of edits keeps the keys in the list's order, keeps every key distinct
        /// from every key the field still has rows under, and re-keys at most the options
        /// whose order relative to the others changed.
        #[test]
        fn edits_keep_keys_ordered_distinct_and_minimal(
            sizes in prop::collection::vec((1usize..8, any::<u64>()), 1..8),
        ) {
            let mut rng = rng();
            let mut options: Vec<SelectOption> = Vec::new();
            let mut next_label = 0;
            for (size, seed) in sizes {
                let current: Vec<SelectOption> = options.iter().filter(|o| !o.removed).cloned().collect();
                // Keep a random subset in a random order, then add new ones.
                let mut picked: Vec<usize> = (0..current.len()).filter(|i| (seed >> (i % 64)) & 1 == 1).collect();
                let rotate = (seed as usize) % picked.len().max(1);
                picked.rotate_left(rotate);
                let mut inputs: Vec<OptionInput> = picked.iter().map(|&i| input(Some(&current[i].id), &current[i].label)).collect();
                for _ in 0..size.saturating_sub(inputs.len()).min(3) {
                    next_label += 1;
                    inputs.insert((seed as usize + next_label) % (inputs.len() + 1), input(None, &format!("l{next_label}")));
                }
                let before = options.clone();
                options = edit(&before, &inputs, &mut rng).unwrap();
                let labels: Vec<&str> = inputs.iter().map(|i| i.label.as_str()).collect();
                prop_assert_eq!(live(&options), labels);
                prop_assert!(options.windows(2).all(|w| w[0].key < w[1].key));
                let mut all_keys: Vec<&String> = options.iter().flat_map(|o| std::iter::once(&o.key).chain(&o.stale_keys)).collect();
                let n = all_keys.len();
                all_keys.sort();
                all_keys.dedup();
                prop_assert_eq!(all_keys.len(), n, "a key is shared");
                // Minimal: the kept options are a longest increasing run, so no more than
                // (live existing options) - (longest run) were re-keyed.
                let existing: Vec<&SelectOption> = inputs.iter().filter_map(|i| i.id.as_ref()).map(|id| before.iter().find(|o| &o.id == id).unwrap()).collect();
                let lis = longest_increasing(&existing.iter().map(|o| (*o).clone()).collect::<Vec<_>>()).iter().filter(|k| **k).count();
                let rekeyed = existing.iter().filter(|o| options.iter().find(|n| n.id == o.id).unwrap().key != o.key).count();
                // Or, once keys grew past their limit, a respacing: every key fresh and short.
                let respaced = options.iter().filter(|o| !o.removed).all(|o| o.key.len() <= 8);
                prop_assert!(rekeyed == existing.len() - lis || respaced, "{} re-keyed, {} needed", rekeyed, existing.len() - lis);
                prop_assert!(options.iter().all(|o| o.key.len() <= MAX_KEY_CHARS));
            }
        }
    }
}
