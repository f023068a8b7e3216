//! Hive partition columns (`hive_partitioning=true`): each `key=value` folder of a file's
//! path is a column, typed by `hive_types={key: 'TYPE'}` or, as DuckDB autocasts, as
//! `BIGINT` when every value is an integer written as BIGINT writes it, else `VARCHAR`.

use arrow::array::{ArrayRef, StringArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field};
use datafusion::common::{Result, plan_err};

/// The partition columns of rows whose files are `files[row]` among `names`.
pub fn columns(
    names: &[&str],
    files: &[usize],
    types: &[(String, String)],
) -> Result<(Vec<Field>, Vec<ArrayRef>)> {
    let partitions: Vec<Vec<(&str, &str)>> = names.iter().map(|n| partitions(n)).collect();
    let keys: Vec<&str> = partitions
        .first()
        .map(|p| p.iter().map(|(k, _)| *k).collect())
        .unwrap_or_default();
    let mut fields = Vec::with_capacity(keys.len());
    let mut arrays = Vec::with_capacity(keys.len());
    for key in keys {
        let value_of = |file: usize| {
            partitions[file]
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| *v)
        };
        let text: StringArray = files.iter().map(|&f| value_of(f)).collect();
        let declared = types.iter().find(|(k, _)| k.eq_ignore_ascii_case(key));
        let data_type = match declared {
            Some((_, name)) => arrow_type(name)?,
            None if (0..names.len()).all(|f| value_of(f).is_some_and(is_integer)) => {
                DataType::Int64
            }
            None => DataType::Utf8,
        };
        arrays.push(cast(&text, &data_type)?);
        fields.push(Field::new(key, data_type, true));
    }
    Ok((fields, arrays))
}

/// An integer written as BIGINT writes it (`07` stays text, as DuckDB's autocast keeps it).
fn is_integer(text: &str) -> bool {
    text.parse::<i64>().is_ok_and(|v| v.to_string() == text)
}

/// The `key=value` folders of a path, outermost first.
fn partitions(name: &str) -> Vec<(&str, &str)> {
    let folders = name.rsplit_once('/').map_or("", |(dir, _)| dir);
    folders
        .split('/')
        .filter_map(|folder| folder.split_once('='))
        .filter(|(key, _)| !key.is_empty())
        .collect()
}

/// The Arrow type of a DuckDB type name `hive_types` gives.
fn arrow_type(name: &str) -> Result<DataType> {
    Ok(match name.to_ascii_uppercase().as_str() {
        "TINYINT" => DataType::Int8,
        "SMALLINT" => DataType::Int16,
        "INT" | "INTEGER" => DataType::Int32,
        "BIGINT" => DataType::Int64,
        "DOUBLE" => DataType::Float64,
        "DATE" => DataType::Date32,
        "VARCHAR" | "TEXT" => DataType::Utf8,
        "BOOLEAN" => DataType::Boolean,
        other => return plan_err!("hive_types: unsupported type {other}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::AsArray;
    use arrow::datatypes::Int32Type;

    #[test]
    fn folders_become_typed_columns() {
        let names = ["t/year=2024/month=07/a.json", "t/year=2023/month=7/b.json"];
        let (fields, arrays) = columns(&names, &[0, 1, 1], &[]).unwrap();
        let names: Vec<&str> = fields.iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, ["year", "month"]);
        assert_eq!(fields[0].data_type(), &DataType::Int64);
        assert_eq!(fields[1].data_type(), &DataType::Utf8);
        assert_eq!(arrays[1].as_string::<i32>().value(0), "07");
        let declared = [("MONTH".to_string(), "int".to_string())];
        let (_, arrays) = columns(&["m/month=07/a.json"], &[0], &declared).unwrap();
        assert_eq!(arrays[0].as_primitive::<Int32Type>().value(0), 7);
    }
}
