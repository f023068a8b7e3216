//! Accepted connections: TLS when configured, each tagged with an id so that the
//! sessions a connection logged in are closed when it goes away (a killed client must
//! not hold its session slot until the idle timeout).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::server::Connected;

use super::clients::{Clients, ConnectionId};
use crate::Shutdown;

/// How long a client may take to finish its TLS handshake.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections accepted but not yet taken up by the gRPC server.
const PENDING_CONNECTIONS_MAX: usize = 64;

/// The byte stream of one connection, plain or TLS.
trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// A connection that closes its sessions when the server drops it.
pub(super) struct Tracked {
    io: Box<dyn Io>,
    id: ConnectionId,
    clients: Arc<Clients>,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.clients.connection_closed(self.id);
    }
}

impl Connected for Tracked {
    type ConnectInfo = ConnectionId;

    fn connect_info(&self) -> ConnectionId {
        self.id
    }
}

impl AsyncRead for Tracked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// The connections `listener` accepts until shutdown begins, TLS-terminated by `tls`
/// when given. Handshakes run in their own tasks so that a slow client cannot hold up
/// the others.
pub(super) fn incoming(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    clients: Arc<Clients>,
    mut shutdown: Shutdown,
) -> ReceiverStream<io::Result<Tracked>> {
    let (sender, receiver) = mpsc::channel(PENDING_CONNECTIONS_MAX);
    let next_id = Arc::new(AtomicU64::new(0));
    tokio::spawn(async move {
        loop {
            let stream = tokio::select! {
                () = shutdown.started() => return,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    // A failed accept (the peer reset, too many open files) affects only
                    // that connection.
                    Err(_) => continue,
                },
            };
            let id = ConnectionId(next_id.fetch_add(1, Ordering::Relaxed));
            let sender = sender.clone();
            let tls = tls.clone();
            let clients = Arc::clone(&clients);
            tokio::spawn(async move {
                if let Some(io) = establish(stream, tls).await {
                    let tracked = Tracked { io, id, clients };
                    // The server stopped taking connections: this one is dropped.
                    let _ = sender.send(Ok(tracked)).await;
                }
            });
        }
    });
    ReceiverStream::new(receiver)
}

/// The connection's byte stream, after the TLS handshake when serving TLS; `None` when
/// the handshake fails or times out (the client sees the connection close).
async fn establish(stream: TcpStream, tls: Option<TlsAcceptor>) -> Option<Box<dyn Io>> {
    // gRPC sends many small frames; Nagle's algorithm would delay them.
    let _ = stream.set_nodelay(true);
    let Some(acceptor) = tls else {
        return Some(Box::new(stream));
    };
    match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
        Ok(Ok(tls_stream)) => Some(Box::new(tls_stream)),
        Ok(Err(_)) | Err(_) => None,
    }
}
