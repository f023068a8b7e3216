//! Catalog metadata (GetCatalogs, GetDbSchemas, GetTables, GetTableTypes) answered from
//! the session's `information_schema`, and the server's static SqlInfo and type info.

use arrow::array::{Array, RecordBatch, StringArray};
use arrow::compute::cast;
use arrow::datatypes::DataType;
use arrow_flight::error::FlightError;
use arrow_flight::sql::metadata::{
    SqlInfoData, SqlInfoDataBuilder, XdbcTypeInfo, XdbcTypeInfoData, XdbcTypeInfoDataBuilder,
};
use arrow_flight::sql::{
    CommandGetCatalogs, CommandGetDbSchemas, CommandGetTableTypes, CommandGetTables, Nullable,
    Searchable, SqlInfo, XdbcDataType,
};
use datafusion::common::TableReference;
use datafusion::error::DataFusionError;
use tonic::Status;

use super::clients::Client;

/// The table types `information_schema.tables` names.
const TABLE_TYPES: [&str; 3] = ["BASE TABLE", "VIEW", "LOCAL TEMPORARY"];

/// The catalogs of the client's session.
pub(super) async fn catalogs(
    client: &Client,
    query: CommandGetCatalogs,
) -> Result<RecordBatch, Status> {
    let rows = strings(
        client,
        "SELECT DISTINCT catalog_name FROM information_schema.schemata ORDER BY 1",
    )
    .await?;
    let mut builder = query.into_builder();
    for row in rows {
        builder.append(&row[0]);
    }
    builder.build().map_err(Status::from)
}

/// The schemas of the client's session, filtered as asked.
pub(super) async fn db_schemas(
    client: &Client,
    query: CommandGetDbSchemas,
) -> Result<RecordBatch, Status> {
    let rows = strings(
        client,
        "SELECT catalog_name, schema_name FROM information_schema.schemata ORDER BY 1, 2",
    )
    .await?;
    let mut builder = query.into_builder();
    for row in rows {
        builder.append(&row[0], &row[1]);
    }
    builder.build().map_err(Status::from)
}

/// The tables of the client's session, filtered as asked, with their Arrow schemas
/// when asked.
pub(super) async fn tables(
    client: &Client,
    query: CommandGetTables,
) -> Result<RecordBatch, Status> {
    let rows = strings(
        client,
        "SELECT table_catalog, table_schema, table_name, table_type \
         FROM information_schema.tables ORDER BY 1, 2, 3",
    )
    .await?;
    let include_schema = query.include_schema;
    let mut builder = query.into_builder();
    let ctx = client.open.session.context();
    for row in rows {
        let [catalog, schema, table, table_type] = &row[..] else {
            return Err(Status::internal(
                "information_schema.tables has four columns",
            ));
        };
        let table_schema = match include_schema {
            true => table_schema(ctx, catalog, schema, table).await?,
            false => arrow::datatypes::Schema::empty(),
        };
        builder
            .append(catalog, schema, table, table_type, &table_schema)
            .map_err(Status::from)?;
    }
    builder.build().map_err(Status::from)
}

/// The table types tables of the session may have.
pub(super) fn table_types(query: CommandGetTableTypes) -> Result<RecordBatch, Status> {
    let mut builder = query.into_builder();
    for table_type in TABLE_TYPES {
        builder.append(table_type);
    }
    builder.build().map_err(Status::from)
}

