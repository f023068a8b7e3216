//! DuckDB's SQL type names planned as Arrow types (`tessera-engine`'s `json/sql_types`)
//! over any text the SQL parser reads as a type: planning never panics and stops at
//! its nesting limit, and a planned type's DuckDB name (`typeof`) plans back to the
//! same Arrow type.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sqlparser::dialect::DuckDbDialect;
use sqlparser::parser::Parser;

/// What `sql_types` uses of Arrow and the SQL parser (the engine's `json::sql_deps`).
mod sql_deps {
    pub use arrow_schema::{DataType, Field, FieldRef, Fields, TimeUnit, UnionFields, UnionMode};
    pub use sqlparser::{ast, dialect::DuckDbDialect, parser::Parser};
}

/// The engine's JSON field: text marked `arrow.json`.
mod json_type {
    use std::collections::HashMap;

    use arrow_schema::{DataType, Field};

    const KEY: &str = "ARROW:extension:name";

    pub fn json_field(name: &str) -> Field {
        Field::new(name, DataType::Utf8, true)
            .with_metadata(HashMap::from([(KEY.to_string(), "arrow.json".to_string())]))
    }

    pub fn is_json(field: &Field) -> bool {
        field.metadata().get(KEY).is_some_and(|n| n == "arrow.json")
    }
}

#[path = "../../crates/tessera-engine/src/json/duckdb_keywords.rs"]
mod duckdb_keywords;
#[path = "../../crates/tessera-engine/src/json/enum_type.rs"]
mod enum_type;
/// The engine's VARIANT field: a struct of binaries marked `arrow.parquet.variant`.
mod variant_type {
    use std::collections::HashMap;

    use arrow_schema::{DataType, Field, Fields};

    const KEY: &str = "ARROW:extension:name";
    const NAME: &str = "arrow.parquet.variant";

    pub fn variant_field(name: &str) -> Field {
        let binaries = Fields::from(vec![
            Field::new("metadata", DataType::BinaryView, false),
            Field::new("value", DataType::BinaryView, false),
        ]);
        Field::new(name, DataType::Struct(binaries), true)
            .with_metadata(HashMap::from([(KEY.to_string(), NAME.to_string())]))
    }

    pub fn is_variant(field: &Field) -> bool {
        field.metadata().get(KEY).is_some_and(|n| n == NAME)
    }
}

#[path = "../../crates/tessera-engine/src/json/sql_types.rs"]
mod sql_types;

/// Longest type text tried: longer inputs only nest deeper, which the limit covers.
const INPUT_BYTES_MAX: usize = 2048;

fn parse(text: &str) -> Option<sqlparser::ast::DataType> {
    Parser::new(&DuckDbDialect {})
        .try_with_sql(text)
        .ok()?
        .parse_data_type()
        .ok()
}

fuzz_target!(|data: &[u8]| {
    if data.len() > INPUT_BYTES_MAX {
        return;
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Some(sql_type) = parse(text) else {
        return;
    };
    let _ = sql_types::duckdb_field(&sql_type);
    let Ok(field) = sql_types::plan_field(&sql_type) else {
        return;
    };
    let name = sql_types::duckdb_type_name(&field);
    let again = parse(&name).unwrap_or_else(|| panic!("{text:?} named {name:?}, which does not parse"));
    let planned = sql_types::plan_field(&again)
        .unwrap_or_else(|e| panic!("{text:?} named {name:?}, which does not plan: {e}"));
    assert_eq!(planned.data_type(), field.data_type(), "{text:?} named {name:?}");
});
