//! tessera-gen
