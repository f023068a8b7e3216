//! `CREATE TEMP TABLE` (DuckDB's and PostgreSQL's): a table of the session, which is
//! what an in-memory table already is, so the statement is planned as a plain
//! `CREATE TABLE` (DataFusion refuses TEMPORARY) that stays in memory even when
//! `tessera.warehouse` is set.

use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast;

/// Clears the TEMPORARY of a `CREATE TEMP TABLE` statement; true if it had one, so the
/// caller keeps the table in memory.
pub(crate) fn rewrite(statement: &mut Statement) -> bool {
    let Statement::Statement(inner) = statement else {
        return false;
    };
    let ast::Statement::CreateTable(create) = inner.as_mut() else {
        return false;
    };
    std::mem::take(&mut create.temporary)
}
