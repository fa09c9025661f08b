//! [`code_enum!`](crate::code_enum): the one declaration of a table of
//! stable codes.

/// Declares a table of stable codes: a fieldless enum (`Debug`, `Clone`,
/// `Copy`, `PartialEq`, `Eq`, `PartialOrd`, `Ord`, `Hash`) whose every
/// variant has a kebab-case spelling, with `ALL` (every code, in
/// declaration order), `as_str`, `parse` (the code spelt so, if any) and
/// a `Display` that prints the spelling. The kernel's
/// [`ReasonCode`](crate::reason::ReasonCode) and a node's codes are
/// declared with it.
///
/// ```
/// chio_kernel::code_enum! {
///     /// What a light shows.
///     pub enum Light;
///     /// Stop.
///     Red => "red",
///     /// Go.
///     Green => "green",
/// }
/// assert_eq!(Light::parse("green"), Some(Light::Green));
/// assert_eq!(Light::Red.to_string(), "red");
/// assert_eq!(Light::ALL, &[Light::Red, Light::Green]);
/// ```
#[macro_export]
macro_rules! code_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident;
        $($(#[$doc:meta])* $variant:ident => $code:literal,)+
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        $vis enum $name {
            $($(#[$doc])* $variant,)+
        }

        impl $name {
            /// Every code, in documentation order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The kebab-case code.
            pub fn as_str(&self) -> &'static str {
                match self {
                    $($name::$variant => $code,)+
                }
            }

            /// The code spelt `text`, if it is one.
            pub fn parse(text: &str) -> Option<$name> {
                $name::ALL.iter().copied().find(|c| c.as_str() == text)
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
