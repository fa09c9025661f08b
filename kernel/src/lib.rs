//! The Chio authorization kernel.
#![deny(missing_docs)]

pub mod canonical;
