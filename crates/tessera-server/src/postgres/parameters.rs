//! The server parameters a client is told at startup and can ask for with `SHOW`
//! (kept apart from `auth`, which implements the startup of a `Connection`, so that the
//! statement handling below the connection can read them).

use std::collections::HashMap;

use pgwire::api::ClientInfo;
use pgwire::api::auth::{DefaultServerParameterProvider, ServerParameterProvider};

/// The PostgreSQL version clients are told (psql picks its catalog queries by it).
const SERVER_VERSION: &str = "16.6";
/// The same as one number.
const SERVER_VERSION_NUM: &str = "160006";

/// The parameters a client was told at startup, and those drivers ask for with `SHOW`
/// (`transaction isolation level`, `max_identifier_length`, …).
pub(super) fn client_parameters<C: ClientInfo>(client: &C) -> HashMap<String, String> {
    let mut parameters = ServerParameters
        .server_parameters(client)
        .unwrap_or_default();
    for (name, value) in [
        ("transaction isolation level", "read committed"),
        ("transaction_isolation", "read committed"),
        ("max_identifier_length", "63"),
        ("server_version_num", SERVER_VERSION_NUM),
    ] {
        parameters.insert(name.to_string(), value.to_string());
    }
    parameters
}

/// pgwire's defaults, with the PostgreSQL version psql should assume.
pub(super) struct ServerParameters;

impl ServerParameterProvider for ServerParameters {
    fn server_parameters<C>(&self, client: &C) -> Option<HashMap<String, String>>
    where
        C: ClientInfo,
    {
        let mut defaults = DefaultServerParameterProvider::default();
        defaults.server_version = SERVER_VERSION.to_string();
        defaults.server_parameters(client)
    }
}
