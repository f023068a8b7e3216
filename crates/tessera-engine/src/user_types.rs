//! DuckDB's named types of a session: `CREATE [OR REPLACE] TYPE name AS ENUM ('a', ...)`
//! and `DROP TYPE [IF EXISTS] name`, which DataFusion does not plan, run here before
//! planning; the session's type planner (above this module) then plans `name`
//! (in casts, column definitions, `name[]`) as its definition. Names are
//! case-insensitive, as DuckDB's are.
//!
//! `json_transform`'s structure names types inside a string, which the function reads
//! without the session: names of this registry there are replaced by their definitions
//! before planning (`'{"a": "mood[]"}'` becomes `'{"a": "ENUM(''sad'', ''ok'')[]"}'`).

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::{Arc, RwLock};

use arrow::datatypes::{Field, FieldRef};
use datafusion::common::{DataFusionError, Result, plan_err};
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{
    self, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, ObjectType, Value, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::Dialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer};
use tessera_json::tree::Json;

use crate::json::enum_type::labels_of;
use crate::json::sql_types::{duckdb_type_name, plan_field};

/// Named types a session may hold: each is a line of SQL, but a loop of statements
/// must not grow the registry without end.
const TYPES_MAX: usize = 10_000;

/// The functions whose second argument is a structure naming types in strings.
const STRUCTURE_FUNCTIONS: [&str; 4] = [
    "json_transform",
    "json_transform_strict",
    "from_json",
    "from_json_strict",
];

/// The named types of one session, by lower-cased name: each a DuckDB type Tessera
/// plans (`ENUM('a', 'b')`).
#[derive(Debug, Default)]
pub struct UserTypes {
    types: RwLock<HashMap<String, ast::DataType>>,
}

impl UserTypes {
    /// A new, empty registry, shared by the session and its type planner.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The field of `sql_type` when it names a type of this registry.
    pub fn field(&self, sql_type: &ast::DataType) -> Result<Option<FieldRef>> {
        let ast::DataType::Custom(name, modifiers) = sql_type else {
            return Ok(None);
        };
        if !modifiers.is_empty() {
            return Ok(None);
        }
        match self.definition(&name.to_string()) {
            Some(definition) => Ok(Some(Arc::new(planned(&definition)?))),
            None => Ok(None),
        }
    }

    fn definition(&self, name: &str) -> Option<ast::DataType> {
        let types = self.types.read().unwrap_or_else(|e| e.into_inner());
        types.get(&name.to_lowercase()).cloned()
    }

    /// Runs `statement` when it creates or drops a named type: `Some` with its outcome,
    /// `None` for any other statement.
    pub(crate) fn execute(&self, statement: &Statement) -> Option<Result<()>> {
        let Statement::Statement(inner) = statement else {
            return None;
        };
        match inner.as_ref() {
            ast::Statement::CreateType {
                name,
                representation,
            } => Some(self.create(&name.to_string(), representation.as_ref())),
            ast::Statement::Drop {
                object_type: ObjectType::Type,
                if_exists,
                names,
                ..
            } => Some(self.drop(names, *if_exists)),
            _ => None,
        }
    }

    fn create(
        &self,
        name: &str,
        representation: Option<&ast::UserDefinedTypeRepresentation>,
    ) -> Result<()> {
        let Some(ast::UserDefinedTypeRepresentation::Enum { labels }) = representation else {
            return plan_err!("CREATE TYPE {name}: only AS ENUM ('label', ...) is supported");
        };
        let members: Vec<ast::EnumMember> = labels
            .iter()
            .map(|l| ast::EnumMember::Name(l.value.clone()))
            .collect();
        labels_of(&members).map_err(DataFusionError::Plan)?;
        let builtin =
            ast::DataType::Custom(ast::ObjectName::from(vec![ast::Ident::new(name)]), vec![]);
        let mut types = self.types.write().unwrap_or_else(|e| e.into_inner());
        let key = name.to_lowercase();
        if types.contains_key(&key) || plan_field(&builtin).is_ok() {
            return plan_err!("Type with name \"{name}\" already exists!");
        }
        if types.len() >= TYPES_MAX {
            return plan_err!("CREATE TYPE {name}: a session holds at most {TYPES_MAX} types");
        }
        types.insert(key, ast::DataType::Enum(members, None));
        Ok(())
    }

    fn drop(&self, names: &[ast::ObjectName], if_exists: bool) -> Result<()> {
        let mut types = self.types.write().unwrap_or_else(|e| e.into_inner());
        if let Some(missing) = names
            .iter()
            .map(|n| n.to_string())
            .find(|n| !types.contains_key(&n.to_lowercase()))
            && !if_exists
        {
            return plan_err!("Type with name {missing} does not exist!");
        }
        for name in names {
            types.remove(&name.to_string().to_lowercase());
        }
        Ok(())
    }

    /// Replaces the names of this registry inside the structure strings of
    /// `json_transform` calls in `statement` by their definitions.
    pub(crate) fn rewrite_structures(&self, statement: &mut Statement) {
        if self.types.read().map_or(true, |t| t.is_empty()) {
            return;
        }
        let _ = crate::statement_walk::walk(statement, &mut StructureNames(self));
    }

