//! Table function calls in FROM named as DuckDB names them (under 'duckdb'):
//!
//! - an unquoted function name is folded to lower case like any other identifier
//!   (`FROM JSON_EACH(...)`; DataFusion looks table functions up as written);
//! - `range(...)` and `generate_series(...)` produce one column named after the function
//!   (`SELECT range FROM range(3)`), or after the alias when one is given without column
//!   names (`SELECT r FROM range(3) r`), where DataFusion names it `value`.

use std::ops::ControlFlow;

use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{
    Ident, ObjectNamePart, TableAlias, TableAliasColumnDef, TableFactor, VisitorMut,
};

use crate::statement_walk;

/// The table functions of one column that DuckDB names after the function or alias.
const SERIES_FUNCTIONS: [&str; 2] = ["range", "generate_series"];

/// Renames the table function calls of `statement` (see the module documentation).
pub(crate) fn rewrite(statement: &mut Statement) {
    let _ = statement_walk::walk(statement, &mut Names);
}

struct Names;

impl VisitorMut for Names {
    type Break = ();

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        let TableFactor::Table {
            name,
            alias,
            args: Some(_),
            ..
        } = factor
        else {
            return ControlFlow::Continue(());
        };
        let [ObjectNamePart::Identifier(ident)] = name.0.as_mut_slice() else {
            return ControlFlow::Continue(());
        };
        if ident.quote_style.is_none() {
            ident.value = ident.value.to_lowercase();
        }
        if SERIES_FUNCTIONS.contains(&ident.value.as_str()) {
            name_series_column(alias, ident);
        }
        ControlFlow::Continue(())
    }
}

/// Gives the one column of a series function the name DuckDB gives it: the alias's, or
/// else the function's (which then also names the relation, as in DuckDB).
fn name_series_column(alias: &mut Option<TableAlias>, function: &Ident) {
    match alias {
        Some(alias) if alias.columns.is_empty() => {
            alias.columns = vec![TableAliasColumnDef {
                name: alias.name.clone(),
                data_type: None,
            }];
        }
        Some(_) => {}
        None => {
            *alias = Some(TableAlias {
                explicit: true,
                name: function.clone(),
                columns: vec![TableAliasColumnDef {
                    name: function.clone(),
                    data_type: None,
                }],
                at: None,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::parser::DFParser;
    use datafusion::sql::sqlparser::dialect::DuckDbDialect;

    fn renamed(sql: &str) -> String {
        let mut statement = DFParser::parse_sql_with_dialect(sql, &DuckDbDialect {})
            .unwrap()
            .pop_front()
            .unwrap();
        rewrite(&mut statement);
        statement.to_string()
    }

    #[test]
    fn series_columns_are_named_after_the_function_or_alias() {
        assert_eq!(
            renamed("SELECT range FROM RANGE(3), generate_series(1, 2) g, range(2) AS r(x)"),
            "SELECT range FROM range(3) AS range (range), generate_series(1, 2) g (g), \
             range(2) AS r (x)"
        );
        assert_eq!(
            renamed("SELECT * FROM JSON_EACH('[1]'), \"Range\"(2), t"),
            "SELECT * FROM json_each('[1]'), \"Range\"(2), t"
        );
    }
}
