//! A loopback TCP proxy the controller puts in front of one link of a local
//! cluster (a node to another node, or a node to trust-control), so that a
//! scenario's partition and delay faults are real: a cut proxy drops every
//! open connection and refuses new ones, a delayed proxy holds every chunk
//! for the delay before passing it on, and a healed proxy carries again.
//!
//! The proxy's address is bound when the cluster starts (the node processes
//! are given it before any runtime exists); its accept loop runs on the
//! run's runtime from [`LinkProxy::serve`] on. Connections that arrive
//! before then wait in the listen backlog.

use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;

use chio_node::NodeError;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// What a link does with what crosses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkMode {
    /// Carries, on time.
    Open,
    /// Refuses everything: open connections are dropped, new ones closed.
    Cut,
    /// Carries each chunk after the delay.
    Delayed(Duration),
}

/// One proxied link.
#[derive(Debug)]
pub struct LinkProxy {
    addr: SocketAddr,
    upstream: String,
    listener: Mutex<Option<std::net::TcpListener>>,
    mode: watch::Sender<LinkMode>,
}

fn proxy_error(cause: String) -> NodeError {
    NodeError::Config {
        problem: format!("cannot set up a link proxy: {cause}"),
        fix: "check that loopback TCP ports can be bound",
    }
}

impl LinkProxy {
    /// Binds a loopback port for a link to `upstream` (`HOST:PORT`).
    pub fn bind(upstream: &str) -> Result<Self, NodeError> {
        let listener =
            std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| proxy_error(e.to_string()))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| proxy_error(e.to_string()))?;
        let addr = listener
            .local_addr()
            .map_err(|e| proxy_error(e.to_string()))?;
        let (mode, _) = watch::channel(LinkMode::Open);
        Ok(Self {
            addr,
            upstream: upstream.to_string(),
            listener: Mutex::new(Some(listener)),
            mode,
        })
    }

    /// The proxy's `http://` URL, which the link's near end is given.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Switches the link's mode; open connections follow at once.
    pub fn set(&self, mode: LinkMode) {
        self.mode.send_replace(mode);
    }

    /// The proxy's address and its upstream, to probe without holding it.
    pub fn probe(&self) -> (SocketAddr, String) {
        (self.addr, self.upstream.clone())
    }

    /// Starts the accept loop on the current runtime (once).
    pub fn serve(&self) -> Result<(), NodeError> {
        let taken = self
            .listener
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let Some(listener) = taken else {
            return Ok(());
        };
        let listener = TcpListener::from_std(listener).map_err(|e| proxy_error(e.to_string()))?;
        let upstream = self.upstream.clone();
        let mode = self.mode.subscribe();
        tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                if *mode.borrow() == LinkMode::Cut {
                    drop(inbound);
                    continue;
                }
                let upstream = upstream.clone();
                let mode = mode.clone();
                tokio::spawn(async move {
                    if let Ok(outbound) = TcpStream::connect(&upstream).await {
                        carry(inbound, outbound, mode).await;
                    }
                });
            }
        });
        Ok(())
    }
}

/// Carries one connection both ways until either side closes or the link
/// is cut.
async fn carry(inbound: TcpStream, outbound: TcpStream, mode: watch::Receiver<LinkMode>) {
    let _ = inbound.set_nodelay(true);
    let _ = outbound.set_nodelay(true);
    let (in_read, in_write) = inbound.into_split();
    let (out_read, out_write) = outbound.into_split();
    let mut cut = mode.clone();
    let cut_off = async move {
        while cut.changed().await.is_ok() {
            if *cut.borrow() == LinkMode::Cut {
                return;
            }
        }
        std::future::pending::<()>().await;
    };
    tokio::select! {
        () = pipe(in_read, out_write, mode.clone()) => {}
        () = pipe(out_read, in_write, mode) => {}
        () = cut_off => {}
    }
}

/// Copies one direction, holding each chunk for the link's delay.
async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mode: watch::Receiver<LinkMode>,
) {
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let read = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let now = *mode.borrow();
        match now {
            LinkMode::Cut => return,
            LinkMode::Delayed(delay) => tokio::time::sleep(delay).await,
            LinkMode::Open => {}
        }
        if to.write_all(&buffer[..read]).await.is_err() {
            return;
        }
    }
}

/// Checks that the cut proxy at `addr` (in front of `upstream`) refuses: a
/// connection to it is closed at once, where an open link would keep it
/// (the far end waits for the client to speak first).
pub async fn check_cut(addr: SocketAddr, upstream: &str) -> Result<(), NodeError> {
    let refused = match TcpStream::connect(addr).await {
        Err(_) => true,
        Ok(mut stream) => {
            let mut byte = [0u8; 1];
            let read =
                tokio::time::timeout(Duration::from_millis(500), stream.read(&mut byte)).await;
            matches!(read, Ok(Ok(0)) | Ok(Err(_)))
        }
    };
    if refused {
        Ok(())
    } else {
        Err(NodeError::Remote {
            target: format!("link proxy to {upstream}"),
            cause: "still carries after it was cut".to_string(),
        })
    }
}
