//! Authentication: SCRAM-SHA-256 against the server's one user and password; once the
//! client proved it knows them, its session is opened (or refused when every slot is
//! taken) and its backend key registered for cancel requests.

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::{Sink, SinkExt};
use pgwire::api::auth::sasl::scram::{
    SCRAM_ITERATIONS, ScramAuth, gen_salted_password, random_nonce,
};
use pgwire::api::auth::sasl::{SASLState, SCRAM_SHA_256_METHOD};
use pgwire::api::auth::{
    AuthSource, LoginInfo, Password, StartupHandler, finish_authentication, protocol_negotiation,
    save_startup_parameters_to_metadata,
};
use pgwire::api::{ClientInfo, METADATA_USER, PgWireConnectionState};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::startup::{Authentication, PasswordMessageFamily};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};

use super::catalog;
use super::connection::Connection;
use super::parameters::ServerParameters;
use crate::{Credentials, ServerError};

/// SCRAM-SHA-256 against `credentials`.
pub(super) fn scram(credentials: &Credentials) -> ScramAuth {
    let mut scram = ScramAuth::new(Arc::new(Secret {
        credentials: credentials.clone(),
    }));
    scram.set_iterations(SCRAM_ITERATIONS);
    scram
}

/// The expected password of a login, salted for SCRAM.
#[derive(Debug)]
struct Secret {
    credentials: Credentials,
}

#[async_trait]
impl AuthSource for Secret {
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        let salt = random_nonce().into_bytes();
        // An unknown user gets a password nobody knows, so the exchange fails exactly
        // as with a wrong password: the answer does not tell which user names exist.
        let password = match login.user() == Some(self.credentials.user.as_str()) {
            true => self.credentials.password.clone(),
            false => random_nonce(),
        };
        let salted = gen_salted_password(&password, &salt, SCRAM_ITERATIONS);
        Ok(Password::new(Some(salt), salted))
    }
}

#[async_trait]
impl StartupHandler for Connection {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match message {
            PgWireFrontendMessage::Startup(startup) => {
                protocol_negotiation(client, &startup).await?;
                save_startup_parameters_to_metadata(client, &startup);
                client.set_state(PgWireConnectionState::AuthenticationInProgress);
                let mechanisms = vec![SCRAM_SHA_256_METHOD.to_string()];
                client
                    .send(PgWireBackendMessage::Authentication(Authentication::SASL(
                        mechanisms,
                    )))
                    .await?;
            }
            PgWireFrontendMessage::PasswordMessageFamily(message) => {
                self.on_sasl_message(client, message).await?;
            }
            _ => {}
        }
        Ok(())
    }
}

impl Connection {
    /// One step of the SCRAM exchange; the last one opens the session.
    async fn on_sasl_message<C>(
        &self,
        client: &mut C,
        message: PasswordMessageFamily,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let mut state = self.sasl.lock().await;
        let message = match *state {
            SASLState::Initial => {
                let first = message.into_sasl_initial_response()?;
                if first.auth_method != SCRAM_SHA_256_METHOD {
                    return Err(PgWireError::UnsupportedSASLAuthMethod(first.auth_method));
                }
                *state = SASLState::ScramClientFirstReceived;
                PasswordMessageFamily::SASLInitialResponse(first)
            }
            _ => PasswordMessageFamily::SASLResponse(message.into_sasl_response()?),
        };
        let (response, next) = self
            .server
            .scram
            .process_scram_message(client, message, &state)
            .await
            .map_err(|e| match e {
                // SCRAM clients leave the user name out of the exchange; say which one
                // the startup message named.
                PgWireError::InvalidPassword(_) => PgWireError::InvalidPassword(
                    client
                        .metadata()
                        .get(METADATA_USER)
                        .cloned()
                        .unwrap_or_default(),
                ),
                e => e,
            })?;
        client
            .send(PgWireBackendMessage::Authentication(response))
            .await?;
        *state = next;
        if matches!(*state, SASLState::Finished) {
            self.begin_session(client).await?;
        }
        Ok(())
    }

    /// Opens the client's session, registers its backend key and tells the client it
    /// may send queries.
    async fn begin_session<C>(&self, client: &mut C) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let open = self.server.shared.sessions.open().map_err(refused)?;
        catalog::install(&open.session).map_err(|e| refused(ServerError::Session(e)))?;
        if self.parser.set_session(open).is_err() {
            return Err(PgWireError::InvalidSASLState);
        }
        let (pid, secret) = self.server.keys().generate(client);
        client.set_pid_and_secret_key(pid, secret.clone());
        let guard = self
            .server
            .cancels
            .register(pid, secret, Arc::clone(&self.cancel));
        // A connection authenticates once; the state machine makes a second time fail above.
        let _ = self.cancel_guard.set(guard);
        finish_authentication(client, &ServerParameters).await
    }
}

/// A session that cannot be opened ends the connection with the reason.
fn refused(error: ServerError) -> PgWireError {
    let code = match error {
        ServerError::TooManySessions { .. } => "53300",
        _ => "58000",
    };
    PgWireError::UserError(Box::new(ErrorInfo::new(
        "FATAL".to_string(),
        code.to_string(),
        error.to_string(),
    )))
}
