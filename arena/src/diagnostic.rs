//! What every refusal of the arena declares about itself, and the table
//! macro that declares it once.
//!
//! An error of this crate is data: a stable code (`CHIO-SCENARIO-...`), an
//! [`ErrorClass`] saying whether the input or something outside it failed,
//! the field path it concerns, a summary and a help text. [`error_table!`]
//! writes the enum and all of those accessors from one row per variant, and
//! the list of codes `docs/errors.md` is checked against from the same rows,
//! so a variant cannot exist without its code, class, wording and
//! documentation anchor. The docs anchor and the URN are derived from the
//! code by [`docs_anchor`] and [`urn`]. Rendering the `error[CODE]` block and
//! choosing the process exit code are the CLI's.

/// Whether a failure lies in what the user gave or outside it; the CLI maps
/// each class to one exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// The input (a file, a flag, a scenario, a folder named) was refused.
    Input,
    /// The command ran, but a verdict or check the input declared did not hold.
    Expectation,
    /// Something outside the input failed: a disk, a stream, a peer, an evaluator.
    Infrastructure,
}

/// Where `docs/errors.md` is published; each code has an anchor there.
pub const ERRORS_DOC_URL: &str = "https://chio.computer/docs/reference/errors";

/// Splits `CHIO-SCENARIO-DUPLICATE-ID` into `("scenario", "duplicate-id")`.
fn split_code(code: &str) -> (String, String) {
    let lower = code
        .strip_prefix("CHIO-")
        .unwrap_or(code)
        .to_ascii_lowercase();
    match lower.split_once('-') {
        Some((domain, rest)) => (domain.to_string(), rest.to_string()),
        None => (lower, String::new()),
    }
}

/// The heading anchor of a code in `docs/errors.md`, such as
/// `error-scenario-duplicate-id`.
pub fn docs_anchor(code: &str) -> String {
    let (domain, rest) = split_code(code);
    format!("error-{domain}-{rest}")
}

/// The code's URN, such as `urn:chio:error:scenario:duplicate-id`.
pub fn urn(code: &str) -> String {
    let (domain, rest) = split_code(code);
    format!("urn:chio:error:{domain}:{rest}")
}

/// The code's documentation link.
pub fn docs_url(code: &str) -> String {
    format!("{ERRORS_DOC_URL}#{}", docs_anchor(code))
}

/// What a caller needs to report any error of this crate: its code, class
/// and the two halves of its message.
pub trait Diagnostic {
    /// The stable code; one per variant.
    fn code(&self) -> &'static str;
    /// Whether the input or something outside it failed.
    fn class(&self) -> ErrorClass;
    /// What went wrong, naming the field, row or file.
    fn summary(&self) -> String;
    /// How to fix it.
    fn help(&self) -> String;
}

/// Declares an error enum from a table, one row per variant:
///
/// ```text
/// /// doc
/// Variant { /// doc
///           field: Type, ... }
///     => "CHIO-DOMAIN-CODE", Input,
///     at: <Option<&str> expression over the fields>,
///     summary: <String expression over the fields>,
///     help: <&str or String expression over the fields>;
/// ```
///
/// It writes the enum (with `thiserror::Error`, displayed as
/// "summary; help"), a `pub const` list of every code in row order and one
/// of every code with its class, the
/// inherent `code`, `class`, `field`, `summary` and `help` methods, and the
/// [`Diagnostic`] implementation. Unit variants omit the braces.
#[macro_export]
macro_rules! error_table {
    (
        $(#[$enum_meta:meta])*
        $vis:vis enum $Enum:ident;
        $(#[$codes_meta:meta])*
        codes $CODES:ident;
        $(#[$classes_meta:meta])*
        classes $CLASSES:ident;
        $(
            $(#[$vmeta:meta])*
            $Variant:ident $({ $( $(#[$fmeta:meta])* $field:ident : $fty:ty ),* $(,)? })?
                => $code:literal, $class:ident,
                at: $at:expr,
                summary: $summary:expr,
                help: $help:expr;
        )*
    ) => {
        $(#[$enum_meta])*
        #[derive(thiserror::Error)]
        #[error("{}; {}", self.summary(), self.help())]
        $vis enum $Enum {
            $(
                $(#[$vmeta])*
                $Variant $({ $( $(#[$fmeta])* $field : $fty ),* })?,
            )*
        }

        $(#[$codes_meta])*
        pub const $CODES: &[&str] = &[$($code),*];

        $(#[$classes_meta])*
        pub const $CLASSES: &[(&str, $crate::diagnostic::ErrorClass)] =
            &[$(($code, $crate::diagnostic::ErrorClass::$class)),*];

        impl $Enum {
            /// The stable code, such as `CHIO-SCENARIO-DUPLICATE-ID`; one per variant.
            pub fn code(&self) -> &'static str {
                match self {
                    $(Self::$Variant { .. } => $code,)*
                }
            }

            /// Whether the input or something outside it failed; the CLI
            /// exits 2 for [`ErrorClass::Input`](crate::diagnostic::ErrorClass)
            /// and 3 for infrastructure.
            pub fn class(&self) -> $crate::diagnostic::ErrorClass {
                match self {
                    $(Self::$Variant { .. } => $crate::diagnostic::ErrorClass::$class,)*
                }
            }

            /// Whether the failure lies outside the input (exit 3) rather than in it (exit 2).
            pub fn is_infrastructure(&self) -> bool {
                self.class() == $crate::diagnostic::ErrorClass::Infrastructure
            }

            /// The field path the error concerns, when it concerns one field.
            #[allow(unused_variables)]
            pub fn field(&self) -> Option<&str> {
                match self {
                    $(Self::$Variant $({ $($field),* })? => $at,)*
                }
            }

            /// What went wrong, naming the field; the first half of the message.
            #[allow(unused_variables)]
            pub fn summary(&self) -> String {
                match self {
                    $(Self::$Variant $({ $($field),* })? => $summary,)*
                }
            }

            /// How to fix it; the second half of the message and the CLI's `help:` line.
            #[allow(unused_variables)]
            pub fn help(&self) -> String {
                match self {
                    $(Self::$Variant $({ $($field),* })? => String::from($help),)*
                }
            }
        }

        impl $crate::diagnostic::Diagnostic for $Enum {
            fn code(&self) -> &'static str {
                $Enum::code(self)
            }
            fn class(&self) -> $crate::diagnostic::ErrorClass {
                $Enum::class(self)
            }
            fn summary(&self) -> String {
                $Enum::summary(self)
            }
            fn help(&self) -> String {
                $Enum::help(self)
            }
        }
    };
}

pub use error_table;

#[cfg(test)]
mod tests {
    use super::*;

    // The anchor, URN and link are derived from the code alone, as docs/errors.md spells them.
    #[test]
    fn derives_anchor_urn_and_link() {
        assert_eq!(
            docs_anchor("CHIO-SCENARIO-DUPLICATE-ID"),
            "error-scenario-duplicate-id"
        );
        assert_eq!(
            urn("CHIO-CLI-FLAG-OUT-OF-RANGE"),
            "urn:chio:error:cli:flag-out-of-range"
        );
        assert_eq!(
            docs_url("CHIO-ARENA-BUNDLE-IO"),
            "https://chio.computer/docs/reference/errors#error-arena-bundle-io"
        );
    }
}
