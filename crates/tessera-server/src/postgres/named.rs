//! The named prepared statements and portals a connection holds, bounded in number
//! (pgwire keeps them until the client closes them).

use std::collections::HashSet;

use pgwire::error::PgWireResult;
use pgwire::messages::PgWireFrontendMessage;
use pgwire::messages::extendedquery::TARGET_TYPE_BYTE_STATEMENT;

use super::statement::user_error;

/// Named prepared statements, and named portals, one connection may hold at once.
const NAMED_MAX: usize = 1000;

/// The names a connection's client gave to statements and portals.
#[derive(Default)]
pub(super) struct Named {
    statements: HashSet<String>,
    portals: HashSet<String>,
}

impl Named {
    /// Records what `message` creates or closes; an error when it would create more
    /// than the connection may hold.
    pub(super) fn admit(&mut self, message: &PgWireFrontendMessage) -> PgWireResult<()> {
        let (names, name, kind) = match message {
            PgWireFrontendMessage::Parse(parse) => {
                (&mut self.statements, &parse.name, "prepared statements")
            }
            PgWireFrontendMessage::Bind(bind) => (&mut self.portals, &bind.portal_name, "portals"),
            PgWireFrontendMessage::Close(close) => {
                if let Some(name) = &close.name {
                    match close.target_type == TARGET_TYPE_BYTE_STATEMENT {
                        true => self.statements.remove(name),
                        false => self.portals.remove(name),
                    };
                }
                return Ok(());
            }
            _ => return Ok(()),
        };
        // The unnamed statement and portal replace themselves.
        let Some(name) = name.as_ref().filter(|name| !name.is_empty()) else {
            return Ok(());
        };
        if names.len() >= NAMED_MAX && !names.contains(name) {
            return Err(user_error(
                "53400",
                &format!("a connection holds at most {NAMED_MAX} named {kind}; close some first"),
            ));
        }
        names.insert(name.clone());
        Ok(())
    }

    /// Forgets the prepared statement `name` (`DEALLOCATE`); every one when `None`.
    /// Returns the names forgotten.
    pub(super) fn deallocate(&mut self, name: Option<&str>) -> Vec<String> {
        match name {
            Some(name) => self.statements.take(name).into_iter().collect(),
            None => self.statements.drain().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use pgwire::messages::extendedquery::{Close, Parse};

    use super::*;

    fn parse(name: &str) -> PgWireFrontendMessage {
        PgWireFrontendMessage::Parse(Parse::new(
            Some(name.to_string()),
            "SELECT 1".into(),
            vec![],
        ))
    }

    #[test]
    fn named_statements_are_bounded_until_closed() {
        let mut named = Named::default();
        for i in 0..NAMED_MAX {
            named
                .admit(&parse(&format!("s{i}")))
                .expect("under the limit");
        }
        assert!(named.admit(&parse("one_more")).is_err());
        // Replacing a statement of the same name does not add one.
        named.admit(&parse("s0")).expect("same name");
        let close = Close::new(TARGET_TYPE_BYTE_STATEMENT, Some("s1".to_string()));
        named
            .admit(&PgWireFrontendMessage::Close(close))
            .expect("close");
        named.admit(&parse("one_more")).expect("room again");
        assert_eq!(named.deallocate(Some("s2")), vec!["s2".to_string()]);
        assert_eq!(named.deallocate(None).len(), NAMED_MAX - 1);
    }
}