    /// `structure` (JSON text) with the names of this registry in its strings replaced;
    /// `None` when it names none (or is no JSON, which the function reports).
    fn resolved_structure(&self, structure: &str) -> Option<String> {
        let mut tape = crate::json::function_tape();
        let mut json = Json::parse(structure.as_bytes(), &mut tape).ok()?;
        self.resolve(&mut json).then(|| json.to_text())
    }

    /// Replaces type names in the strings of `json`; true if it replaced any. The
    /// recursion follows the parsed document, whose depth the parser limits.
    fn resolve(&self, json: &mut Json) -> bool {
        match json {
            Json::String(text) => {
                // `mood`, `mood[]`, `mood[2]`: the name, then any array suffixes.
                let (name, suffix) = text.split_at(text.find('[').unwrap_or(text.len()));
                let Some(field) = self
                    .definition(name.trim())
                    .and_then(|d| plan_field(&d).ok())
                else {
                    return false;
                };
                *text = format!("{}{suffix}", duckdb_type_name(&field));
                true
            }
            Json::Array(items) => self.resolve_all(items.iter_mut()),
            Json::Object(members) => self.resolve_all(members.iter_mut().map(|(_, j)| j)),
            _ => false,
        }
    }

    /// [`Self::resolve`] on every one of `values` (none skipped); true if it replaced
    /// any name.
    fn resolve_all<'a>(&self, values: impl Iterator<Item = &'a mut Json>) -> bool {
        let mut any = false;
        for value in values {
            any |= self.resolve(value);
        }
        any
    }
}

/// A named type's definition as an Arrow field.
fn planned(definition: &ast::DataType) -> Result<Field> {
    plan_field(definition).map_err(|e| DataFusionError::Plan(e.to_string()))
}

/// The visitor of [`UserTypes::rewrite_structures`].
struct StructureNames<'a>(&'a UserTypes);

impl VisitorMut for StructureNames<'_> {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        let Expr::Function(function) = expr else {
            return ControlFlow::Continue(());
        };
        let name = function.name.to_string().to_lowercase();
        if !STRUCTURE_FUNCTIONS.contains(&name.as_str()) {
            return ControlFlow::Continue(());
        }
        let FunctionArguments::List(list) = &mut function.args else {
            return ControlFlow::Continue(());
        };
        if let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(value)))) =
            list.args.get_mut(1)
            && let Value::SingleQuotedString(structure) = &mut value.value
            && let Some(resolved) = self.0.resolved_structure(structure)
        {
            *structure = resolved;
        }
        ControlFlow::Continue(())
    }
}

/// `script` with each `CREATE OR REPLACE TYPE name` (which sqlparser does not read)
/// written as `DROP TYPE IF EXISTS name; CREATE TYPE name`, DuckDB's meaning of it.
/// Text that does not tokenize is returned unchanged for the parser to report.
pub(crate) fn prepare<'a>(script: &'a str, grammar: &dyn Dialect) -> Cow<'a, str> {
    if !script.to_ascii_uppercase().contains("REPLACE") {
        return Cow::Borrowed(script);
    }
    let Ok(tokens) = Tokenizer::new(grammar, script).tokenize_with_location() else {
        return Cow::Borrowed(script);
    };
    let significant: Vec<&TokenWithSpan> = tokens
        .iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_)))
        .collect();
    let mut edits = Vec::new();
    for (i, window) in significant.windows(5).enumerate() {
        let starts = i == 0 || significant[i - 1].token == Token::SemiColon;
        let words = [
            Keyword::CREATE,
            Keyword::OR,
            Keyword::REPLACE,
            Keyword::TYPE,
        ];
        let keywords = window[..4]
            .iter()
            .zip(words)
            .all(|(t, k)| matches!(&t.token, Token::Word(w) if w.keyword == k));
        if starts && keywords && matches!(window[4].token, Token::Word(_)) {
            edits.push((
                window[0].span.start,
                window[3].span.end,
                window[4].token.to_string(),
            ));
        }
    }
    if edits.is_empty() {
        return Cow::Borrowed(script);
    }
    let mut out = String::with_capacity(script.len() + 32 * edits.len());
    let mut copied = 0;
    for (start, end, name) in edits {
        let (Some(start), Some(end)) = (byte_offset(script, start), byte_offset(script, end))
        else {
            return Cow::Borrowed(script);
        };
        out.push_str(&script[copied..start]);
        out.push_str(&format!("DROP TYPE IF EXISTS {name}; CREATE TYPE"));
        copied = end;
    }
    out.push_str(&script[copied..]);
    Cow::Owned(out)
}

/// The byte offset in `script` of a tokenizer location (line and column from 1, the
/// column counted in characters).
fn byte_offset(script: &str, location: Location) -> Option<usize> {
    let line = usize::try_from(location.line).ok()?.checked_sub(1)?;
    let column = usize::try_from(location.column).ok()?.checked_sub(1)?;
    let line_start: usize = script.split_inclusive('\n').take(line).map(str::len).sum();
    let rest = script.get(line_start..)?;
    match rest.char_indices().nth(column) {
        Some((offset, _)) => Some(line_start + offset),
        None => Some(script.len()),
    }
}

