//! The one reader of "does this carry a credential" for strings and the
//! values they make up, used by every decision that hangs on it: the
//! `secret-redaction` guard, the sealing of a request's arguments
//! ([`crate::seal::Seal::of`]), the arena's scenario loader and importers.
//!
//! A string alone is read in every form ([`find_in_forms`]: as written,
//! its normal form, decoded). Strings read together (the string values of
//! one call's arguments, of one table or array) are read as
//! [`find_across`] does, in order and in reverse order (so a split is found
//! whichever key sorts first), joined by a space (a `Bearer` and its token
//! in two values read as one header) and by nothing (a token cut in two
//! reads whole); only what lies in two or more of them counts.

use std::ops::Range;

use super::forms::{find_across, find_in_forms, Form, FormFinding};
use super::CredentialKind;

/// The separators strings read together are joined by.
const SEPARATORS: [&str; 2] = [" ", ""];

/// The first credential of any shape `text` carries, in any form.
pub fn credential_in(text: &str) -> Option<FormFinding> {
    find_in_forms(text, &CredentialKind::ALL)
}

/// A credential only strings read together carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    /// The shape.
    pub kind: CredentialKind,
    /// Its public marker; safe to print.
    pub marker: &'static str,
    /// The form it was read in.
    pub form: Form,
    /// The strings it lies in (indices into the strings read), ascending.
    pub parts: Vec<usize>,
    /// Read as written: the credential's byte range in each string it touches.
    pub secret: Vec<(usize, Range<usize>)>,
}

/// The credentials of `kinds` that lie in two or more of `values` read
/// together (see the module documentation).
pub fn splits(values: &[&str], kinds: &[CredentialKind]) -> Vec<Split> {
    let last = values.len().saturating_sub(1);
    let backwards: Vec<&str> = values.iter().rev().copied().collect();
    let mut out = Vec::new();
    for separator in SEPARATORS {
        for (order, reversed) in [(values, false), (&backwards[..], true)] {
            let index = |p: usize| if reversed { last - p } else { p };
            for found in find_across(order, separator, kinds) {
                let mut parts: Vec<usize> = found.parts.map(index).collect();
                parts.sort_unstable();
                out.push(Split {
                    kind: found.kind,
                    marker: found.marker,
                    form: found.form,
                    parts,
                    secret: found
                        .secret
                        .into_iter()
                        .map(|(p, range)| (index(p), range))
                        .collect(),
                });
            }
        }
    }
    out
}

/// The first credential of any shape only `values` read together carry.
pub fn split_in(values: &[&str]) -> Option<Split> {
    splits(values, &CredentialKind::ALL).into_iter().next()
}
