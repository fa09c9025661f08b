//! The canonical writer: a `serde` serializer that writes RFC 8785 bytes
//! straight from a value, without first building a `serde_json::Value`
//! tree (an allocation per key and per string, then a second walk to print
//! it).
//!
//! It writes exactly what printing `serde_json::to_value(x)` canonically
//! writes, errors included:
//! - an object's entries are written in canonical key order, a later entry
//!   under a key already written replacing it (as a JSON map insert does);
//! - a float that is not finite is `null`, as `to_value` makes it;
//! - an error `to_value` meets while building the tree (a custom error of a
//!   `Serialize` impl, a key that is not a string, a 128-bit integer out of
//!   range) stops the writer where it is met;
//! - an integer past 2^53, which the tree holds and only printing refuses,
//!   is reported as printing meets it: the first in canonical order. The
//!   writer notes it and goes on, so that an error of the first kind later
//!   in the value still wins, as it does when the tree is built first.

use std::fmt::Display;

use serde::ser::{self, Serialize};

use super::compound::{Entry, Object, Seq};

use super::{format_es_number, write_string, CanonicalError, MAX_EXACT_INTEGER};

/// An error met while walking the value: what `to_value` would report.
#[derive(Debug)]
pub(super) struct WalkError(pub(super) String);

impl Display for WalkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for WalkError {}

impl ser::Error for WalkError {
    fn custom<T: Display>(msg: T) -> Self {
        WalkError(msg.to_string())
    }
}

pub(super) type Walk<T = ()> = Result<T, WalkError>;

pub(super) fn key_must_be_a_string() -> WalkError {
    WalkError("key must be a string".into())
}

/// Writes `value` canonically into `out`.
pub(super) fn write<T: Serialize + ?Sized>(
    value: &T,
    out: &mut Vec<u8>,
) -> Result<(), CanonicalError> {
    let mut deferred = None;
    let mut spare = Spare::default();
    value
        .serialize(Writer {
            out,
            deferred: &mut deferred,
            spare: &mut spare,
        })
        .map_err(|e| CanonicalError::Serialize(e.0))?;
    deferred.map_or(Ok(()), Err)
}

/// Where one value is written, and where the first printing error met in
/// it is kept.
pub(super) struct Writer<'a> {
    pub(super) out: &'a mut Vec<u8>,
    pub(super) deferred: &'a mut Option<CanonicalError>,
    pub(super) spare: &'a mut Spare,
}

/// What every object of one value shares, so that writing one allocates
/// nothing of its own: the entries of the objects open, innermost last
/// (an object's own start at its `base`), and the room an object whose
/// keys came out of order is rewritten from.
#[derive(Default)]
pub(super) struct Spare {
    pub(super) entries: Vec<Entry>,
    pub(super) scratch: Vec<u8>,
}

pub(super) fn defer(deferred: &mut Option<CanonicalError>, error: CanonicalError) {
    if deferred.is_none() {
        *deferred = Some(error);
    }
}

impl<'a> Writer<'a> {
    fn unsigned(self, u: u64) -> Walk {
        if u > MAX_EXACT_INTEGER {
            defer(
                self.deferred,
                CanonicalError::IntegerOutOfRange(u.to_string()),
            );
        } else {
            self.out
                .extend_from_slice(itoa::Buffer::new().format(u).as_bytes());
        }
        Ok(())
    }

    fn signed(self, i: i64) -> Walk {
        if i.unsigned_abs() > MAX_EXACT_INTEGER {
            defer(
                self.deferred,
                CanonicalError::IntegerOutOfRange(i.to_string()),
            );
        } else {
            self.out
                .extend_from_slice(itoa::Buffer::new().format(i).as_bytes());
        }
        Ok(())
    }

    fn float(self, f: f64) -> Walk {
        if !f.is_finite() {
            self.out.extend_from_slice(b"null");
            return Ok(());
        }
        match format_es_number(f) {
            Ok(text) => self.out.extend_from_slice(text.as_bytes()),
            Err(error) => defer(self.deferred, error),
        }
        Ok(())
    }

    /// Opens `{"variant":` around a variant's content.
    fn open_variant(&mut self, variant: &str) {
        self.out.push(b'{');
        write_string(variant, self.out);
        self.out.push(b':');
    }

