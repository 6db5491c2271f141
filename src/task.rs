//! A spawned task that dies with its owner: [`AbortOnDrop`] aborts the task
//! when the handle is dropped, so a cancelled chain (total timeout, a caller
//! dropping the future) never leaves a tool or an approval running with no
//! deadline behind it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::task::{JoinError, JoinHandle};

/// A [`JoinHandle`] that aborts its task when dropped.
#[derive(Debug)]
pub struct AbortOnDrop<T>(JoinHandle<T>);

impl<T: Send + 'static> AbortOnDrop<T> {
    /// Spawns `future` on the current tokio runtime.
    pub fn spawn(future: impl Future<Output = T> + Send + 'static) -> Self {
        AbortOnDrop(tokio::spawn(future))
    }
}

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl<T> Future for AbortOnDrop<T> {
    type Output = Result<T, JoinError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx)
    }
}
