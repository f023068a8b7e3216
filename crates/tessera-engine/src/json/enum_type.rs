//! DuckDB's `ENUM('a', 'b', ...)`: a value that is one of a fixed list of labels.
//!
//! An ENUM value is its label's UTF-8 text in a field marked `tessera.enum`, whose
//! extension metadata is the type as DuckDB names it (`ENUM('sad', 'ok')`). Text rather
//! than an Arrow dictionary, so that every text function, display and `to_json` reads it
//! as the label DuckDB shows; the labels travel with the field through DataFusion, so
//! that `typeof` names the type and a cast to it (the ENUM casts of the functions) can
//! refuse a text that is no label. Comparisons follow the text, not the labels' order.
//!
//! Arrow's schema types and the SQL parser only, so that the fuzz target `sql_types`
//! compiles it with `sql_types`.

use std::collections::{HashMap, HashSet};

use super::sql_deps::{DataType, DuckDbDialect, Field, Parser, ast};

/// The extension name of an ENUM field.
pub const ENUM_EXTENSION_NAME: &str = "tessera.enum";
/// The field metadata key naming an Arrow extension type.
const EXTENSION_NAME_KEY: &str = "ARROW:extension:name";
/// The field metadata key of an extension type's parameters (an ENUM's DuckDB name).
const EXTENSION_METADATA_KEY: &str = "ARROW:extension:metadata";

/// A nullable ENUM field `name` of `labels`, in order.
pub fn enum_field(name: &str, labels: &[String]) -> Field {
    Field::new(name, DataType::Utf8, true).with_metadata(HashMap::from([
        (
            EXTENSION_NAME_KEY.to_string(),
            ENUM_EXTENSION_NAME.to_string(),
        ),
        (EXTENSION_METADATA_KEY.to_string(), enum_type_name(labels)),
    ]))
}

/// DuckDB's name of the ENUM of `labels`: `ENUM('a', 'it''s')`.
pub fn enum_type_name(labels: &[String]) -> String {
    let quoted: Vec<String> = labels
        .iter()
        .map(|l| format!("'{}'", l.replace('\'', "''")))
        .collect();
    format!("ENUM({})", quoted.join(", "))
}

/// DuckDB's name of the ENUM `field` holds; `None` when it holds no ENUM.
pub fn enum_name(field: &Field) -> Option<&str> {
    let marked = field
        .metadata()
        .get(EXTENSION_NAME_KEY)
        .is_some_and(|name| name == ENUM_EXTENSION_NAME);
    match marked && field.data_type() == &DataType::Utf8 {
        true => field
            .metadata()
            .get(EXTENSION_METADATA_KEY)
            .map(String::as_str),
        false => None,
    }
}

/// The labels of the ENUM `field` holds, in order; `None` when it holds no ENUM (or
/// its metadata was not written by [`enum_field`]).
pub fn enum_labels(field: &Field) -> Option<Vec<String>> {
    let name = enum_name(field)?;
    let parsed = Parser::new(&DuckDbDialect {})
        .try_with_sql(name)
        .and_then(|mut p| p.parse_data_type())
        .ok()?;
    match parsed {
        ast::DataType::Enum(members, None) => members
            .into_iter()
            .map(|m| match m {
                ast::EnumMember::Name(label) => Some(label),
                ast::EnumMember::NamedValue(..) => None,
            })
            .collect(),
        _ => None,
    }
}

/// The labels of a parsed `ENUM(...)` type, checked as DuckDB checks them: no
/// repeated label, no `'label' = number` (ClickHouse's spelling).
pub fn labels_of(members: &[ast::EnumMember]) -> Result<Vec<String>, String> {
    let mut seen = HashSet::with_capacity(members.len());
    let mut labels = Vec::with_capacity(members.len());
    for member in members {
        let ast::EnumMember::Name(label) = member else {
            return Err("an ENUM label takes no value ('label' = n)".to_string());
        };
        if !seen.insert(label.as_str()) {
            return Err(format!(
                "Attempted to create ENUM type with duplicate value {label}"
            ));
        }
        labels.push(label.clone());
    }
    Ok(labels)
}