#[cfg(test)]
mod tests {
    use datafusion::sql::parser::DFParser;
    use datafusion::sql::sqlparser::dialect::DuckDbDialect;

    use super::*;
    use crate::json::enum_type::enum_labels;

    fn parsed(script: &str) -> Vec<Statement> {
        let prepared = prepare(script, &DuckDbDialect {});
        DFParser::parse_sql_with_dialect(&prepared, &DuckDbDialect {})
            .unwrap_or_else(|e| panic!("{prepared}: {e}"))
            .into()
    }

    /// Labels with quotes, spaces, case and non-ASCII, in growing lists.
    fn generated_labels(count: usize) -> Vec<String> {
        let parts = ["a", "it's", "B c", "é", "x''y", ""];
        (0..count)
            .map(|i| format!("{}{i}", parts[i % parts.len()]))
            .collect()
    }

    fn create(types: &UserTypes, name: &str, labels: &[String], replace: bool) -> Result<()> {
        let quoted: Vec<String> = labels
            .iter()
            .map(|l| format!("'{}'", l.replace('\'', "''")))
            .collect();
        let or_replace = if replace { "OR REPLACE " } else { "" };
        let script = format!(
            "CREATE {or_replace}TYPE {name} AS ENUM ({})",
            quoted.join(", ")
        );
        for statement in parsed(&script) {
            types.execute(&statement).expect("a type statement")?;
        }
        Ok(())
    }

    fn planned_labels(types: &UserTypes, name: &str) -> Option<Vec<String>> {
        let sql_type =
            ast::DataType::Custom(ast::ObjectName::from(vec![ast::Ident::new(name)]), vec![]);
        let field = types.field(&sql_type).unwrap()?;
        enum_labels(&field)
    }

    #[test]
    fn created_types_plan_with_their_labels_and_or_replace_replaces() {
        let types = UserTypes::default();
        for count in 1..12 {
            let labels = generated_labels(count);
            let name = format!("Mood{count}");
            create(&types, &name, &labels, false).unwrap();
            assert_eq!(
                planned_labels(&types, &name.to_lowercase()),
                Some(labels.clone())
            );
            assert!(
                create(&types, &name, &labels, false).is_err(),
                "{name} twice"
            );
            let replaced = generated_labels(count + 1);
            create(&types, &name, &replaced, true).unwrap();
            assert_eq!(planned_labels(&types, &name), Some(replaced));
        }
    }

    #[test]
    fn drop_removes_and_if_exists_forgives_a_missing_type() {
        let types = UserTypes::default();
        create(&types, "mood", &generated_labels(3), false).unwrap();
        let drop = |sql: &str| types.execute(&parsed(sql)[0]).expect("a drop");
        assert!(drop("DROP TYPE nothere").is_err());
        drop("DROP TYPE IF EXISTS nothere").unwrap();
        drop("DROP TYPE MOOD").unwrap();
        assert_eq!(planned_labels(&types, "mood"), None);
        assert!(drop("DROP TYPE mood").is_err());
    }

    #[test]
    fn bad_definitions_are_refused() {
        let types = UserTypes::default();
        let twice = ["a".to_string(), "a".to_string()];
        assert!(create(&types, "twice", &twice, false).is_err());
        assert!(create(&types, "uinteger", &generated_labels(1), false).is_err());
        assert_eq!(planned_labels(&types, "twice"), None);
    }

    #[test]
    fn or_replace_is_rewritten_only_where_a_statement_starts() {
        let untouched = [
            "SELECT 'CREATE OR REPLACE TYPE x AS ENUM (''a'')'",
            "SELECT 1 -- CREATE OR REPLACE TYPE x\n",
            "CREATE OR REPLACE TABLE t AS SELECT 1",
        ];
        for script in untouched {
            assert_eq!(prepare(script, &DuckDbDialect {}), script);
        }
        let script = "SELECT 1;\n  create or replace\n TYPE \"é x\" AS ENUM ('a'); SELECT 2";
        let statements = parsed(script);
        assert_eq!(statements.len(), 4, "{statements:?}");
        assert!(
            statements[1]
                .to_string()
                .starts_with("DROP TYPE IF EXISTS \"é x\"")
        );
        assert!(
            statements[2]
                .to_string()
                .starts_with("CREATE TYPE \"é x\" AS ENUM")
        );
    }

    #[test]
    fn structures_name_created_types_by_their_definitions() {
        let types = UserTypes::default();
        create(&types, "mood", &generated_labels(2), false).unwrap();
        let resolved = types
            .resolved_structure(r#"{"a": "MOOD", "b": ["mood[2]"], "c": "INTEGER"}"#)
            .unwrap();
        assert_eq!(
            resolved,
            r#"{"a":"ENUM('a0', 'it''s1')","b":["ENUM('a0', 'it''s1')[2]"],"c":"INTEGER"}"#
        );
        assert_eq!(types.resolved_structure(r#"{"a": "INTEGER"}"#), None);
    }
}
