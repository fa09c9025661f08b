//! The arrays and objects the canonical writer writes: an array's elements
//! in order, an object's entries in canonical key order (rewritten at its
//! end only when they came out of order).

use std::borrow::Cow;

use serde::ser::{self, Serialize};

use super::map_key::MapKey;
use super::writer::{defer, Spare, Walk, WalkError, Writer};
use super::{key_order, write_string, CanonicalError};

/// An array (or a tuple variant's array) being written.
pub(super) struct Seq<'a> {
    pub(super) out: &'a mut Vec<u8>,
    pub(super) deferred: &'a mut Option<CanonicalError>,
    pub(super) spare: &'a mut Spare,
    /// Whether no element is written yet (no comma before the next).
    pub(super) first: bool,
    /// What closes it: `]`, or `]}` for a tuple variant's array.
    pub(super) close: &'static [u8],
}

impl Seq<'_> {
    fn element<T: ?Sized + Serialize>(&mut self, value: &T) -> Walk {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        value.serialize(Writer {
            out: &mut *self.out,
            deferred: &mut *self.deferred,
            spare: &mut *self.spare,
        })
    }

    fn close(self) -> Walk {
        self.out.extend_from_slice(self.close);
        Ok(())
    }
}

/// One entry of an object: its key, where its value's bytes lie in the
/// output, and the first printing error met in its value.
pub(super) struct Entry {
    pub(super) key: Cow<'static, str>,
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) deferred: Option<CanonicalError>,
}

/// An object (or a struct variant's object) being written. Its entries are
/// written as they come; if their keys did not come in canonical order (or
/// one came twice), they are written again in that order at the end.
pub(super) struct Object<'a> {
    pub(super) out: &'a mut Vec<u8>,
    pub(super) deferred: &'a mut Option<CanonicalError>,
    pub(super) spare: &'a mut Spare,
    /// Where the object's `{` is in `out`.
    pub(super) open: usize,
    /// Where the object's entries start in the spare entries.
    pub(super) base: usize,
    /// Whether every key so far came after the one before it.
    pub(super) in_order: bool,
    /// A map's key written by `serialize_key`, waiting for its value.
    pub(super) pending: Option<Cow<'static, str>>,
    /// Whether the object is a struct variant's, so a `}` closes the
    /// variant's `{"variant":` after its own.
    pub(super) close_variant: bool,
}

impl Object<'_> {
    fn entry<T: ?Sized + Serialize>(&mut self, key: Cow<'static, str>, value: &T) -> Walk {
        if self.spare.entries.len() > self.base {
            self.out.push(b',');
            if let Some(last) = self.spare.entries.last() {
                self.in_order &= key_order(&last.key, &key).is_lt();
            }
        }
        write_string(&key, self.out);
        self.out.push(b':');
        let start = self.out.len();
        let mut deferred = None;
        value.serialize(Writer {
            out: &mut *self.out,
            deferred: &mut deferred,
            spare: &mut *self.spare,
        })?;
        self.spare.entries.push(Entry {
            key,
            start,
            end: self.out.len(),
            deferred,
        });
        Ok(())
    }

    fn close(self) -> Walk {
        let Object {
            out,
            deferred,
            spare,
            open,
            base,
            in_order,
            close_variant,
            ..
        } = self;
        let Spare { entries, scratch } = spare;
        if in_order {
            for entry in entries.drain(base..) {
                if let Some(error) = entry.deferred {
                    defer(deferred, error);
                }
            }
        } else {
            let from = open + 1;
            scratch.clear();
            scratch.extend_from_slice(&out[from..]);
            out.truncate(from);
            let mine = &mut entries[base..];
            // A stable sort keeps entries under one key in the order
            // written; the last of them is the one a map insert keeps.
            mine.sort_by(|a, b| key_order(&a.key, &b.key));
            let mut first = true;
            let mut mine = entries.drain(base..).peekable();
            while let Some(entry) = mine.next() {
                if mine.peek().is_some_and(|next| next.key == entry.key) {
                    continue;
                }
                if let Some(error) = entry.deferred {
                    defer(deferred, error);
                }
                if !first {
                    out.push(b',');
                }
                first = false;
                write_string(&entry.key, out);
                out.push(b':');
                out.extend_from_slice(&scratch[entry.start - from..entry.end - from]);
            }
        }
        out.push(b'}');
        if close_variant {
            out.push(b'}');
        }
        Ok(())
    }
}

impl ser::SerializeMap for Object<'_> {
    type Ok = ();
    type Error = WalkError;

    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Walk {
        self.pending = Some(Cow::Owned(key.serialize(MapKey)?));
        Ok(())
    }

    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Walk {
        let key = self
            .pending
            .take()
            .ok_or_else(|| WalkError("a map value came before its key".into()))?;
        self.entry(key, value)
    }

    fn end(self) -> Walk {
        self.close()
    }
}

/// The `serde` traits of a sequence, each writing an element and closing
/// the array as [`Seq`] does.
macro_rules! seq_traits {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for Seq<'_> {
            type Ok = ();
            type Error = WalkError;

            fn $method<T: ?Sized + Serialize>(&mut self, value: &T) -> Walk {
                self.element(value)
            }

            fn end(self) -> Walk {
                self.close()
            }
        }
    )*};
}

seq_traits!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

/// The `serde` traits of a struct and a struct variant, each writing a
/// field as an entry.
macro_rules! struct_traits {
    ($($trait:ident),*) => {$(
        impl ser::$trait for Object<'_> {
            type Ok = ();
            type Error = WalkError;

            fn serialize_field<T: ?Sized + Serialize>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Walk {
                self.entry(Cow::Borrowed(key), value)
            }

            fn end(self) -> Walk {
                self.close()
            }
        }
    )*};
}

struct_traits!(SerializeStruct, SerializeStructVariant);
