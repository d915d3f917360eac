//! The outage tests' TCP target (docs/testing.md, "Fault tests"): it
//! refuses connections while the control plane is away, and only then.

use std::net::SocketAddr;

use anyhow::{Context as _, Result};

/// A TCP port on the cluster's bridge address that accepts connections
/// until [`TcpTarget::stop`] and refuses them until [`TcpTarget::start`].
pub struct TcpTarget {
    /// Where it listens.
    pub addr: SocketAddr,
    accepting: Option<tokio::task::JoinHandle<()>>,
}

impl TcpTarget {
    /// Listens on the address the API server listens on, on a free port:
    /// every pod of a simulated or a real node reaches it
    /// (docs/testing.md, "Network plan").
    pub async fn bind() -> Result<Self> {
        let kubeconfig = std::fs::read_to_string(crate::kubeconfig())?;
        let host = kubeconfig
            .lines()
            .find_map(|l| l.trim().strip_prefix("server: https://"))
            .and_then(|s| s.rsplit_once(':'))
            .map(|(h, _)| h.to_string())
            .context("server in kubeconfig")?;
        let listener = tokio::net::TcpListener::bind((host.as_str(), 0)).await?;
        let addr = listener.local_addr()?;
        Ok(TcpTarget {
            addr,
            accepting: Some(Self::accept(listener)),
        })
    }

    fn accept(listener: tokio::net::TcpListener) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                drop(conn);
            }
        })
    }

    /// Closes the listener: connections are refused from now on.
    pub async fn stop(&mut self) {
        if let Some(task) = self.accepting.take() {
            task.abort();
            let _ = task.await;
        }
    }

    /// Listens again on the same address.
    pub async fn start(&mut self) -> Result<()> {
        if self.accepting.is_none() {
            let listener = tokio::net::TcpListener::bind(self.addr).await?;
            self.accepting = Some(Self::accept(listener));
        }
        Ok(())
    }
}

impl Drop for TcpTarget {
    fn drop(&mut self) {
        if let Some(task) = self.accepting.take() {
            task.abort();
        }
    }
}
