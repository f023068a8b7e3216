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