/// What the server tells clients about itself and its SQL (ADBC's `get_info`, the
/// capabilities BI tools ask for).
pub(super) fn sql_info() -> Result<SqlInfoData, FlightError> {
    let mut info = SqlInfoDataBuilder::new();
    info.append(SqlInfo::FlightSqlServerName, "Tessera");
    info.append(SqlInfo::FlightSqlServerVersion, env!("CARGO_PKG_VERSION"));
    info.append(SqlInfo::FlightSqlServerArrowVersion, "59");
    info.append(SqlInfo::FlightSqlServerReadOnly, false);
    info.append(SqlInfo::FlightSqlServerSql, true);
    info.append(SqlInfo::FlightSqlServerSubstrait, false);
    // SqlSupportedTransaction::None: every statement commits on its own.
    info.append(SqlInfo::FlightSqlServerTransaction, 0i32);
    info.append(SqlInfo::FlightSqlServerCancel, true);
    info.append(SqlInfo::FlightSqlServerStatementTimeout, 0i32);
    info.append(SqlInfo::SqlDdlCatalog, false);
    info.append(SqlInfo::SqlDdlSchema, true);
    info.append(SqlInfo::SqlDdlTable, true);
    // SqlSupportedCaseSensitivity::Lowercase: unquoted identifiers are folded to lower case.
    info.append(SqlInfo::SqlIdentifierCase, 3i32);
    info.append(SqlInfo::SqlIdentifierQuoteChar, "\"");
    info.append(SqlInfo::SqlAllTablesAreSelectable, true);
    // SqlNullOrdering::NullsSortedHigh: NULLs last ascending, first descending.
    info.append(SqlInfo::SqlNullOrdering, 0i32);
    info.append(SqlInfo::SqlSearchStringEscape, "\\");
    info.append(SqlInfo::SqlSupportsColumnAliasing, true);
    info.append(SqlInfo::SqlNullPlusNullIsNull, true);
    info.append(SqlInfo::SqlSchemaTerm, "schema");
    info.append(SqlInfo::SqlCatalogTerm, "catalog");
    info.build()
}

/// The SQL types clients can map their types to (JDBC and ODBC `getTypeInfo`).
pub(super) fn xdbc_types() -> Result<XdbcTypeInfoData, FlightError> {
    let types = [
        ("BOOLEAN", XdbcDataType::XdbcBit, None),
        ("SMALLINT", XdbcDataType::XdbcSmallint, None),
        ("INTEGER", XdbcDataType::XdbcInteger, None),
        ("BIGINT", XdbcDataType::XdbcBigint, None),
        ("REAL", XdbcDataType::XdbcReal, None),
        ("DOUBLE", XdbcDataType::XdbcDouble, None),
        ("DECIMAL", XdbcDataType::XdbcDecimal, None),
        ("VARCHAR", XdbcDataType::XdbcVarchar, Some("'")),
        ("BYTEA", XdbcDataType::XdbcVarbinary, None),
        ("DATE", XdbcDataType::XdbcDate, Some("'")),
        ("TIMESTAMP", XdbcDataType::XdbcTimestamp, Some("'")),
    ];
    let mut builder = XdbcTypeInfoDataBuilder::new();
    for (name, data_type, quote) in types {
        builder.append(XdbcTypeInfo {
            type_name: name.to_string(),
            data_type,
            literal_prefix: quote.map(str::to_string),
            literal_suffix: quote.map(str::to_string),
            nullable: Nullable::NullabilityNullable,
            case_sensitive: data_type == XdbcDataType::XdbcVarchar,
            searchable: Searchable::Full,
            local_type_name: Some(name.to_string()),
            sql_data_type: data_type,
            num_prec_radix: None,
            ..XdbcTypeInfo::default()
        });
    }
    builder.build()
}

/// The Arrow schema of one table (its provider's, as queries see it; the session also
/// resolves `information_schema` this way).
async fn table_schema(
    ctx: &datafusion::prelude::SessionContext,
    catalog: &str,
    schema: &str,
    table: &str,
) -> Result<arrow::datatypes::Schema, Status> {
    let name = TableReference::full(catalog, schema, table);
    let provider = ctx
        .table_provider(name)
        .await
        .map_err(|e| Status::not_found(format!("{catalog}.{schema}.{table}: {e}")))?;
    Ok(provider.schema().as_ref().clone())
}

/// The rows of an `information_schema` query, every column as text.
async fn strings(client: &Client, sql: &str) -> Result<Vec<Vec<String>>, Status> {
    let batches = async { client.open.session.sql(sql).await?.collect().await }
        .await
        .map_err(|e| client.error(&e))?;
    let mut rows = Vec::new();
    for batch in batches {
        let columns = batch
            .columns()
            .iter()
            .map(|c| cast(c, &DataType::Utf8))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| client.error(&DataFusionError::from(e)))?;
        let columns: Vec<&StringArray> = columns
            .iter()
            .filter_map(|c| c.as_any().downcast_ref::<StringArray>())
            .collect();
        assert_eq!(
            columns.len(),
            batch.num_columns(),
            "cast to Utf8 gives strings"
        );
        for i in 0..batch.num_rows() {
            rows.push(columns.iter().map(|c| c.value(i).to_string()).collect());
        }
    }
    Ok(rows)
}
