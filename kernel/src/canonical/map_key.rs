//! Map keys as JSON keeps them, for the canonical writer.

use serde::ser::{self, Impossible, Serialize};

use super::writer::{key_must_be_a_string, Walk, WalkError};

/// A map key as JSON keeps it: a string, or a number or boolean written as
/// one; anything else is refused, as `to_value` refuses it.
pub(super) struct MapKey;

/// A float key's text exactly as `to_value` writes it.
fn float_key<F: Serialize + Copy>(f: F) -> Walk<String> {
    struct One<F>(F);
    impl<F: Serialize + Copy> Serialize for One<F> {
        fn serialize<S: ser::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_map(std::iter::once((self.0, ())))
        }
    }
    match serde_json::to_value(One(f)) {
        Ok(serde_json::Value::Object(map)) => map
            .into_iter()
            .next()
            .map(|(key, _)| key)
            .ok_or_else(key_must_be_a_string),
        Ok(_) => Err(key_must_be_a_string()),
        Err(e) => Err(WalkError(e.to_string())),
    }
}

/// Key methods for values whose key is their text: a boolean as `true` or
/// `false`, an integer in decimal, a character as itself.
macro_rules! written_as_text {
    ($($method:ident: $type:ty),*) => {$(
        fn $method(self, v: $type) -> Walk<String> {
            Ok(v.to_string())
        }
    )*};
}

impl ser::Serializer for MapKey {
    type Ok = String;
    type Error = WalkError;
    type SerializeSeq = Impossible<String, WalkError>;
    type SerializeTuple = Impossible<String, WalkError>;
    type SerializeTupleStruct = Impossible<String, WalkError>;
    type SerializeTupleVariant = Impossible<String, WalkError>;
    type SerializeMap = Impossible<String, WalkError>;
    type SerializeStruct = Impossible<String, WalkError>;
    type SerializeStructVariant = Impossible<String, WalkError>;

    written_as_text!(
        serialize_bool: bool,
        serialize_i8: i8,
        serialize_i16: i16,
        serialize_i32: i32,
        serialize_i64: i64,
        serialize_i128: i128,
        serialize_u8: u8,
        serialize_u16: u16,
        serialize_u32: u32,
        serialize_u64: u64,
        serialize_u128: u128,
        serialize_char: char
    );

    fn serialize_f32(self, v: f32) -> Walk<String> {
        float_key(v)
    }

    fn serialize_f64(self, v: f64) -> Walk<String> {
        float_key(v)
    }

    fn serialize_str(self, v: &str) -> Walk<String> {
        Ok(v.to_owned())
    }

    fn serialize_bytes(self, _v: &[u8]) -> Walk<String> {
        Err(key_must_be_a_string())
    }

    fn serialize_none(self) -> Walk<String> {
        Err(key_must_be_a_string())
    }

    fn serialize_some<T: ?Sized + Serialize>(self, _value: &T) -> Walk<String> {
        Err(key_must_be_a_string())
    }

    fn serialize_unit(self) -> Walk<String> {
        Err(key_must_be_a_string())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Walk<String> {
        Err(key_must_be_a_string())
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Walk<String> {
        Ok(variant.to_owned())
    }

    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Walk<String> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Walk<String> {
        Err(key_must_be_a_string())
    }

    fn serialize_seq(self, _len: Option<usize>) -> Walk<Self::SerializeSeq> {
        Err(key_must_be_a_string())
    }

    fn serialize_tuple(self, _len: usize) -> Walk<Self::SerializeTuple> {
        Err(key_must_be_a_string())
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Walk<Self::SerializeTupleStruct> {
        Err(key_must_be_a_string())
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Walk<Self::SerializeTupleVariant> {
        Err(key_must_be_a_string())
    }

    fn serialize_map(self, _len: Option<usize>) -> Walk<Self::SerializeMap> {
        Err(key_must_be_a_string())
    }

    fn serialize_struct(self, _name: &'static str, _len: usize) -> Walk<Self::SerializeStruct> {
        Err(key_must_be_a_string())
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Walk<Self::SerializeStructVariant> {
        Err(key_must_be_a_string())
    }
}