    fn seq(self, close: &'static [u8]) -> Seq<'a> {
        self.out.push(b'[');
        Seq {
            out: self.out,
            deferred: self.deferred,
            spare: self.spare,
            first: true,
            close,
        }
    }

    fn object(self, close_variant: bool) -> Object<'a> {
        let open = self.out.len();
        self.out.push(b'{');
        let base = self.spare.entries.len();
        Object {
            out: self.out,
            deferred: self.deferred,
            spare: self.spare,
            open,
            base,
            in_order: true,
            pending: None,
            close_variant,
        }
    }
}

impl<'a> ser::Serializer for Writer<'a> {
    type Ok = ();
    type Error = WalkError;
    type SerializeSeq = Seq<'a>;
    type SerializeTuple = Seq<'a>;
    type SerializeTupleStruct = Seq<'a>;
    type SerializeTupleVariant = Seq<'a>;
    type SerializeMap = Object<'a>;
    type SerializeStruct = Object<'a>;
    type SerializeStructVariant = Object<'a>;

    fn serialize_bool(self, v: bool) -> Walk {
        self.out
            .extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }

    fn serialize_i8(self, v: i8) -> Walk {
        self.signed(i64::from(v))
    }

    fn serialize_i16(self, v: i16) -> Walk {
        self.signed(i64::from(v))
    }

    fn serialize_i32(self, v: i32) -> Walk {
        self.signed(i64::from(v))
    }

    fn serialize_i64(self, v: i64) -> Walk {
        self.signed(v)
    }

    fn serialize_i128(self, v: i128) -> Walk {
        if let Ok(u) = u64::try_from(v) {
            self.unsigned(u)
        } else if let Ok(i) = i64::try_from(v) {
            self.signed(i)
        } else {
            Err(WalkError("number out of range".into()))
        }
    }

    fn serialize_u8(self, v: u8) -> Walk {
        self.unsigned(u64::from(v))
    }

    fn serialize_u16(self, v: u16) -> Walk {
        self.unsigned(u64::from(v))
    }

    fn serialize_u32(self, v: u32) -> Walk {
        self.unsigned(u64::from(v))
    }

    fn serialize_u64(self, v: u64) -> Walk {
        self.unsigned(v)
    }

    fn serialize_u128(self, v: u128) -> Walk {
        match u64::try_from(v) {
            Ok(u) => self.unsigned(u),
            Err(_) => Err(WalkError("number out of range".into())),
        }
    }

    fn serialize_f32(self, v: f32) -> Walk {
        self.float(f64::from(v))
    }

    fn serialize_f64(self, v: f64) -> Walk {
        self.float(v)
    }

    fn serialize_char(self, v: char) -> Walk {
        write_string(v.encode_utf8(&mut [0u8; 4]), self.out);
        Ok(())
    }

    fn serialize_str(self, v: &str) -> Walk {
        write_string(v, self.out);
        Ok(())
    }

    fn serialize_bytes(self, v: &[u8]) -> Walk {
        let mut seq = self.seq(b"]");
        for b in v {
            ser::SerializeSeq::serialize_element(&mut seq, b)?;
        }
        ser::SerializeSeq::end(seq)
    }

    fn serialize_none(self) -> Walk {
        self.serialize_unit()
    }

    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Walk {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Walk {
        self.out.extend_from_slice(b"null");
        Ok(())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Walk {
        self.serialize_unit()
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Walk {
        self.serialize_str(variant)
    }

    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Walk {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        mut self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Walk {
        self.open_variant(variant);
        value.serialize(Writer {
            out: &mut *self.out,
            deferred: &mut *self.deferred,
            spare: &mut *self.spare,
        })?;
        self.out.push(b'}');
        Ok(())
    }

    fn serialize_seq(self, _len: Option<usize>) -> Walk<Seq<'a>> {
        Ok(self.seq(b"]"))
    }

    fn serialize_tuple(self, _len: usize) -> Walk<Seq<'a>> {
        Ok(self.seq(b"]"))
    }

    fn serialize_tuple_struct(self, _name: &'static str, _len: usize) -> Walk<Seq<'a>> {
        Ok(self.seq(b"]"))
    }

    fn serialize_tuple_variant(
        mut self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Walk<Seq<'a>> {
        self.open_variant(variant);
        Ok(self.seq(b"]}"))
    }

    fn serialize_map(self, _len: Option<usize>) -> Walk<Object<'a>> {
        Ok(self.object(false))
    }

    fn serialize_struct(self, _name: &'static str, _len: usize) -> Walk<Object<'a>> {
        Ok(self.object(false))
    }

    fn serialize_struct_variant(
        mut self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Walk<Object<'a>> {
        self.open_variant(variant);
        Ok(self.object(true))
    }
}
