//! A loopback TCP proxy the controller puts in front of one link of a local
//! cluster (a node to another node, or a node to trust-control), so that a
//! scenario's partition, delay and stall faults are real: a cut proxy drops
//! every open connection and refuses new ones, a delayed proxy holds every
//! chunk for the delay before passing it on, a black hole (a stall) keeps
//! every connection and throws away what is sent over it, dropping those
//! connections when it ends, and a healed proxy carries again.
//!
//! The proxy's address is bound when the cluster starts (the node processes
//! are given it before any runtime exists); its accept loop runs on the
//! run's runtime from [`LinkProxy::serve`] on. Connections that arrive
//! before then wait in the listen backlog.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
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
    /// Answers nothing and delivers nothing: open connections and new ones
    /// are kept, and every chunk sent over them is thrown away, so a call
    /// waits for its deadline and nothing it sent ever arrives. A
    /// connection that lost a chunk, or was opened meanwhile, is dropped
    /// when the mode changes, since what it carried is broken.
    BlackHole,
}

/// One proxied link.
#[derive(Debug)]
pub struct LinkProxy {
    addr: SocketAddr,
    upstream: String,
    listener: Mutex<Option<std::net::TcpListener>>,
    mode: watch::Sender<LinkMode>,
    /// Connections a black hole swallowed from that are still open.
    swallowed: Arc<AtomicUsize>,
}

/// Waits for the connections a black hole swallowed from to close.
#[derive(Debug, Clone)]
pub struct Drain {
    swallowed: Arc<AtomicUsize>,
}

impl Drain {
    /// Waits (at most `bound`) until no connection a black hole swallowed
    /// from is open any more; whether none is.
    pub async fn drained(&self, bound: Duration) -> bool {
        let waited = tokio::time::timeout(bound, async {
            while self.swallowed.load(Ordering::SeqCst) > 0 {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        });
        waited.await.is_ok()
    }
}

/// Counts one swallowed-from connection while it lives.
struct Swallowed(Arc<AtomicUsize>);

impl Swallowed {
    fn new(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Self(count.clone())
    }
}

impl Drop for Swallowed {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
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
            swallowed: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// The link's mode now.
    pub fn mode(&self) -> LinkMode {
        *self.mode.borrow()
    }

    /// A handle that waits for the connections a black hole swallowed
    /// from to close, without holding the proxy.
    pub fn drain_handle(&self) -> Drain {
        Drain {
            swallowed: self.swallowed.clone(),
        }
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
        let swallowed = self.swallowed.clone();
        tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let now = *mode.borrow();
                match now {
                    LinkMode::Cut => drop(inbound),
                    LinkMode::BlackHole => {
                        let held = Swallowed::new(&swallowed);
                        tokio::spawn(swallow(inbound, mode.clone(), held));
                    }
                    LinkMode::Open | LinkMode::Delayed(_) => {
                        let upstream = upstream.clone();
                        let mode = mode.clone();
                        let swallowed = swallowed.clone();
                        tokio::spawn(async move {
                            if let Ok(outbound) = TcpStream::connect(&upstream).await {
                                carry(inbound, outbound, mode, swallowed).await;
                            }
                        });
                    }
                }
            }
        });
        Ok(())
    }
}

/// Holds a connection opened into a black hole, throwing away what it
/// sends, until the mode changes; then drops it.
async fn swallow(mut inbound: TcpStream, mut mode: watch::Receiver<LinkMode>, held: Swallowed) {
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        tokio::select! {
            read = inbound.read(&mut buffer) => {
                if matches!(read, Ok(0) | Err(_)) {
                    break;
                }
            }
            changed = mode.changed() => {
                if changed.is_err() || *mode.borrow() != LinkMode::BlackHole {
                    break;
                }
            }
        }
    }
    drop(held);
}

/// Carries one connection both ways until either side closes, the link is
/// cut, or a black hole that swallowed from it ends.
async fn carry(
    inbound: TcpStream,
    outbound: TcpStream,
    mode: watch::Receiver<LinkMode>,
    swallowed: Arc<AtomicUsize>,
) {
    let _ = inbound.set_nodelay(true);
    let _ = outbound.set_nodelay(true);
    let (in_read, in_write) = inbound.into_split();
    let (out_read, out_write) = outbound.into_split();
    // Set once a chunk of this connection was thrown away; it lives as
    // long as the connection does.
    let broken: Mutex<Option<Swallowed>> = Mutex::new(None);
    let mut watch = mode.clone();
    let cut_off = async {
        while watch.changed().await.is_ok() {
            let now = *watch.borrow();
            let is_broken = broken.lock().map(|b| b.is_some()).unwrap_or(true);
            if now == LinkMode::Cut || (now != LinkMode::BlackHole && is_broken) {
                return;
            }
        }
        std::future::pending::<()>().await;
    };
    let breaks = Breaks {
        broken: &broken,
        swallowed: &swallowed,
    };
    tokio::select! {
        () = pipe(in_read, out_write, mode.clone(), &breaks) => {}
        () = pipe(out_read, in_write, mode, &breaks) => {}
        () = cut_off => {}
    }
}

/// Where a pipe marks its connection broken by a black hole.
struct Breaks<'c> {
    broken: &'c Mutex<Option<Swallowed>>,
    swallowed: &'c Arc<AtomicUsize>,
}

impl Breaks<'_> {
    fn mark(&self) {
        if let Ok(mut broken) = self.broken.lock() {
            if broken.is_none() {
                *broken = Some(Swallowed::new(self.swallowed));
            }
        }
    }
}

/// Copies one direction, holding each chunk for the link's delay and
/// throwing it away in a black hole.
async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mode: watch::Receiver<LinkMode>,
    breaks: &Breaks<'_>,
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
            LinkMode::BlackHole => {
                breaks.mark();
                continue;
            }
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
